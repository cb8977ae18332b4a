"""Go: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import TEST, Convention, Imports, Language
from codenav.lang.spec import LangSpec, field_of, first_of
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t
from codenav.lang.syntax import unquote as _unquote

REFERENCES = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (selector_expression field: (field_identifier) @call) @call.expr)
(composite_literal type: (type_identifier) @new)
(composite_literal type: (qualified_type name: (type_identifier) @new) @new.expr)
(field_declaration !name type: (type_identifier) @extends)
(field_declaration !name type: (pointer_type (type_identifier) @extends))
(field_declaration !name type: (qualified_type name: (type_identifier) @extends) @extends.expr)
(interface_type (type_elem (type_identifier) @extends))
(type_identifier) @type
(qualified_type name: (type_identifier) @type) @type.expr
(type_parameter_declaration name: (identifier) @tparam)
(parameter_declaration name: (identifier) @var.name type: (_) @var.type)
(var_spec name: (identifier) @var.name type: (_) @var.type)
(field_declaration name: (field_identifier) @var.name type: (_) @var.type)
(short_var_declaration left: (expression_list . (identifier) @var.name)
  right: (expression_list . (composite_literal type: (_) @var.type)))
(short_var_declaration left: (expression_list . (identifier) @var.name)
  right: (expression_list . (unary_expression operand: (composite_literal type: (_) @var.type))))
(short_var_declaration left: (expression_list . (identifier) @var.name)
  right: (expression_list . (call_expression function: (_) @var.call)))
(function_declaration name: (identifier) @ret.name result: (_) @ret.type)
(method_declaration name: (field_identifier) @ret.name result: (_) @ret.type)
"""


def _go_receiver_type(node: Node) -> str | None:
    """``Cache`` from ``func (c *Cache[K, V]) Get()``."""
    receiver = field_of(node, "receiver")
    param = first_of(receiver, ("parameter_declaration",)) if receiver is not None else None
    current = field_of(param, "type") if param is not None else None
    for _ in range(4):
        if current is None:
            return None
        if current.type == "type_identifier":
            return _text(current)
        if current.type == "pointer_type":
            current = current.named_children[0] if current.named_children else None
        else:
            current = field_of(current, "type")
    return None


def _name(node: Node) -> tuple[str, str | None] | None:
    if node.type == "method_declaration":
        return _text(field_of(node, "name")), _go_receiver_type(node)
    return None


def _kind(node: Node, kind: str) -> str:
    if node.type == "type_spec":
        typ = field_of(node, "type")
        if typ is not None and typ.type == "interface_type":
            return "interface"
        if typ is not None and typ.type == "struct_type":
            return "class"
    return kind


def _exported(node: Node, name: str) -> bool:
    return name[:1].isupper()


SPEC = LangSpec(
    grammar="go",
    defs={"function_declaration": "function", "method_declaration": "method",
          "type_spec": "type", "type_alias": "type", "method_elem": "method"},
    scopes={"type_declaration": ""},
    bodies=frozenset({"interface_type"}),
    imports=frozenset({"import_declaration"}),
    name=_name,
    kind=_kind,
    exported=_exported,
    signature_prefix={"type_spec": "type", "type_alias": "type"},
    signature_whole=frozenset({"type_spec"}),
    members_export_alone=True,
)


def _import_specs(node: Node) -> list[str]:
    out = []
    for child in node.named_children:
        specs = child.named_children if child.type == "import_spec_list" else [child]
        for spec in specs:
            if spec.type == "import_spec":
                out.append(_text(spec.child_by_field_name("path")).strip('"`'))
    return out


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "p":
        names = [c for c in node.named_children if c.type == "package_identifier"]
        return [("package", _t(src, names[0]), "", "")] if names else []
    path = _unquote(_t(src, node.child_by_field_name("path")))
    alias = _t(src, node.child_by_field_name("name"))
    return [("import", "", path, alias)]


IMPORTS = Imports(
    nodes=frozenset({"import_declaration"}),
    specs=_import_specs,
    query="(import_spec) @i (package_clause) @p",
    bindings=_import_bindings,
)

CONVENTIONS = (Convention(TEST, ("go",), r"_test\.go$", "Go tests"),)


BUILTIN_TYPES = frozenset({
    "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
    "uintptr", "float32", "float64", "complex64", "complex128", "string", "bool", "byte",
    "rune", "error", "any", "comparable"
})

LANGUAGE = Language("go", (".go",), SPEC, REFERENCES, family="go", imports=IMPORTS,
                    builtin_types=BUILTIN_TYPES, conventions=CONVENTIONS)
