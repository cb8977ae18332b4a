"""Swift: its files, the nodes its chunks and symbols come from (``SPEC``), the tree-sitter
patterns of the references its code makes, its imports, and its modules (``module_of``: the
files of one build target see each other's declarations; ``import Foo`` brings module
``Foo``'s).

One grammar node, ``class_declaration``, declares classes, structs, enums, actors and
extensions (its ``declaration_kind`` says which). An extension declares nothing itself: it
opens a scope whose members are the extended type's (``Renderer.reset``), as a Rust impl
block's are."""

# ruff: noqa: E501

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from tree_sitter import Node

from codenav.lang.base import DIR, END, EXAMPLE, TEST, Convention, Imports, Language
from codenav.lang.spec import LangSpec, field_of
from codenav.lang.syntax import Binding
from codenav.lang.syntax import node_text as _text

REFERENCES = r"""
(call_expression . (simple_identifier) @call . (call_suffix (value_arguments "("))) @call.expr
(call_expression . (simple_identifier) @call . (call_suffix (lambda_literal))) @call.expr
(call_expression . (navigation_expression (navigation_suffix (simple_identifier) @call) .) . (call_suffix (value_arguments "("))) @call.expr
(call_expression . (navigation_expression (navigation_suffix (simple_identifier) @call) .) . (call_suffix (lambda_literal))) @call.expr
(inheritance_specifier (user_type (type_identifier) @extends))
(user_type (type_identifier) @type)
(type_parameter (type_identifier) @tparam)
(property_declaration (pattern (simple_identifier) @var.name) (type_annotation (user_type) @var.type))
(property_declaration (pattern (simple_identifier) @var.name) (call_expression . (simple_identifier) @var.call))
(parameter (simple_identifier) @var.name (user_type) @var.type)
(function_declaration (simple_identifier) @ret.name (user_type) @ret.type (function_body))
"""

_TYPE_KINDS = {"class": "class", "struct": "class", "actor": "class", "enum": "enum"}


def _kind(node: Node, kind: str) -> str:
    if node.type == "class_declaration":
        word = field_of(node, "declaration_kind")
        return _TYPE_KINDS.get(_text(word), kind)
    return kind


def _scope_kind(node: Node) -> str | None:
    """An extension opens a scope of the type it extends ('': no symbol of its own)."""
    if node.type == "class_declaration" and \
            _text(field_of(node, "declaration_kind")) == "extension":
        return ""
    return None


def _name(node: Node) -> tuple[str, str | None] | None:
    if node.type in ("init_declaration", "deinit_declaration"):
        return node.type.removesuffix("_declaration"), None
    if node.type == "subscript_declaration":
        return "subscript", None
    name = field_of(node, "name")
    if node.type == "class_declaration" and name is not None and name.type != "type_identifier":
        return _text(name).split("<")[0].strip(), None  # an extension names a type
    return None


def _bases(node: Node) -> list[str]:
    return [_text(field_of(spec, "inherits_from") or spec) for spec in node.named_children
            if spec.type == "inheritance_specifier"]


SPEC = LangSpec(
    grammar="swift",
    defs={"class_declaration": "class", "protocol_declaration": "interface",
          "function_declaration": "function", "protocol_function_declaration": "function",
          "init_declaration": "constructor", "deinit_declaration": "function",
          "subscript_declaration": "function", "typealias_declaration": "type"},
    bodies=frozenset({"class_body", "enum_class_body", "protocol_body"}),
    comments=frozenset({"comment", "multiline_comment"}),
    imports=frozenset({"import_declaration"}),
    private_keywords=frozenset({"private", "fileprivate"}),
    scope_kind=_scope_kind,
    bases=_bases,
    name=_name,
    kind=_kind,
)


_IMPORT_KINDS = frozenset({"typealias", "struct", "class", "enum", "protocol", "let", "var",
                           "func"})


def _import_specs(node: Node) -> list[str]:
    ident = [c for c in node.named_children if c.type == "identifier"]
    return [_text(ident[0]).replace(" ", "")] if ident else []


def _import_bindings(cap: str, node: Node, src: bytes) -> list[Binding]:
    """``import Foo`` brings a whole module (none of this repository's files: a Swift
    module is a build target, not a file), ``import struct Foo.Bar`` one declaration."""
    spec = _import_specs(node)
    if not spec:
        return []
    kind_word = any(not c.is_named and c.type in _IMPORT_KINDS for c in node.children)
    if not kind_word:
        return [("import", "*", spec[0], "")]
    return [("import", spec[0].rsplit(".", 1)[-1], spec[0], "")]


IMPORTS = Imports(
    nodes=frozenset({"import_declaration"}),
    specs=_import_specs,
    query="(import_declaration) @i",
    bindings=_import_bindings,
)

CONVENTIONS = (
    Convention(TEST, ("swift",), DIR + r"[^/]*(Tests|UITests)" + END,
               "Xcode and SwiftPM test targets (AppTests/, AppUITests/)"),
    Convention(EXAMPLE, ("swift",), DIR + r"(Examples?|Samples?|Demos?)" + END,
               "example apps (SwiftPM and Xcode capitalise their folders)"),
)
"""Swift's (SwiftPM ``Tests/`` and ``FooTests.swift`` are the shared rules')."""

_TARGET = re.compile(r"\.(target|executableTarget|testTarget|macro|plugin)\s*\(")
_ARG = re.compile(r'\b(name|path)\s*:\s*"([^"\\]*)"')
_SOURCE_DIRS = ("Sources", "Source", "src", "srcs")
"""Where SwiftPM looks for a target without a ``path``: ``<dir>/<name>``, tests in
``Tests/<name>``."""


MAX_TARGETS = 1000
"""Targets read from one manifest (a large package declares a few dozen)."""
MAX_TARGET_CHARS = 8000
"""How far one target's arguments are read: a manifest with unbalanced parentheses costs
at most this per target, not the rest of the file each time."""


def package_targets(manifest: str, text: str) -> list[tuple[str, str]]:
    """The targets a ``Package.swift`` declares, as (directory, module name): the ``path``
    it gives, else where SwiftPM looks by default, relative to the repository."""
    base = posixpath.dirname(manifest)
    out: list[tuple[str, str]] = []
    for n, match in enumerate(_TARGET.finditer(text)):
        if n == MAX_TARGETS:
            break
        args = _top_level(text, match.end(), match.end() + MAX_TARGET_CHARS)
        found = dict(_ARG.findall(args))
        name = found.get("name")
        if not name:
            continue
        if "path" in found:
            dirs = [found["path"].strip("/")]
        elif match.group(1) == "testTarget":
            dirs = [f"Tests/{name}"]
        else:
            dirs = [f"{d}/{name}" for d in _SOURCE_DIRS]
        out += [(posixpath.normpath(posixpath.join(base, d)), name) for d in dirs]
    return out


def _top_level(text: str, start: int, end: int) -> str:
    """A call's arguments from ``start`` to its closing parenthesis (or ``end``), without
    what nested brackets and strings hold (a dependency's ``.product(name: ...)``, a
    description)."""
    out: list[str] = []
    depth, i, in_string = 0, start, False
    end = min(end, len(text))
    while i < end:
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
            if depth == 0:
                out.append(ch)
        elif ch == '"':
            in_string = True
            if depth == 0:
                out.append(ch)
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0:
            out.append(ch)
        i += 1
    return "".join(out)


def module_of(path: str, targets: Mapping[str, str] | None = None) -> str:
    """The module (build target) a Swift file belongs to: the target of a ``Package.swift``
    whose directory holds it (``targets``: directory -> module, from ``package_targets``
    of every manifest; the deepest directory wins), else by layout: ``Sources/<Target>/...``
    and ``Tests/<Target>/...``, else the top directory (an Xcode project's app or framework
    folder), else '' (the root). Its files see each other's declarations without an
    import."""
    parts = path.split("/")
    if targets:
        for end in range(len(parts) - 1, 0, -1):
            module = targets.get("/".join(parts[:end]))
            if module is not None:
                return module
    for i, part in enumerate(parts[:-2]):
        if part in ("Sources", "Tests"):
            return parts[i + 1]
    return parts[0] if len(parts) > 1 else ""


LANGUAGE = Language("swift", (".swift",), SPEC, REFERENCES, family="swift", imports=IMPORTS,
                    implicit_this=True, conventions=CONVENTIONS)
