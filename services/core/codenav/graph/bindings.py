"""Import bindings and package declarations, per language, as ``refs`` rows.

Unlike the raw import strings ``outline`` shows, these keep what each import binds locally:

    kind      ``import``, or ``reexport`` (``export ... from``, ``pub use``, ``export default``)
    qualifier the module as written: ``.models``, ``./util``, ``a.b.C``, ``"x.h"``,
              ``crate::store::Store``, ``mod:cache`` (a Rust ``mod cache;``)
    name      the member imported (``''`` the module itself, ``'*'`` everything in it)
    alias     the local name when it differs (``as``, ``=``, a default import's name)
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

Row = tuple[str, str, str, str, int, str]
ScopeAt = Callable[[int], str]

_NODES = {
    "python": "(import_statement) @i (import_from_statement) @i",
    "javascript": """(import_statement) @i (export_statement) @e
        (call_expression function: (identifier) @_r (#eq? @_r "require")) @req
        (expression_statement (assignment_expression
            left: (member_expression object: (identifier) @_m property: (property_identifier) @_p)
            right: (identifier) @cjs) (#eq? @_m "module") (#eq? @_p "exports"))""",
    "go": "(import_spec) @i (package_clause) @p",
    "java": "(import_declaration) @i (package_declaration) @p",
    "kotlin": "(import_header) @i (package_header) @p",
    "rust": "(use_declaration) @i (mod_item) @m (extern_crate_declaration) @x",
    "c": "(preproc_include) @i",
    "csharp": """(using_directive) @i (namespace_declaration name: (_) @p)
        (file_scoped_namespace_declaration name: (_) @p)""",
    "ruby": """(call method: (identifier) @_m (#match? @_m "^(require|require_relative|load)$"))
        @i""",
    "php": """(namespace_use_declaration) @i (namespace_definition name: (_) @p)
        (require_once_expression) @f (require_expression) @f (include_expression) @f
        (include_once_expression) @f""",
}
_NODES["typescript"] = _NODES["javascript"] + """
    (import_statement (import_require_clause) @tsreq)"""
_NODES["tsx"] = _NODES["typescript"]
_NODES["cpp"] = _NODES["c"] + " (using_declaration) @u"


def patterns(language: str) -> str:
    """This language's import patterns, captures renamed ``@import.<x>`` so they can join
    the reference patterns in one query (one walk of the tree)."""
    source = _NODES.get(language, "")
    return re.sub(r"@(?!_)(\w+)", r"@import.\1", source)


def _t(src: bytes, node: Node | None) -> str:
    if node is None:
        return ""
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _unquote(text: str) -> str:
    return text.strip().strip("\"'`")


def rows(language: str, cap: str, node: Node, src: bytes, scope_at: ScopeAt) -> list[Row]:
    """The rows of one captured import node (``cap`` without its ``import.`` prefix)."""
    out: list[Row] = []
    line = node.start_point[0] + 1
    for kind, name, spec, alias in _HANDLERS[language](cap, node, src):
        if kind == "package":
            out.append(("package", name, "", "", line, ""))
        elif spec or kind == "reexport":
            out.append((kind, name, spec, alias, line, scope_at(line)))
    return out


Binding = tuple[str, str, str, str]
"""(kind, name, spec, alias)"""


def _python(cap: str, node: Node, src: bytes) -> list[Binding]:
    out: list[Binding] = []
    if node.type == "import_statement":
        for child in node.named_children:
            if child.type == "aliased_import":
                out.append(("import", "", _t(src, child.child_by_field_name("name")),
                            _t(src, child.child_by_field_name("alias"))))
            elif child.type == "dotted_name":
                out.append(("import", "", _t(src, child), ""))
        return out
    module = node.child_by_field_name("module_name")
    spec = _t(src, module).replace(" ", "")
    if any(c.type == "wildcard_import" for c in node.named_children):
        return [("import", "*", spec, "")]
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            out.append(("import", _t(src, child.child_by_field_name("name")), spec,
                        _t(src, child.child_by_field_name("alias"))))
        else:
            out.append(("import", _t(src, child), spec, ""))
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


def _js(cap: str, node: Node, src: bytes) -> list[Binding]:
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


def _go(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "p":
        names = [c for c in node.named_children if c.type == "package_identifier"]
        return [("package", _t(src, names[0]), "", "")] if names else []
    path = _unquote(_t(src, node.child_by_field_name("path")))
    alias = _t(src, node.child_by_field_name("name"))
    return [("import", "", path, alias)]


def _java(cap: str, node: Node, src: bytes) -> list[Binding]:
    named = [c for c in node.named_children if c.type in ("scoped_identifier", "identifier")]
    if not named:
        return []
    path = _t(src, named[0]).replace(" ", "")
    if cap == "p":
        return [("package", path, "", "")]
    if any(c.type == "asterisk" for c in node.named_children):
        return [("import", "*", path, "")]
    return [("import", path.rsplit(".", 1)[-1], path, "")]


def _kotlin(cap: str, node: Node, src: bytes) -> list[Binding]:
    ident = [c for c in node.named_children if c.type == "identifier"]
    if not ident:
        return []
    path = _t(src, ident[0]).replace(" ", "")
    if cap == "p":
        return [("package", path, "", "")]
    if any(c.type == "wildcard_import" for c in node.named_children):
        return [("import", "*", path, "")]
    alias_node = [c for c in node.named_children if c.type == "import_alias"]
    alias = ""
    if alias_node:
        names = [c for c in alias_node[0].named_children
                 if c.type in ("type_identifier", "simple_identifier")]
        alias = _t(src, names[0]) if names else ""
    return [("import", path.rsplit(".", 1)[-1], path, alias)]


def _rust_use(node: Node, src: bytes, prefix: str, kind: str, out: list[Binding]) -> None:
    t = node.type
    if t in ("scoped_identifier", "identifier", "crate", "self", "super", "metavariable"):
        path = _t(src, node).replace(" ", "")
        full = f"{prefix}::{path}" if prefix else path
        last = full.rsplit("::", 1)[-1]
        if last == "self":
            full = full.rsplit("::", 1)[0]
            last = full.rsplit("::", 1)[-1]
        out.append((kind, last, full, ""))
    elif t == "use_as_clause":
        path = _t(src, node.child_by_field_name("path")).replace(" ", "")
        full = f"{prefix}::{path}" if prefix else path
        alias = _t(src, node.child_by_field_name("alias"))
        last = full.rsplit("::", 1)[-1]
        out.append((kind, last, full, alias if alias != last else ""))
    elif t == "use_wildcard":
        inner = [c for c in node.named_children]
        path = _t(src, inner[0]).replace(" ", "") if inner else ""
        full = f"{prefix}::{path}" if prefix and path else (prefix or path)
        out.append((kind, "*", full, ""))
    elif t == "scoped_use_list":
        path_node = node.child_by_field_name("path")
        path = _t(src, path_node).replace(" ", "") if path_node is not None else ""
        full = f"{prefix}::{path}" if prefix and path else (prefix or path)
        lst = node.child_by_field_name("list")
        if lst is not None:
            for child in lst.named_children:
                _rust_use(child, src, full, kind, out)
    elif t == "use_list":
        for child in node.named_children:
            _rust_use(child, src, prefix, kind, out)


def _rust(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "m":
        if node.child_by_field_name("body") is not None:
            return []
        name = _t(src, node.child_by_field_name("name"))
        return [("import", name, f"mod:{name}", "")]
    if cap == "x":
        name = _t(src, node.child_by_field_name("name"))
        return [("import", "", name, "")]
    public = any(c.type == "visibility_modifier" for c in node.named_children)
    arg = node.child_by_field_name("argument")
    out: list[Binding] = []
    if arg is not None:
        _rust_use(arg, src, "", "reexport" if public else "import", out)
    return out


def _c(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "u":  # using namespace a::b;
        if not any(not c.is_named and c.type == "namespace" for c in node.children):
            return []
        names = [c for c in node.named_children]
        return [("import", "*", "ns:" + _t(src, names[-1]).replace(" ", ""), "")] if names \
            else []
    path = node.child_by_field_name("path")
    if path is None:
        return []
    return [("import", "", _t(src, path).strip(), "")]


def _csharp(cap: str, node: Node, src: bytes) -> list[Binding]:
    if cap == "p":
        return [("package", _t(src, node).replace(" ", ""), "", "")]
    alias_node = node.child_by_field_name("name")
    names = [c for c in node.named_children if c.type in ("qualified_name", "identifier",
                                                            "generic_name")
             and (alias_node is None or c.start_byte != alias_node.start_byte)]
    if not names:
        return []
    path = _t(src, names[-1]).replace(" ", "").removeprefix("global::")
    if alias_node is not None:
        return [("import", path.rsplit(".", 1)[-1], path, _t(src, alias_node))]
    return [("import", "*", path, "")]


def _ruby(cap: str, node: Node, src: bytes) -> list[Binding]:
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


def _php(cap: str, node: Node, src: bytes) -> list[Binding]:
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


_HANDLERS: dict[str, Callable[[str, Node, bytes], list[Binding]]] = {
    "python": _python, "javascript": _js, "typescript": _js, "tsx": _js, "go": _go,
    "java": _java, "kotlin": _kotlin, "rust": _rust, "c": _c, "cpp": _c,
    "csharp": _csharp, "ruby": _ruby, "php": _php,
}
