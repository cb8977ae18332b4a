"""Ruby: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import Imports, Language
from codenav.lang.javascript import SPEC_TREES
from codenav.lang.spec import LangSpec, field_of
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t
from codenav.lang.syntax import unquote as _unquote

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


def _bases(node: Node) -> list[str]:
    sup = field_of(node, "superclass")
    return [_text(c) for c in sup.named_children] if sup is not None else []


_VISIBILITY = frozenset({"public", "private", "protected"})


def _visibility(node: Node) -> tuple[str, Node | None]:
    if node.type == "identifier":
        word = _text(node)
        return (word, None) if word in _VISIBILITY else ("", None)
    if node.type == "call" and field_of(node, "receiver") is None:
        word = _text(field_of(node, "method"))
        args = field_of(node, "arguments")
        if word in _VISIBILITY and args is not None and len(args.named_children) == 1 and \
                args.named_children[0].type in ("method", "singleton_method"):
            return word, args.named_children[0]
    return "", None


SPEC = LangSpec(
    grammar="ruby",
    defs={"class": "class", "module": "module", "method": "method",
          "singleton_method": "method"},
    scopes={"singleton_class": ""},
    bodies=frozenset({"body_statement"}),
    visibility_markers=True,
    bases=_bases,
    visibility=_visibility,
    bare_methods_are_functions=True,
)


def _import_specs(node: Node) -> list[str]:
    method = _text(node.child_by_field_name("method"))
    if method not in ("require", "require_relative", "load", "autoload"):
        return []
    args = node.child_by_field_name("arguments")
    if args is None:
        return []
    for arg in args.named_children:
        if arg.type == "string":
            value = _text(arg).strip("\"'")
            return [f"./{value}" if method == "require_relative" else value]
    return []


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    method = _t(src, node.child_by_field_name("method"))
    args = node.child_by_field_name("arguments")
    if args is None:
        return []
    for arg in args.named_children:
        if arg.type == "string":
            value = _unquote(_t(src, arg))
            if method == "require_relative":
                value = value if value.startswith(".") else "./" + value
            return [("import", "", value, "")]
    return []


IMPORTS = Imports(
    nodes=frozenset({"call"}),
    specs=_import_specs,
    query="""(call method: (identifier) @_m (#match? @_m "^(require|require_relative|load)$"))
    @i""",
    bindings=_import_bindings,
)


NOT_CALLS = frozenset({
    "require", "require_relative", "load", "include", "extend", "prepend", "attr_accessor",
    "attr_reader", "attr_writer", "private", "public", "protected", "module_function",
    "autoload"
})

LANGUAGE = Language("ruby", (".rb", ".rake", ".gemspec"), SPEC, REFERENCES, filenames=("Rakefile",
                    "Gemfile"), family="ruby", imports=IMPORTS, implicit_this=True,
                    not_calls=NOT_CALLS, conventions=(SPEC_TREES,))
