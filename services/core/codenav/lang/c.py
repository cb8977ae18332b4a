"""C: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

REFERENCES = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (field_expression field: (field_identifier) @call) @call.expr)
(type_identifier) @type
(declaration declarator: (function_declarator declarator: (identifier) @decl))
(declaration type: (_) @var.type declarator: (identifier) @var.name)
(declaration type: (_) @var.type declarator: (init_declarator declarator: (identifier) @var.name))
(declaration type: (_) @var.type declarator: (pointer_declarator declarator: (identifier) @var.name))
(declaration type: (_) @var.type declarator: (init_declarator declarator: (pointer_declarator declarator: (identifier) @var.name)))
(parameter_declaration type: (_) @var.type declarator: (identifier) @var.name)
(parameter_declaration type: (_) @var.type declarator: (pointer_declarator declarator: (identifier) @var.name))
(field_declaration type: (_) @var.type declarator: (field_identifier) @var.name)
(field_declaration type: (_) @var.type declarator: (pointer_declarator declarator: (field_identifier) @var.name))
"""
"""C's references, which C++ extends."""


SPEC = LangSpec(
    grammar="c",
    defs={"function_definition": "function", "struct_specifier": "class",
          "union_specifier": "class", "enum_specifier": "enum",
          "type_definition": "type"},
    bodies=frozenset({"field_declaration_list"}),
    imports=frozenset({"preproc_include"}),
)

LANGUAGE = Language("c", (".c", ".h"), SPEC, REFERENCES)
