"""Python: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import DIR, GENERATED, TEST, Convention, Imports, Language
from codenav.lang.spec import LangSpec, field_of
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t

REFERENCES = r"""
(call function: (identifier) @call) @call.expr
(call function: (attribute attribute: (identifier) @call) @call.expr)
(class_definition superclasses: (argument_list (identifier) @extends))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @extends) @extends.expr))
(class_definition superclasses: (argument_list (subscript value: (identifier) @extends)))
(type (identifier) @type)
(type (attribute attribute: (identifier) @type) @type.expr)
(type (string (string_content) @type))
(type (generic_type (identifier) @type))
(type (generic_type (type_parameter (type (identifier) @type))))
(type (binary_operator (identifier) @type))
(typed_parameter (identifier) @var.name type: (type) @var.type)
(typed_default_parameter name: (identifier) @var.name type: (type) @var.type)
(assignment left: (identifier) @var.name type: (type) @var.type)
(assignment left: (identifier) @var.name right: (call function: (identifier) @var.call))
(assignment left: (identifier) @var.name right: (call function: (attribute) @var.call))
(function_definition name: (identifier) @ret.name return_type: (type) @ret.type)
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @field.name)
  type: (type) @field.type (#eq? @_self "self"))
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @field.name)
  right: (call function: (identifier) @field.call) (#eq? @_self "self"))
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @field.name)
  right: (call function: (attribute) @field.call) (#eq? @_self "self"))
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @field.name)
  right: (identifier) @field.from (#eq? @_self "self"))
"""


def _bases(node: Node) -> list[str]:
    supers = field_of(node, "superclasses")
    if supers is None:
        return []
    return [_text(c).split("[")[0] for c in supers.named_children
            if c.type in ("identifier", "attribute", "subscript")]


def _exported(node: Node, name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


SPEC = LangSpec(
    grammar="python",
    defs={"function_definition": "function", "class_definition": "class"},
    wrappers=frozenset({"decorated_definition"}),
    bodies=frozenset({"block"}),
    imports=frozenset({"import_statement", "import_from_statement",
                       "future_import_statement"}),
    python_docstrings=True,
    bases=_bases,
    exported=_exported,
)


def _import_specs(node: Node) -> list[str]:
    out: list[str] = []
    if node.type == "import_statement":
        for child in node.named_children:
            target = child.child_by_field_name("name") if child.type == "aliased_import" \
                else child
            if target is not None:
                out.append(_text(target))
    elif node.type in ("import_from_statement", "future_import_statement"):
        module = node.child_by_field_name("module_name")
        mod = _text(module) if module is not None else "__future__"
        out.append(mod)
        if mod.strip(".") == "" or node.type == "import_from_statement":
            for child in node.children_by_field_name("name"):
                target = child.child_by_field_name("name") if child.type == "aliased_import" \
                    else child
                name = _text(target)
                if name:
                    out.append(f"{mod}.{name}" if not mod.endswith(".") else f"{mod}{name}")
    return out


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    out: list[Binding] = []
    if node.type == "import_statement":
        for child in node.named_children:
            if child.type == "aliased_import":
                out.append(("import", "", _t(src, child.child_by_field_name("name")),
                            _t(src, child.child_by_field_name("alias"))))
            elif child.type == "dotted_name":
                out.append(("import", "", _t(src, child), ""))
        return out
    module = node.child_by_field_name("module_name")
    spec = _t(src, module).replace(" ", "")
    if any(c.type == "wildcard_import" for c in node.named_children):
        return [("import", "*", spec, "")]
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            out.append(("import", _t(src, child.child_by_field_name("name")), spec,
                        _t(src, child.child_by_field_name("alias"))))
        else:
            out.append(("import", _t(src, child), spec, ""))
    return out


IMPORTS = Imports(
    nodes=frozenset({"import_statement", "import_from_statement", "future_import_statement"}),
    specs=_import_specs,
    query="(import_statement) @i (import_from_statement) @i",
    bindings=_import_bindings, guarded=True,
)

CONVENTIONS = (
    Convention(TEST, ("python",), DIR + r"(testing|conftest\.py$)", "pytest helpers"),
    Convention(TEST, ("python",), DIR + r"tests\.py$", "Django-style tests.py"),
    Convention(GENERATED, ("python",), r"(^|/)migrations/\d{4}_[^/]*\.py$",
               "Django/Alembic migration files"),
)


BUILTIN_TYPES = frozenset({
    "int", "str", "float", "bool", "bytes", "list", "dict", "set", "tuple", "frozenset",
    "type", "object", "complex", "bytearray"
})

LANGUAGE = Language("python", (".py", ".pyi", ".pyw"), SPEC, REFERENCES, family="python",
                    imports=IMPORTS, not_calls=frozenset({"super"}), builtin_types=BUILTIN_TYPES,
                    conventions=CONVENTIONS)
