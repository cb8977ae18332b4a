"""Rust: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

REFERENCES = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (scoped_identifier name: (identifier) @call) @call.expr)
(call_expression function: (field_expression field: (field_identifier) @call) @call.expr)
(call_expression function: (generic_function function: (identifier) @call) @call.expr)
(call_expression function: (generic_function function: (scoped_identifier name: (identifier) @call)) @call.expr)
(macro_invocation macro: (identifier) @call)
(struct_expression name: (type_identifier) @new)
(struct_expression name: (scoped_type_identifier name: (type_identifier) @new) @new.expr)
(impl_item trait: (type_identifier) @implements)
(impl_item trait: (generic_type type: (type_identifier) @implements))
(impl_item trait: (scoped_type_identifier name: (type_identifier) @implements) @implements.expr)
(trait_item bounds: (trait_bounds (type_identifier) @extends))
(type_identifier) @type
(scoped_type_identifier name: (type_identifier) @type) @type.expr
(type_parameter name: (type_identifier) @tparam)
(let_declaration pattern: (identifier) @var.name type: (_) @var.type)
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (scoped_identifier) @var.call))
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (identifier) @var.call))
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (field_expression) @var.call))
(function_item name: (identifier) @ret.name return_type: (_) @ret.type)
(let_declaration pattern: (identifier) @var.name value: (struct_expression name: (_) @var.type))
(parameter pattern: (identifier) @var.name type: (_) @var.type)
(field_declaration name: (field_identifier) @var.name type: (_) @var.type)
"""


SPEC = LangSpec(
    grammar="rust",
    defs={"function_item": "function", "function_signature_item": "function",
          "struct_item": "class", "union_item": "class", "enum_item": "enum",
          "trait_item": "interface", "type_item": "type", "macro_definition": "macro"},
    scopes={"mod_item": "module", "impl_item": ""},
    bodies=frozenset({"declaration_list"}),
    comments=frozenset({"line_comment", "block_comment"}),
    imports=frozenset({"use_declaration", "extern_crate_declaration"}),
    attached=frozenset({"attribute_item"}),
)

LANGUAGE = Language("rust", (".rs",), SPEC, REFERENCES)
