"""C++: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Node

from codenav.lang.base import Imports, Language
from codenav.lang.c import BUILTIN_TYPES, CONVENTIONS
from codenav.lang.c import IMPORTS as C_IMPORTS
from codenav.lang.c import REFERENCES as C_REFERENCES
from codenav.lang.c import SPEC as C_SPEC
from codenav.lang.spec import first_of
from codenav.lang.syntax import node_text as _text

REFERENCES = C_REFERENCES + r"""
(call_expression function: (qualified_identifier name: (identifier) @call) @call.expr)
(call_expression function: (template_function name: (identifier) @call) @call.expr)
(new_expression type: (type_identifier) @new)
(new_expression type: (qualified_identifier name: (type_identifier) @new) @new.expr)
(new_expression type: (template_type name: (type_identifier) @new))
(base_class_clause (type_identifier) @extends)
(base_class_clause (template_type name: (type_identifier) @extends))
(base_class_clause (qualified_identifier name: (type_identifier) @extends) @extends.expr)
(qualified_identifier name: (type_identifier) @type) @type.expr
(type_parameter_declaration (type_identifier) @tparam)
(field_declaration declarator: (function_declarator declarator: (field_identifier) @decl))
(parameter_declaration type: (_) @var.type declarator: (reference_declarator (identifier) @var.name))
(declaration type: (placeholder_type_specifier) declarator: (init_declarator declarator: (identifier) @var.name
  value: (new_expression type: (_) @var.type)))
"""


def _bases(node: Node) -> list[str]:
    bl = first_of(node, ("base_class_clause",))
    if bl is None:
        return []
    return [_text(c) for c in bl.named_children if c.type not in ("access_specifier",)]


def _constructor(node: Node, name: str, parent: str | None) -> bool:
    return parent is not None and name == parent


SPEC = replace(
    C_SPEC, grammar="cpp",
    defs={**C_SPEC.defs, "class_specifier": "class", "alias_declaration": "type",
          "concept_definition": "type"},
    wrappers=frozenset({"template_declaration"}),
    scopes={"namespace_definition": "module", "linkage_specification": ""},
    bodies=C_SPEC.bodies | {"declaration_list"},
    visibility_markers=True,
    bases=_bases,
    constructor=_constructor,
    private_members=frozenset({"class_specifier"}),
)
"""C's tables and hooks, with classes, namespaces, templates and member visibility."""


IMPORTS = Imports(nodes=C_IMPORTS.nodes, specs=C_IMPORTS.specs, bindings=C_IMPORTS.bindings,
                  query=C_IMPORTS.query + " (using_declaration) @u")


LANGUAGE = Language("cpp", (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp", ".inl"),
                    SPEC, REFERENCES, family="c", imports=IMPORTS, builtin_types=BUILTIN_TYPES,
                    implicit_this=True, conventions=CONVENTIONS)
