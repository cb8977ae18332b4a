"""Python: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

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


SPEC = LangSpec(
    grammar="python",
    defs={"function_definition": "function", "class_definition": "class"},
    wrappers=frozenset({"decorated_definition"}),
    bodies=frozenset({"block"}),
    imports=frozenset({"import_statement", "import_from_statement",
                       "future_import_statement"}),
    python_docstrings=True,
)

LANGUAGE = Language("python", (".py", ".pyi", ".pyw"), SPEC, REFERENCES)
