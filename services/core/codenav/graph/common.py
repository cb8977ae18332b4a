"""What the graph tools share: finding declarations by name, and saying what an answer
could not see (skipped files, code without a graph, parse failures, a stale graph,
potential-only references, caps)."""

from __future__ import annotations

import time
from typing import Any

import psycopg

from codenav.access import Scope
from codenav.answers import empty_reason
from codenav.db import queries as q
from codenav.graph.patterns import PATTERNS
from codenav.lang import family
from codenav.versions import GRAPH_VERSION

NON_CODE = ("text", "markdown", "rst", "json", "yaml", "toml", "ini", "xml", "properties",
            "html", "css", "make", "dockerfile", "cmake", "gradle", "starlark", "sql",
            "graphql", "protobuf", "terraform")
"""Languages that have no code graph to miss (files in other unparsed languages count)."""
_COVERAGE_TTL_S = 30.0
_coverage_cache: dict[tuple[int, Any, int], tuple[float, dict[str, Any]]] = {}


def split_symbol(symbol: str) -> tuple[str, str | None]:
    """``Class.method`` / ``Class::method`` / ``a\\b\\C`` -> (name, qualified name or None)."""
    text = symbol.strip().replace("::", ".").replace("\\", ".").replace("#", ".").strip(".")
    if "." in text:
        return text.rsplit(".", 1)[1], text
    return text, None


def locate(conn: psycopg.Connection, scope: Scope, symbol: str, path: str | None = None,
           kinds: list[str] | None = None, limit: int = 10) -> tuple[list[tuple], int]:
    """Declarations named ``symbol`` (a qualified name matches exactly or as a suffix),
    best first, and how many there are in all."""
    name, qual = split_symbol(symbol)
    params = {**scope.params(), "name": name.lower(), "qual": qual.lower() if qual else None,
              "suffix": f"%.{qual.lower()}" if qual else None, "path": path, "kinds": kinds,
              "k": limit}
    rows = conn.execute(scope.sql(q.GRAPH_LOCATE), params).fetchall()
    total = len(rows)
    if total >= limit:
        found = conn.execute(scope.sql(q.GRAPH_LOCATE_COUNT), params).fetchone()
        total = int(found[0]) if found else total
    return rows, total


def coverage(conn: psycopg.Connection, scope: Scope) -> dict[str, Any]:
    """What no graph answer about this repository can see (cached briefly per index run)."""
    key = (scope.at.id, scope.at.indexed_at,
           scope.at.overlay.stored if scope.at.overlay is not None else 0)
    now = time.monotonic()
    cached = _coverage_cache.get(key)
    if cached is not None and now - cached[0] < _COVERAGE_TTL_S:
        return dict(cached[1])
    row = conn.execute(scope.sql(q.GRAPH_COVERAGE), {**scope.params(), "graphed": list(PATTERNS),
                                          "noncode": list(NON_CODE)}).fetchone()
    skipped, ungraphed, languages, failed, version = row if row else (0, 0, [], 0, None)
    out: dict[str, Any] = {}
    if skipped:
        out["skipped_files"] = int(skipped)
    if ungraphed:
        out["files_without_graph"] = int(ungraphed)
        out["languages_without_graph"] = sorted(languages or [])
    if failed:
        out["parse_failed_files"] = int(failed)
    if version is None:
        out["graph"] = "not built yet: the repository has not been indexed with the graph"
    elif version != GRAPH_VERSION:
        out["graph"] = "out of date: it is rebuilt by the next index run"
    if len(_coverage_cache) > 256:
        _coverage_cache.clear()
    _coverage_cache[key] = (now, out)
    return dict(out)


def unseen(conn: psycopg.Connection, scope: Scope, **extra: Any) -> dict[str, Any] | None:
    """The ``unseen`` block of an answer: repository coverage plus this answer's own
    blind spots (potential-only references, caps with their real totals)."""
    out = coverage(conn, scope)
    overlay = scope.at.overlay
    if overlay is not None and overlay.graph < overlay.version:
        out["overlay"] = "the code graph of your latest local edits is being rebuilt: " \
            "references into or out of them may be missing or old for a few seconds"
    if overlay is not None and overlay.over_limit:
        out["overlay"] = "your local edits are not included (" + overlay.over_limit + ")"
    for key, value in extra.items():
        if value:
            out[key] = value
    return out or None


def explain(answer: dict[str, Any], conn: psycopg.Connection, scope: Scope, symbol: str,
            found_symbol: bool, found_any: bool, none_found: dict[str, str],
            **extra: Any) -> None:
    """What a graph answer could not see (``unseen``), and why it is empty when it is: no
    such symbol, or ``none_found``."""
    blind = unseen(conn, scope, **extra)
    if blind:
        answer["unseen"] = blind
    if not found_symbol:
        answer["empty"] = no_symbol(conn, scope, symbol)
    elif not found_any:
        answer["empty"] = none_found


def no_symbol(conn: psycopg.Connection, scope: Scope, symbol: str,
              path: str | None = None) -> dict[str, str]:
    empty = empty_reason(conn, scope, path=path)
    if empty["code"] != "no_match":
        return empty
    where = f" in {path}" if path else ""
    return {"code": "no_symbol", "message": f"no declaration named {symbol!r} is indexed{where}; "
            "check the spelling, or use search to find it"}


def full_name(path: str, language: str, package: str, qualname: str) -> str:
    """The name a declaration has from anywhere: ``com.acme.model.Account``,
    ``app.models.User``, ``App\\Models\\User``; the qualified name where the language
    has no package line (C#, C++ and Ruby qualified names hold their namespaces)."""
    if language == "python":
        module = path.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")
        return f"{module}.{qualname}"
    if language == "php" and package:
        return f"{package}\\{qualname.replace('.', chr(92))}"
    if package and family(language) in ("jvm", "go"):
        return f"{package}.{qualname}"
    return qualname


def declaration(row: tuple) -> dict[str, Any]:
    """A GRAPH_LOCATE row as an answer item."""
    (path, name, qualname, kind, parent, start, end, signature, doc, exported, bases,
     language, package) = row
    item: dict[str, Any] = {"path": path, "name": name, "qualname": qualname, "kind": kind,
                            "full_name": full_name(path, language, package, qualname),
                            "start_line": start, "end_line": end, "signature": signature,
                            "language": language}
    if parent:
        item["parent"] = parent
    if doc:
        item["doc"] = doc
    if exported:
        item["exported"] = True
    if bases:
        item["bases"] = list(bases)
    return item


def file_priors(conn: psycopg.Connection, scope: Scope, paths: list[str]) -> dict[str, float]:
    """Each file's centrality prior in [0, 1] (absent: the graph has not ranked it)."""
    if not paths:
        return {}
    return {path: float(prior) for path, prior in conn.execute(scope.sql(q.GRAPH_PRIORS),
                                                              scope.params(paths=paths))}
