"""Kotlin: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import Imports, Language
from codenav.lang.java import CONVENTIONS
from codenav.lang.spec import LangSpec, first_of
from codenav.lang.syntax import Binding, dotted_binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t

REFERENCES = r"""
(call_expression . (simple_identifier) @call) @call.expr
(call_expression . (navigation_expression (navigation_suffix (simple_identifier) @call) .) @call.expr)
(callable_reference (simple_identifier) @call .) @call.expr
(delegation_specifier (constructor_invocation (user_type (type_identifier) @extends)))
(delegation_specifier (user_type (type_identifier) @implements))
(user_type (type_identifier) @type)
(type_parameter (type_identifier) @tparam)
(property_declaration (variable_declaration (simple_identifier) @var.name (user_type) @var.type))
(property_declaration (variable_declaration (simple_identifier) @var.name .) (call_expression . (simple_identifier) @var.call))
(property_declaration (variable_declaration (simple_identifier) @var.name .) (call_expression . (navigation_expression) @var.call))
(function_declaration (simple_identifier) @ret.name (function_value_parameters) . (user_type) @ret.type)
(parameter (simple_identifier) @var.name (user_type) @var.type)
(class_parameter (simple_identifier) @var.name (user_type) @var.type)
"""


def _bases(node: Node) -> list[str]:
    return [_text(d).split("(")[0].strip() for d in node.named_children
            if d.type == "delegation_specifier"]


def _name(node: Node) -> tuple[str, str | None]:
    if node.type == "secondary_constructor":
        return "constructor", None
    found = first_of(node, ("type_identifier", "simple_identifier"))
    if found is None and node.type == "companion_object":
        return "Companion", None
    return _text(found), None


def _kind(node: Node, kind: str) -> str:
    if node.type == "class_declaration":
        words = {c.type for c in node.children if not c.is_named}
        if "interface" in words:
            return "interface"
        if "enum" in words:
            return "enum"
    return kind


SPEC = LangSpec(
    grammar="kotlin",
    defs={"class_declaration": "class", "object_declaration": "class",
          "function_declaration": "function", "type_alias": "type",
          "companion_object": "class", "secondary_constructor": "constructor"},
    bodies=frozenset({"class_body", "enum_class_body", "function_body"}),
    comments=frozenset({"comment", "multiline_comment", "line_comment"}),
    imports=frozenset({"import_list", "import_header"}),
    private_keywords=frozenset({"private", "internal"}),
    bases=_bases,
    name=_name,
    kind=_kind,
)


def _import_specs(node: Node) -> list[str]:
    text = _text(node).strip().removeprefix("import").strip()
    text = text.split(" as ")[0].strip()
    return [text.replace(" ", "")] if text else []


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    ident = [c for c in node.named_children if c.type == "identifier"]
    if not ident:
        return []
    alias_node = [c for c in node.named_children if c.type == "import_alias"]
    alias = ""
    if alias_node:
        names = [c for c in alias_node[0].named_children
                 if c.type in ("type_identifier", "simple_identifier")]
        alias = _t(src, names[0]) if names else ""
    return dotted_binding(cap, _t(src, ident[0]).replace(" ", ""),
                          any(c.type == "wildcard_import" for c in node.named_children), alias)


IMPORTS = Imports(
    nodes=frozenset({"import_header"}),
    specs=_import_specs,
    query="(import_header) @i (package_header) @p",
    bindings=_import_bindings,
)


LANGUAGE = Language("kotlin", (".kt", ".kts"), SPEC, REFERENCES, family="jvm", imports=IMPORTS,
                    implicit_this=True, conventions=CONVENTIONS)
