"""Kotlin: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

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


SPEC = LangSpec(
    grammar="kotlin",
    defs={"class_declaration": "class", "object_declaration": "class",
          "function_declaration": "function", "type_alias": "type",
          "companion_object": "class", "secondary_constructor": "constructor"},
    bodies=frozenset({"class_body", "enum_class_body", "function_body"}),
    comments=frozenset({"comment", "multiline_comment", "line_comment"}),
    imports=frozenset({"import_list", "import_header"}),
    private_keywords=frozenset({"private", "internal"}),
)

LANGUAGE = Language("kotlin", (".kt", ".kts"), SPEC, REFERENCES)
