"""What a file imports, as written: module paths, include files, package names.

Strings are kept close to the source (``./util``, ``java.util.*``, ``"local.h"``,
``<stdio.h>``, ``.models``) so that resolution to files can happen later, per language.
Each language declares its import statements and how to read them (``Language.imports``).
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from codenav import lang

_SCOPE_TYPES = frozenset({"namespace_declaration", "namespace_definition", "declaration_list",
                          "file_scoped_namespace_declaration", "import_list", "program",
                          "linkage_specification", "preproc_ifdef", "preproc_if",
                          "preproc_else", "preproc_elif", "body_statement", "module"})
# Imports guarded at module level (Python): try/except ImportError, if TYPE_CHECKING.
_GUARDED_SCOPE_TYPES = _SCOPE_TYPES | {"if_statement", "try_statement", "block",
                                     "else_clause", "elif_clause", "except_clause",
                                     "finally_clause"}

def _walk_top(root: Node, scopes: frozenset[str], depth: int = 0) -> Iterator[Node]:
    for child in root.named_children:
        yield child
        if depth < 3 and child.type in scopes:
            yield from _walk_top(child, scopes, depth + 1)


def extract_imports(language: str, root: Node) -> list[str]:
    found = lang.find(language)
    imports = found.imports if found is not None else None
    if imports is None:
        return []
    seen: dict[str, None] = {}
    scopes = _GUARDED_SCOPE_TYPES if imports.guarded else _SCOPE_TYPES
    for node in _walk_top(root, scopes):
        if node.type not in imports.nodes:
            continue
        for spec in imports.specs(node):
            if spec and len(spec) < 300:
                seen.setdefault(spec, None)
    return list(seen)
