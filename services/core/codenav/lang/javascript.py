"""JavaScript (and JSX): its files, the nodes its chunks and symbols come from
(``SPEC``), and the tree-sitter patterns of the references its code makes."""

# ruff: noqa: E501

from __future__ import annotations

from tree_sitter import Node

from codenav.lang.base import DIR, END, EXAMPLE, TEST, Convention, Imports, Language
from codenav.lang.spec import LangSpec, field_of, first_of
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text
from codenav.lang.syntax import span as _t
from codenav.lang.syntax import unquote as _unquote

JS_DEFS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "class_declaration": "class", "class": "class", "abstract_class_declaration": "class",
    "method_definition": "method", "lexical_declaration": "function",
    "variable_declaration": "function", "interface_declaration": "interface",
    "type_alias_declaration": "type", "enum_declaration": "enum",
    "abstract_method_signature": "method", "method_signature": "method",
    "function_signature": "function", "assignment_expression": "function",
    "function_expression": "function", "arrow_function": "function",
}
"""Declarations of the JavaScript family (TypeScript and TSX too)."""
def _bases(node: Node) -> list[str]:
    out: list[str] = []
    heritage = first_of(node, ("class_heritage",))
    if heritage is not None:
        for clause in heritage.named_children:
            out += [_text(c) for c in clause.named_children
                    if c.type in ("identifier", "type_identifier", "member_expression",
                                  "nested_type_identifier", "generic_type")]
        if not out:
            out = [_text(c) for c in heritage.named_children]
    ext = first_of(node, ("extends_type_clause",))
    if ext is not None:
        out += [_text(c) for c in ext.named_children]
    return out


_ASSIGNED = ("lexical_declaration", "variable_declaration", "assignment_expression")


def js_name(node: Node) -> tuple[str, str | None] | None:
    """``export default function () {...}`` is named ``default``."""
    if node.type in _ASSIGNED or field_of(node, "name") is not None:
        return None
    parent = node.parent
    if parent is not None and parent.type == "export_statement" and \
            field_of(parent, "value") == node:
        return "default", None
    return None


def ts_name(node: Node) -> tuple[str, str | None] | None:
    """As ``js_name``; a quoted name (``declare module "x"``) loses its quotes."""
    name = field_of(node, "name") if node.type not in _ASSIGNED else None
    return (_text(name).strip("\"'"), None) if name is not None else js_name(node)


def js_exported_names(root: Node) -> set[str]:
    """Top-level names exported apart from their declaration: ``export { a, b as c }``,
    ``export default a``, ``export = a``, ``module.exports = a`` or ``= { a, b: c }``."""
    names: set[str] = set()
    for child in root.named_children:
        if child.type == "export_statement":
            if field_of(child, "declaration") is not None or field_of(child, "source") is not None:
                continue
            for part in child.named_children:
                if part.type == "export_clause":
                    names.update(_text(field_of(s, "name")) for s in part.named_children
                                 if s.type == "export_specifier")
                elif part.type == "identifier":
                    names.add(_text(part))
        elif child.type == "expression_statement" and child.named_children:
            assign = child.named_children[0]
            if assign.type != "assignment_expression" or \
                    _text(field_of(assign, "left")) != "module.exports":
                continue
            right = field_of(assign, "right")
            if right is None:
                continue
            if right.type == "identifier":
                names.add(_text(right))
            elif right.type == "object":
                for prop in right.named_children:
                    if prop.type == "shorthand_property_identifier":
                        names.add(_text(prop))
                    elif prop.type == "pair":
                        value = field_of(prop, "value")
                        if value is not None and value.type == "identifier":
                            names.add(_text(value))
    names.discard("")
    return names


def _member_exported(node: Node, name: str, src: bytes) -> bool:
    """A class member is public unless ``#private`` or TypeScript's ``private``."""
    mods = src[node.start_byte:node.start_byte + 16].decode("utf-8", "replace")
    return not name.startswith("#") and not mods.startswith(("private", "#"))


def _constructor(node: Node, name: str, parent: str | None) -> bool:
    return node.type == "method_definition" and name == "constructor"


def _exported(node: Node, name: str) -> bool:
    return False  # only by an export statement or an export list (the walker's)


JS_PARTS = dict(
    wrappers=frozenset({"export_statement", "ambient_declaration", "expression_statement"}),
    scopes={"internal_module": "module", "module": "module"},
    bodies=frozenset({"class_body", "interface_body", "statement_block", "object_type",
                      "enum_body"}),
    imports=frozenset({"import_statement"}),
    export_wrappers=frozenset({"export_statement"}),
    bases=_bases,
    constructor=_constructor,
    exported=_exported,
    exported_names=js_exported_names,
    member_exported=_member_exported,
)
"""The rest of the family's node tables and hooks."""

REFERENCES_COMMON = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (member_expression property: (property_identifier) @call) @call.expr)
(new_expression constructor: (identifier) @new)
(new_expression constructor: (member_expression property: (property_identifier) @new) @new.expr)
(variable_declarator name: (identifier) @var.name value: (new_expression constructor: (identifier) @var.type))
(assignment_expression left: (member_expression object: (this) property: (property_identifier) @field.name)
  right: (new_expression constructor: (identifier) @field.type))
"""
"""References every language of the family makes."""
CLASS_HERITAGE = r"""
(class_heritage (identifier) @extends)
(class_heritage (member_expression property: (property_identifier) @extends) @extends.expr)
"""
JSX = r"""
(jsx_opening_element name: (identifier) @call)
(jsx_self_closing_element name: (identifier) @call)
"""
"""Components used in JSX (JavaScript and TSX)."""


SPEC = LangSpec(grammar="javascript", defs=JS_DEFS, name=js_name, **JS_PARTS)  # type: ignore[arg-type]


_REQUIRE_DEPTH = 6
"""How deep under a top-level statement ``require(...)`` is looked for."""


def _import_specs(node: Node) -> list[str]:
    out: list[str] = []
    if node.type in ("import_statement", "export_statement"):
        source = node.child_by_field_name("source")
        if source is None:  # TypeScript: import fs = require("fs")
            for child in node.named_children:
                if child.type == "import_require_clause":
                    source = child.child_by_field_name("source")
        if source is not None:
            out.append(_text(source).strip("\"'`"))
    if node.type in ("lexical_declaration", "variable_declaration", "expression_statement"):
        stack = [(node, 0)]
        while stack:
            cur, depth = stack.pop()
            if cur.type == "call_expression":
                fn = cur.child_by_field_name("function")
                args = cur.child_by_field_name("arguments")
                if fn is not None and _text(fn) == "require" and args is not None and \
                        args.named_children and args.named_children[0].type == "string":
                    out.append(_text(args.named_children[0]).strip("\"'`"))
                continue
            if depth >= _REQUIRE_DEPTH or cur.type in (
                    "statement_block", "function_expression", "arrow_function", "class_body"):
                continue
            stack.extend((child, depth + 1) for child in reversed(cur.named_children))
    return out


def _js_clause(clause: Node, src: bytes, kind: str, spec: str) -> list[Binding]:
    out: list[Binding] = []
    for part in clause.named_children:
        if part.type == "identifier":  # import Default from
            out.append((kind, "default", spec, _t(src, part)))
        elif part.type == "namespace_import":
            ident = [c for c in part.named_children if c.type == "identifier"]
            out.append((kind, "", spec, _t(src, ident[0]) if ident else ""))
        elif part.type in ("named_imports", "export_clause"):
            for spec_node in part.named_children:
                if spec_node.type not in ("import_specifier", "export_specifier"):
                    continue
                name = _t(src, spec_node.child_by_field_name("name")).strip("\"'")
                alias = _t(src, spec_node.child_by_field_name("alias")).strip("\"'")
                out.append((kind, name, spec, alias if alias != name else ""))
    return out


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "cjs":  # module.exports = Foo
        return [("reexport", _t(src, node), "", "default")]
    if cap == "tsreq":  # import x = require("m")
        stmt = node.parent
        ident = [c for c in node.named_children if c.type == "identifier"]
        source = node.child_by_field_name("source")
        if source is None:
            strings = [c for c in node.named_children if c.type == "string"]
            source = strings[0] if strings else None
        if stmt is None or source is None:
            return []
        return [("import", "", _unquote(_t(src, source)), _t(src, ident[0]) if ident else "")]
    if cap == "req":
        args = node.child_by_field_name("arguments")
        if args is None or not args.named_children or args.named_children[0].type != "string":
            return []
        spec = _unquote(_t(src, args.named_children[0]))
        parent = node.parent
        if parent is not None and parent.type == "variable_declarator":
            target = parent.child_by_field_name("name")
            if target is not None and target.type == "identifier":
                return [("import", "", spec, _t(src, target))]
            if target is not None and target.type == "object_pattern":
                out: list[Binding] = []
                for prop in target.named_children:
                    if prop.type == "shorthand_property_identifier_pattern":
                        out.append(("import", _t(src, prop), spec, ""))
                    elif prop.type == "pair_pattern":
                        key = _t(src, prop.child_by_field_name("key"))
                        bound = _t(src, prop.child_by_field_name("value"))
                        out.append(("import", key, spec, bound if bound != key else ""))
                return out
        return [("import", "", spec, "")]
    source = node.child_by_field_name("source")
    spec = _unquote(_t(src, source)) if source is not None else ""
    if cap == "i":
        if not spec:
            return []
        clauses = [c for c in node.named_children if c.type == "import_clause"]
        if not clauses:
            return [("import", "", spec, "")]  # import "./side-effect"
        return _js_clause(clauses[0], src, "import", spec)
    # export statements
    if spec:
        if any(c.type == "export_clause" for c in node.named_children):
            return _js_clause(node, src, "reexport", spec)
        ns = [c for c in node.named_children if c.type == "namespace_export"]
        if ns:
            ident = [c for c in ns[0].named_children if c.type in ("identifier", "string")]
            return [("reexport", "", spec, _t(src, ident[0]).strip("\"'") if ident else "")]
        return [("reexport", "*", spec, "")]
    default = any(not c.is_named and c.type == "default" for c in node.children)
    decl = node.child_by_field_name("declaration")
    value = node.child_by_field_name("value")
    if default:
        target = decl if decl is not None else value
        if target is None:
            return []
        if target.type == "identifier":
            return [("reexport", _t(src, target), "", "default")]
        named = target.child_by_field_name("name")
        if named is not None:
            return [("reexport", _t(src, named), "", "default")]
        return []
    if any(c.type == "export_clause" for c in node.named_children):  # export { a as b }
        return _js_clause(node, src, "reexport", "")
    return []


_JS_STATEMENTS = frozenset({"import_statement", "export_statement", "lexical_declaration",
                            "variable_declaration", "expression_statement"})
IMPORT_QUERY = """(import_statement) @i (export_statement) @e
    (call_expression function: (identifier) @_r (#eq? @_r "require")) @req
    (expression_statement (assignment_expression
        left: (member_expression object: (identifier) @_m property: (property_identifier) @_p)
        right: (identifier) @cjs) (#eq? @_m "module") (#eq? @_p "exports"))"""
IMPORTS = Imports(nodes=_JS_STATEMENTS, specs=_import_specs, query=IMPORT_QUERY,
                  bindings=_import_bindings)
NOT_CALLS = frozenset({"require"})
JS_NAMES = ("javascript", "typescript", "tsx")
SPEC_TREES = Convention(TEST, ("ruby", *JS_NAMES), DIR + r"(spec|specs|features|cypress|playwright)" + END,
                        "RSpec, Cucumber and browser-test trees")
CONVENTIONS = (
    SPEC_TREES,
    Convention(EXAMPLE, JS_NAMES, r"\.stories\.[A-Za-z0-9]+$", "Storybook stories"),
)


LANGUAGE = Language("javascript", (".js", ".jsx", ".mjs", ".cjs"), SPEC, REFERENCES_COMMON +
                    CLASS_HERITAGE + JSX, family="js", imports=IMPORTS, not_calls=NOT_CALLS,
                    conventions=CONVENTIONS)
