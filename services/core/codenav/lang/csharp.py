"""C#: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import Imports, Language
from codenav.lang.spec import LangSpec, first_of
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t

REFERENCES = r"""
(invocation_expression function: (identifier) @call) @call.expr
(invocation_expression function: (generic_name (identifier) @call)) @call.expr
(invocation_expression function: (member_access_expression name: (identifier) @call) @call.expr)
(invocation_expression function: (member_access_expression name: (generic_name (identifier) @call)) @call.expr)
(object_creation_expression type: (identifier) @new)
(object_creation_expression type: (generic_name (identifier) @new))
(object_creation_expression type: (qualified_name name: (identifier) @new) @new.expr)
(base_list (identifier) @extends)
(base_list (generic_name (identifier) @extends))
(base_list (qualified_name name: (identifier) @extends) @extends.expr)
(_ type: (identifier) @type)
(_ returns: (identifier) @type)
(_ type: (generic_name (identifier) @type))
(_ returns: (generic_name (identifier) @type))
(type_argument_list (identifier) @type)
(type_argument_list (generic_name (identifier) @type))
(_ type: (qualified_name name: (identifier) @type) @type.expr)
(_ type: (nullable_type type: (identifier) @type))
(_ type: (array_type type: (identifier) @type))
(type_parameter name: (identifier) @tparam)
(variable_declaration type: (_) @var.type (variable_declarator name: (identifier) @var.name))
(variable_declaration type: (implicit_type) (variable_declarator name: (identifier) @var.name
  (object_creation_expression type: (_) @var.type)))
(parameter type: (_) @var.type name: (identifier) @var.name)
(property_declaration type: (_) @field.type name: (identifier) @field.name)
(variable_declaration type: (implicit_type) (variable_declarator name: (identifier) @var.name
  (invocation_expression function: (_) @var.call)))
(method_declaration returns: (_) @ret.type name: (identifier) @ret.name)
"""


def _bases(node: Node) -> list[str]:
    bl = first_of(node, ("base_list",))
    return [_text(c) for c in bl.named_children] if bl is not None else []


def _exported(node: Node, name: str) -> bool | None:
    if node.type in ("namespace_declaration", "file_scoped_namespace_declaration"):
        return True
    return None


SPEC = LangSpec(
    grammar="csharp",
    defs={"class_declaration": "class", "interface_declaration": "interface",
          "struct_declaration": "class", "record_declaration": "class",
          "record_struct_declaration": "class", "enum_declaration": "enum",
          "method_declaration": "method", "constructor_declaration": "constructor",
          "property_declaration": "property", "delegate_declaration": "type",
          "destructor_declaration": "method", "operator_declaration": "method"},
    scopes={"namespace_declaration": "module"},
    bodies=frozenset({"declaration_list"}),
    imports=frozenset({"using_directive"}),
    public_keywords=frozenset({"public", "protected"}),
    file_scopes=frozenset({"file_scoped_namespace_declaration"}),
    bases=_bases,
    exported=_exported,
)


def _import_specs(node: Node) -> list[str]:
    text = _text(node).strip().removeprefix("global").strip().removeprefix("using").strip()
    text = text.removesuffix(";").strip().removeprefix("static ").strip()
    if "=" in text:
        text = text.split("=", 1)[1].strip()
    return [text] if text else []


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "p":
        return [("package", _t(src, node).replace(" ", ""), "", "")]
    alias_node = node.child_by_field_name("name")
    names = [c for c in node.named_children if c.type in ("qualified_name", "identifier",
                                                            "generic_name")
             and (alias_node is None or c.start_byte != alias_node.start_byte)]
    if not names:
        return []
    path = _t(src, names[-1]).replace(" ", "").removeprefix("global::")
    if alias_node is not None:
        return [("import", path.rsplit(".", 1)[-1], path, _t(src, alias_node))]
    return [("import", "*", path, "")]


IMPORTS = Imports(
    nodes=frozenset({"using_directive"}),
    specs=_import_specs,
    query="""(using_directive) @i (namespace_declaration name: (_) @p)
    (file_scoped_namespace_declaration name: (_) @p)""",
    bindings=_import_bindings,
)


LANGUAGE = Language("csharp", (".cs",), SPEC, REFERENCES, family="csharp", imports=IMPORTS,
                    implicit_this=True)
