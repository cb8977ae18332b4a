"""Go: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

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


SPEC = LangSpec(
    grammar="go",
    defs={"function_declaration": "function", "method_declaration": "method",
          "type_spec": "type", "type_alias": "type", "method_elem": "method"},
    scopes={"type_declaration": ""},
    bodies=frozenset({"interface_type"}),
    imports=frozenset({"import_declaration"}),
)

LANGUAGE = Language("go", (".go",), SPEC, REFERENCES)
