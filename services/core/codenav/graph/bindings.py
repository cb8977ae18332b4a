"""Import bindings and package declarations as ``refs`` rows (each language declares its
import patterns and what they bind: ``codenav.lang.<language>``, ``Language.imports``).

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

from codenav import lang

Row = tuple[str, str, str, str, int, str]
ScopeAt = Callable[[int], str]

def patterns(language: str) -> str:
    """This language's import patterns, captures renamed ``@import.<x>`` so they can join
    the reference patterns in one query (one walk of the tree)."""
    found = lang.find(language)
    source = found.imports.query if found is not None and found.imports is not None else ""
    return re.sub(r"@(?!_)(\w+)", r"@import.\1", source)


def rows(language: str, cap: str, node: Node, src: bytes, scope_at: ScopeAt) -> list[Row]:
    """The rows of one captured import node (``cap`` without its ``import.`` prefix)."""
    out: list[Row] = []
    line = node.start_point[0] + 1
    imports = lang.get(language).imports
    assert imports is not None  # only called for captures of its own query
    for kind, name, spec, alias in imports.bindings(cap, node, src):
        if kind == "package":
            out.append(("package", name, "", "", line, ""))
        elif spec or kind == "reexport":
            out.append((kind, name, spec, alias, line, scope_at(line)))
    return out
