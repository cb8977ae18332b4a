"""TypeScript: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from codenav.lang.base import Imports, Language
from codenav.lang.javascript import (
    CONVENTIONS,
    IMPORT_QUERY,
    JS_DEFS,
    JS_PARTS,
    NOT_CALLS,
    REFERENCES_COMMON,
    ts_name,
)
from codenav.lang.javascript import IMPORTS as JS_IMPORTS
from codenav.lang.spec import LangSpec

REFERENCES = REFERENCES_COMMON + r"""
(extends_clause value: (identifier) @extends)
(extends_clause value: (member_expression property: (property_identifier) @extends) @extends.expr)
(implements_clause (type_identifier) @implements)
(implements_clause (generic_type name: (type_identifier) @implements))
(implements_clause (nested_type_identifier name: (type_identifier) @implements) @implements.expr)
(extends_type_clause (type_identifier) @extends)
(extends_type_clause (generic_type name: (type_identifier) @extends))
(extends_type_clause (nested_type_identifier name: (type_identifier) @extends) @extends.expr)
(type_identifier) @type
(nested_type_identifier name: (type_identifier) @type) @type.expr
(type_parameter name: (type_identifier) @tparam)
(variable_declarator name: (identifier) @var.name type: (type_annotation (_) @var.type))
(required_parameter pattern: (identifier) @var.name type: (type_annotation (_) @var.type))
(optional_parameter pattern: (identifier) @var.name type: (type_annotation (_) @var.type))
(required_parameter (accessibility_modifier) pattern: (identifier) @field.name type: (type_annotation (_) @field.type))
(public_field_definition name: (property_identifier) @var.name type: (type_annotation (_) @var.type))
(public_field_definition name: (property_identifier) @var.name value: (new_expression constructor: (identifier) @var.type))
(variable_declarator name: (identifier) @var.name value: (call_expression function: (_) @var.call))
(variable_declarator name: (identifier) @var.name value: (await_expression (call_expression function: (_) @var.call)))
(function_declaration name: (identifier) @ret.name return_type: (type_annotation (_) @ret.type))
(method_definition name: (property_identifier) @ret.name return_type: (type_annotation (_) @ret.type))
(method_signature name: (property_identifier) @ret.name return_type: (type_annotation (_) @ret.type))
(variable_declarator name: (identifier) @ret.name value: (arrow_function return_type: (type_annotation (_) @ret.type)))
"""


SPEC = LangSpec(grammar="typescript", defs=JS_DEFS, name=ts_name, **JS_PARTS)  # type: ignore[arg-type]


IMPORTS = Imports(nodes=JS_IMPORTS.nodes, specs=JS_IMPORTS.specs, bindings=JS_IMPORTS.bindings,
                  query=IMPORT_QUERY + """
    (import_statement (import_require_clause) @tsreq)""")


LANGUAGE = Language("typescript", (".ts", ".mts", ".cts"), SPEC, REFERENCES, family="js",
                    imports=IMPORTS, not_calls=NOT_CALLS, conventions=CONVENTIONS)
