"""PHP: its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import Imports, Language
from codenav.lang.spec import LangSpec, field_of
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t
from codenav.lang.syntax import unquote as _unquote

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


def _bases(node: Node) -> list[str]:
    out: list[str] = []
    for clause in node.named_children:
        if clause.type in ("base_clause", "class_interface_clause"):
            out += [_text(c) for c in clause.named_children]
    body = field_of(node, "body")
    for member in body.named_children if body is not None else ():
        if member.type == "use_declaration":  # traits: use A, B;
            out += [_text(c) for c in member.named_children
                    if c.type in ("name", "qualified_name")]
    return out


def _constructor(node: Node, name: str, parent: str | None) -> bool:
    return name == "__construct"


SPEC = LangSpec(
    grammar="php",
    defs={"class_declaration": "class", "interface_declaration": "interface",
          "trait_declaration": "class", "enum_declaration": "enum",
          "function_definition": "function", "method_declaration": "method"},
    scopes={"namespace_definition": ""},
    bodies=frozenset({"declaration_list", "compound_statement", "enum_declaration_list"}),
    imports=frozenset({"namespace_use_declaration"}),
    private_keywords=frozenset({"private", "protected"}),
    bases=_bases,
    constructor=_constructor,
)


def _php_path(node: Node) -> str:
    """``'x.php'``, or ``__DIR__ . '/x.php'`` as ``./x.php``."""
    for child in node.named_children:
        if child.type in ("string", "encapsed_string"):
            return _text(child).strip("\"'")
        if child.type == "binary_expression":
            left, right = child.child_by_field_name("left"), child.child_by_field_name("right")
            if left is not None and _text(left) == "__DIR__" and right is not None and \
                    right.type in ("string", "encapsed_string"):
                return "." + _text(right).strip("\"'")
    return ""


def _import_specs(node: Node) -> list[str]:
    out: list[str] = []
    if node.type == "namespace_use_declaration":
        prefix = ""
        group = None
        for child in node.named_children:
            if child.type == "namespace_name":
                prefix = _text(child)
            if child.type == "namespace_use_group":
                group = child
        clauses = group.named_children if group is not None else node.named_children
        for clause in clauses:
            if clause.type in ("namespace_use_clause", "namespace_use_group_clause"):
                name = _text(clause).split(" as ")[0].strip()
                name = name.removeprefix("function ").removeprefix("const ").strip()
                out.append(f"{prefix}\\{name}" if prefix else name)
    elif node.type == "expression_statement":
        for child in node.named_children:
            if child.type in ("require_expression", "require_once_expression",
                              "include_expression", "include_once_expression"):
                path = _php_path(child)
                if path:
                    out.append(path)
    return out


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "p":
        return [("package", _t(src, node).replace(" ", "").strip("\\"), "", "")]
    if cap == "f":
        for child in node.named_children:
            if child.type in ("string", "encapsed_string"):
                return [("import", "", _unquote(_t(src, child)), "")]
            if child.type == "binary_expression":
                left = child.child_by_field_name("left")
                right = child.child_by_field_name("right")
                if _t(src, left) == "__DIR__" and right is not None:
                    return [("import", "", "." + _unquote(_t(src, right)), "")]
        return []
    prefix = ""
    group = None
    for child in node.named_children:
        if child.type == "namespace_name":
            prefix = _t(src, child)
        elif child.type == "namespace_use_group":
            group = child
    clauses = group.named_children if group is not None else node.named_children
    out: list[Binding] = []
    for clause in clauses:
        if clause.type not in ("namespace_use_clause", "namespace_use_group_clause"):
            continue
        alias_node = clause.child_by_field_name("alias")
        names = [c for c in clause.named_children if c.type in ("qualified_name", "name")
                 and (alias_node is None or c.start_byte != alias_node.start_byte)]
        if not names:
            continue
        path = _t(src, names[0]).strip("\\")
        if prefix:
            path = f"{prefix.strip(chr(92))}\\{path}"
        out.append(("import", path.rsplit("\\", 1)[-1], path, _t(src, alias_node)))
    return out


IMPORTS = Imports(
    nodes=frozenset({"namespace_use_declaration", "expression_statement"}),
    specs=_import_specs,
    query="""(namespace_use_declaration) @i (namespace_definition name: (_) @p)
    (require_once_expression) @f (require_expression) @f (include_expression) @f
    (include_once_expression) @f""",
    bindings=_import_bindings,
)


LANGUAGE = Language("php", (".php",), SPEC, REFERENCES, family="php", imports=IMPORTS)
