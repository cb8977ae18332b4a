"""PHP: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

REFERENCES = r"""
(function_call_expression function: (name) @call) @call.expr
(function_call_expression function: (qualified_name (name) @call .) @call.expr)
(member_call_expression name: (name) @call) @call.expr
(nullsafe_member_call_expression name: (name) @call) @call.expr
(scoped_call_expression name: (name) @call) @call.expr
(object_creation_expression (name) @new)
(object_creation_expression (qualified_name (name) @new .) @new.expr)
(base_clause (name) @extends)
(base_clause (qualified_name (name) @extends .) @extends.expr)
(class_interface_clause (name) @implements)
(class_interface_clause (qualified_name (name) @implements .) @implements.expr)
(use_declaration (name) @implements)
(named_type (name) @type)
(named_type (qualified_name (name) @type .) @type.expr)
(simple_parameter type: (_) @var.type name: (variable_name (name) @var.name))
(property_promotion_parameter type: (_) @field.type name: (variable_name (name) @field.name))
(property_declaration type: (_) @var.type (property_element name: (variable_name (name) @var.name)))
(assignment_expression left: (variable_name (name) @var.name)
  right: (object_creation_expression (name) @var.type))
(assignment_expression left: (variable_name (name) @var.name)
  right: (object_creation_expression (qualified_name) @var.type))
(assignment_expression left: (member_access_expression object: (variable_name (name) @_this) name: (name) @field.name)
  right: (object_creation_expression (name) @field.type) (#eq? @_this "this"))
(assignment_expression left: (variable_name (name) @var.name)
  right: [(function_call_expression function: (_) @var.call) (member_call_expression) @var.call
          (scoped_call_expression) @var.call])
(method_declaration name: (name) @ret.name return_type: (_) @ret.type)
(function_definition name: (name) @ret.name return_type: (_) @ret.type)
"""


SPEC = LangSpec(
    grammar="php",
    defs={"class_declaration": "class", "interface_declaration": "interface",
          "trait_declaration": "class", "enum_declaration": "enum",
          "function_definition": "function", "method_declaration": "method"},
    scopes={"namespace_definition": ""},
    bodies=frozenset({"declaration_list", "compound_statement", "enum_declaration_list"}),
    imports=frozenset({"namespace_use_declaration"}),
    private_keywords=frozenset({"private", "protected"}),
)

LANGUAGE = Language("php", (".php",), SPEC, REFERENCES)
