"""Ruby: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from codenav.lang.base import Language
from codenav.lang.spec import LangSpec

REFERENCES = r"""
(call method: (identifier) @call) @call.expr
(body_statement (identifier) @bare)
(binary left: (identifier) @bare)
(binary right: (identifier) @bare)
(interpolation (identifier) @bare)
(argument_list (identifier) @bare)
(array (identifier) @bare)
(parenthesized_statements (identifier) @bare)
(assignment right: (identifier) @bare)
(if condition: (identifier) @bare)
(unless condition: (identifier) @bare)
(assignment left: (identifier) @local)
(operator_assignment left: (identifier) @local)
(method_parameters (identifier) @local)
(lambda_parameters (identifier) @local)
(block_parameters (identifier) @local)
(optional_parameter name: (identifier) @local)
(keyword_parameter name: (identifier) @local)
(splat_parameter name: (identifier) @local)
(super) @super
(superclass (constant) @extends)
(superclass (scope_resolution name: (constant) @extends) @extends.expr)
(call method: (identifier) @_inc (#match? @_inc "^(include|extend|prepend)$")
  arguments: (argument_list (constant) @implements))
(call method: (identifier) @_inc (#match? @_inc "^(include|extend|prepend)$")
  arguments: (argument_list (scope_resolution name: (constant) @implements) @implements.expr))
(scope_resolution name: (constant) @type) @type.expr
(assignment left: (identifier) @var.name right: (call receiver: (constant) @var.type method: (identifier) @_new
  (#eq? @_new "new")))
(assignment left: (identifier) @var.name right: (call receiver: (scope_resolution) @var.type method: (identifier) @_new
  (#eq? @_new "new")))
(assignment left: (instance_variable) @field.name right: (call receiver: (constant) @field.type
  method: (identifier) @_new (#eq? @_new "new")))
(assignment left: (instance_variable) @field.name right: (call receiver: (scope_resolution) @field.type
  method: (identifier) @_new (#eq? @_new "new")))
"""


SPEC = LangSpec(
    grammar="ruby",
    defs={"class": "class", "module": "module", "method": "method",
          "singleton_method": "method"},
    scopes={"singleton_class": ""},
    bodies=frozenset({"body_statement"}),
    visibility_markers=True,
)

LANGUAGE = Language("ruby", (".rb", ".rake", ".gemspec"), SPEC, REFERENCES, filenames=("Rakefile", "Gemfile"))
