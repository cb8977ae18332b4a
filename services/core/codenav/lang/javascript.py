"""JavaScript (and JSX): its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

JS_DEFS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "class_declaration": "class", "class": "class", "abstract_class_declaration": "class",
    "method_definition": "method", "lexical_declaration": "function",
    "variable_declaration": "function", "interface_declaration": "interface",
    "type_alias_declaration": "type", "enum_declaration": "enum",
    "abstract_method_signature": "method", "method_signature": "method",
    "function_signature": "function", "assignment_expression": "function",
    "function_expression": "function", "arrow_function": "function",
}
"""Declarations of the JavaScript family (TypeScript and TSX too)."""
JS_PARTS = dict(
    wrappers=frozenset({"export_statement", "ambient_declaration", "expression_statement"}),
    scopes={"internal_module": "module", "module": "module"},
    bodies=frozenset({"class_body", "interface_body", "statement_block", "object_type",
                      "enum_body"}),
    imports=frozenset({"import_statement"}),
    export_wrappers=frozenset({"export_statement"}),
)
"""The rest of the family's node tables."""

REFERENCES_COMMON = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (member_expression property: (property_identifier) @call) @call.expr)
(new_expression constructor: (identifier) @new)
(new_expression constructor: (member_expression property: (property_identifier) @new) @new.expr)
(variable_declarator name: (identifier) @var.name value: (new_expression constructor: (identifier) @var.type))
(assignment_expression left: (member_expression object: (this) property: (property_identifier) @field.name)
  right: (new_expression constructor: (identifier) @field.type))
"""
"""References every language of the family makes."""
CLASS_HERITAGE = r"""
(class_heritage (identifier) @extends)
(class_heritage (member_expression property: (property_identifier) @extends) @extends.expr)
"""
JSX = r"""
(jsx_opening_element name: (identifier) @call)
(jsx_self_closing_element name: (identifier) @call)
"""
"""Components used in JSX (JavaScript and TSX)."""


SPEC = LangSpec(grammar="javascript", defs=JS_DEFS, **JS_PARTS)  # type: ignore[arg-type]

LANGUAGE = Language("javascript", (".js", ".jsx", ".mjs", ".cjs"), SPEC, REFERENCES_COMMON + CLASS_HERITAGE + JSX)
