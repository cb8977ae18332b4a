"""What a file imports, as written: module paths, include files, package names.

Strings are kept close to the source (``./util``, ``java.util.*``, ``"local.h"``,
``<stdio.h>``, ``.models``) so that resolution to files can happen later, per language.
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

_SCOPE_TYPES = frozenset({"namespace_declaration", "namespace_definition", "declaration_list",
                          "file_scoped_namespace_declaration", "import_list", "program",
                          "linkage_specification", "preproc_ifdef", "preproc_if",
                          "preproc_else", "preproc_elif", "body_statement", "module"})
# Python imports guarded at module level: try/except ImportError, if TYPE_CHECKING.
_PYTHON_SCOPE_TYPES = _SCOPE_TYPES | {"if_statement", "try_statement", "block",
                                     "else_clause", "elif_clause", "except_clause",
                                     "finally_clause"}
_REQUIRE_DEPTH = 6
"""How deep under a top-level statement ``require(...)`` is looked for."""


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _walk_top(root: Node, scopes: frozenset[str], depth: int = 0) -> Iterator[Node]:
    for child in root.named_children:
        yield child
        if depth < 3 and child.type in scopes:
            yield from _walk_top(child, scopes, depth + 1)


def _python(node: Node) -> list[str]:
    out: list[str] = []
    if node.type == "import_statement":
        for child in node.named_children:
            target = child.child_by_field_name("name") if child.type == "aliased_import" \
                else child
            if target is not None:
                out.append(_text(target))
    elif node.type in ("import_from_statement", "future_import_statement"):
        module = node.child_by_field_name("module_name")
        mod = _text(module) if module is not None else "__future__"
        out.append(mod)
        if mod.strip(".") == "" or node.type == "import_from_statement":
            for child in node.children_by_field_name("name"):
                target = child.child_by_field_name("name") if child.type == "aliased_import" \
                    else child
                name = _text(target)
                if name:
                    out.append(f"{mod}.{name}" if not mod.endswith(".") else f"{mod}{name}")
    return out


def _js(node: Node) -> list[str]:
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


def _go(node: Node) -> list[str]:
    out = []
    for child in node.named_children:
        specs = child.named_children if child.type == "import_spec_list" else [child]
        for spec in specs:
            if spec.type == "import_spec":
                out.append(_text(spec.child_by_field_name("path")).strip('"`'))
    return out


def _java(node: Node) -> list[str]:
    text = _text(node).strip().removeprefix("import").strip().removesuffix(";").strip()
    text = text.removeprefix("static ").strip()
    return [text.replace(" ", "")] if text else []


def _kotlin(node: Node) -> list[str]:
    if node.type != "import_header":
        return []
    text = _text(node).strip().removeprefix("import").strip()
    text = text.split(" as ")[0].strip()
    return [text.replace(" ", "")] if text else []


def _rust(node: Node) -> list[str]:
    if node.type == "use_declaration":
        arg = node.child_by_field_name("argument")
        return [_text(arg).replace(" ", "").replace("\n", "")] if arg is not None else []
    if node.type == "extern_crate_declaration":
        return [_text(node.child_by_field_name("name"))]
    if node.type == "mod_item" and node.child_by_field_name("body") is None:
        return [f"mod {_text(node.child_by_field_name('name'))}"]
    return []


def _c(node: Node) -> list[str]:
    if node.type != "preproc_include":
        return []
    return [_text(node.child_by_field_name("path")).strip()]


def _csharp(node: Node) -> list[str]:
    if node.type != "using_directive":
        return []
    text = _text(node).strip().removeprefix("global").strip().removeprefix("using").strip()
    text = text.removesuffix(";").strip().removeprefix("static ").strip()
    if "=" in text:
        text = text.split("=", 1)[1].strip()
    return [text] if text else []


def _ruby(node: Node) -> list[str]:
    if node.type != "call":
        return []
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


def _php(node: Node) -> list[str]:
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


_JS_TYPES = frozenset({"import_statement", "export_statement", "lexical_declaration",
                       "variable_declaration", "expression_statement"})
_EXTRACTORS = {
    "python": (_python, frozenset({"import_statement", "import_from_statement",
                                   "future_import_statement"})),
    "javascript": (_js, _JS_TYPES), "typescript": (_js, _JS_TYPES), "tsx": (_js, _JS_TYPES),
    "go": (_go, frozenset({"import_declaration"})),
    "java": (_java, frozenset({"import_declaration"})),
    "kotlin": (_kotlin, frozenset({"import_header"})),
    "rust": (_rust, frozenset({"use_declaration", "extern_crate_declaration", "mod_item"})),
    "c": (_c, frozenset({"preproc_include"})), "cpp": (_c, frozenset({"preproc_include"})),
    "csharp": (_csharp, frozenset({"using_directive"})),
    "ruby": (_ruby, frozenset({"call"})),
    "php": (_php, frozenset({"namespace_use_declaration", "expression_statement"})),
}


def extract_imports(language: str, root: Node) -> list[str]:
    entry = _EXTRACTORS.get(language)
    if entry is None:
        return []
    fn, types = entry
    seen: dict[str, None] = {}
    scopes = _PYTHON_SCOPE_TYPES if language == "python" else _SCOPE_TYPES
    for node in _walk_top(root, scopes):
        if node.type not in types:
            continue
        for spec in fn(node):
            if spec and len(spec) < 300:
                seen.setdefault(spec, None)
    return list(seen)
