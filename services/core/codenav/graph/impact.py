"""``dependencies`` and ``impact``: what a file imports and is imported by, and everything
that transitively depends on a symbol or a file (the blast radius of a change)."""

from __future__ import annotations

import posixpath
import time
from collections import defaultdict
from typing import Any

import psycopg

from codenav.access import Scope
from codenav.answers import stats
from codenav.db import queries as q
from codenav.errors import InvalidRequest
from codenav.graph.common import explain, locate, unseen
from codenav.navigate import _file, clean_path

MAX_DEPTH = 3
MAX_FILES = 200
MAX_EXPORTS = 10
MAX_DEPENDENTS = 300
MAX_CHAINS = 20
IMPACT_DEPTH = 10
POTENTIAL_CAP = 500
_DIRECTIONS = ("imports", "importers", "both")
_BARRELS = ("__init__.py", "__init__.pyi", "mod.rs", "lib.rs")
_RELATION = {"call": "calls", "type": "uses type", "extends": "extends",
             "implements": "implements", "import": "imports", "reexport": "re-exports"}


def _meta(conn: psycopg.Connection, scope: Scope, paths: list[str]) -> dict[str, dict[str, Any]]:
    """Language, first exported top-level names, and importer count of some files."""
    if not paths:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for path, language, imported_by in conn.execute(scope.sql(q.GRAPH_FILE_META),
                                                    scope.params(paths=paths)):
        out[path] = {"language": language, "exports": [], "imported_by": int(imported_by)}
    exports: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for path, name, kind, depth, _line in conn.execute(scope.sql(q.GRAPH_EXPORTS),
                                                      scope.params(paths=paths)):
        exports[path].append((depth, kind, name))
    for path, names in exports.items():
        # top-level: the shallowest declarations that are not namespaces (C#, C++, Ruby
        # nest types in them); namespaces only when a file declares nothing else
        depths = [d for d, k, _n in names if k != "module"] or [d for d, _k, _n in names]
        top = min(depths)
        if path in out:
            out[path]["exports"] = [n for d, k, n in names
                                    if d == top and (k != "module" or top == 0)][:MAX_EXPORTS]
    return out


def _walk_files(conn: psycopg.Connection, scope: Scope, start: str, depth: int,
                forward: bool) -> tuple[dict[str, dict[str, Any]], int]:
    """Files reached from ``start`` through imports (forward) or importers, breadth first;
    a link made only of references (a same-package use needs no import) is
    ``via: reference``; the start file's own imports name their spec."""
    found: dict[str, dict[str, Any]] = {}
    frontier = [start]
    seen = {start}
    specs: dict[str, str] = {}
    if forward:
        specs = {dst: spec for dst, spec in conn.execute(scope.sql(q.GRAPH_IMPORT_SPECS),
                                                         scope.params(path=start))}
    for level in range(1, depth + 1):
        if not frontier:
            break
        sql = scope.sql(q.GRAPH_LINKS_FROM) if forward else scope.sql(q.GRAPH_LINKS_TO)
        links: dict[str, tuple[str, str]] = {}
        for src, dst, n_imports, _refs in conn.execute(sql, scope.params(paths=frontier)):
            other, parent = (dst, src) if forward else (src, dst)
            via = "reference" if not n_imports else\
                (specs.get(other, "import") if level == 1 else "import")
            links.setdefault(other, (parent, via))
        nxt = []
        for other, (parent, via) in sorted(links.items()):
            if other in seen:
                continue
            seen.add(other)
            found[other] = {"path": other, "depth": level, "via": via}
            if level > 1:
                found[other]["from"] = parent
            nxt.append(other)
        frontier = nxt
    return found, len(found)


def dependencies(conn: psycopg.Connection, scope: Scope, path: str, direction: str = "both",
                 depth: int = 1) -> dict[str, Any]:
    """What ``path`` imports and what imports it, to ``depth`` (1-3), each file with its
    language, first exports and how many files import it."""
    started = time.monotonic()
    if direction not in _DIRECTIONS:
        raise InvalidRequest(f"direction must be one of {', '.join(_DIRECTIONS)}")
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidRequest(f"depth must be between 1 and {MAX_DEPTH}")
    clean = clean_path(path)
    row = _file(conn, scope, clean)
    answer: dict[str, Any] = {"repo": scope.name, "path": clean, "language": row[4]}
    truncated: dict[str, int] = {}
    lists: dict[str, list[dict[str, Any]]] = {}
    for key, forward in (("imports", True), ("importers", False)):
        if direction not in (key, "both"):
            continue
        found, total = _walk_files(conn, scope, clean, depth, forward)
        items = sorted(found.values(), key=lambda f: (f["depth"], f["path"]))[:MAX_FILES]
        meta = _meta(conn, scope, [f["path"] for f in items])
        for item in items:
            item.update(meta.get(item["path"], {}))
        lists[key] = items
        if total > len(items):
            truncated[key] = total
    answer.update(lists)
    if direction in ("imports", "both"):
        answer["external"] = [r[0] for r in conn.execute(scope.sql(q.GRAPH_EXTERNAL_OF),
                                                         scope.params(path=clean))]
    own = _meta(conn, scope, [clean]).get(clean, {})
    answer["exports"] = own.get("exports", [])
    answer["summary"] = {k: truncated.get(k, len(v)) for k, v in lists.items()}
    if "external" in answer:
        answer["summary"]["external"] = len(answer["external"])
    blind = unseen(conn, scope, truncated=truncated)
    if blind:
        answer["unseen"] = blind
    if not any(lists.values()) and not answer.get("external"):
        answer["empty"] = {"code": "no_dependencies", "message": f"{clean} imports no indexed "
                           "file and no indexed file imports it"}
    answer["_stats"] = stats(answer, {clean: int(row[2])}, started)
    return answer


def _is_path(conn: psycopg.Connection, scope: Scope, text: str) -> str | None:
    if "/" not in text and "." not in posixpath.basename(text):
        return None
    try:
        clean = clean_path(text)
    except InvalidRequest:
        return None
    found = conn.execute(scope.sql(q.FILE_BY_PATH), scope.params(path=clean)).fetchone()
    return clean if found is not None else None


def impact(conn: psycopg.Connection, scope: Scope, symbol_or_path: str,
           depth: int = 3) -> dict[str, Any]:
    """Everything that transitively depends on a symbol (calls, type uses, extends,
    implements, imports, overrides) or on a file (imports and references), with the chains
    that lead there, the affected files, and re-exports that a rename must update."""
    started = time.monotonic()
    if not 1 <= depth <= IMPACT_DEPTH:
        raise InvalidRequest(f"depth must be between 1 and {IMPACT_DEPTH}")
    text = symbol_or_path.strip()
    if not text:
        raise InvalidRequest("give a symbol or a path")
    path = _is_path(conn, scope, text)
    if path is not None:
        answer = _file_impact(conn, scope, path, depth)
    else:
        answer = _symbol_impact(conn, scope, text, depth)
    answer["_stats"] = stats(answer, {}, started)
    return answer


Node = tuple[str, str]
"""(path, qualname) of a dependent; qualname '' is file-level code."""


def _symbol_impact(conn: psycopg.Connection, scope: Scope, symbol: str,
                   depth: int) -> dict[str, Any]:
    rows, total_targets = locate(conn, scope, symbol, limit=10)
    targets = list(dict.fromkeys((r[0], r[2]) for r in rows))  # overloads: one name
    kinds = {(r[0], r[2]): r[3] for r in rows}
    answer: dict[str, Any] = {"repo": scope.name, "target": symbol, "target_kind": "symbol",
                              "declarations": [{"path": r[0], "qualname": r[2], "kind": r[3],
                                                "line": r[5]} for r in rows]}
    parent: dict[Node, tuple[Node, str, int]] = {}
    level: dict[Node, int] = {t: 0 for t in targets}
    dependents: list[dict[str, Any]] = []
    reexports: list[dict[str, Any]] = []
    total = 0
    frontier = list(targets)
    for d in range(1, depth + 1):
        if not frontier:
            break
        found = conn.execute(scope.sql(q.GRAPH_EDGES_TO), {
            **scope.params(), "paths": [p for p, _q in frontier],
            "quals": [qq for _p, qq in frontier], "verified": True, "kinds": None,
            "k": 20000}).fetchall()
        found = _overrides(conn, scope, frontier, kinds) + found  # the stronger relation
        nxt: list[Node] = []
        for src, line, within, kind, _how, dst_path, dst_qual, _ok, _n in found:
            node = (src, within)
            if kind in ("import", "reexport"):
                barrel = kind == "reexport" or posixpath.basename(src) in _BARRELS or\
                    posixpath.basename(src).startswith("index.")
                if barrel and d == 1 and len(reexports) < MAX_DEPENDENTS:
                    reexports.append({"path": src, "line": line, "name": dst_qual})
                node = (src, "")
            if node in level or node == (dst_path, dst_qual):
                continue
            level[node] = d
            parent[node] = ((dst_path, dst_qual), str(_RELATION.get(kind, kind)), int(line))
            total += 1
            if len(dependents) < MAX_DEPENDENTS:
                dependents.append({"path": src, "qualname": within, "line": line,
                                   "relation": _RELATION.get(kind, kind), "depth": d,
                                   "depends_on": dst_qual})
            if node[1] and kind not in ("import", "reexport"):
                nxt.append(node)
                kinds.setdefault(node, "")
        frontier = nxt
    answer["dependents"] = dependents
    answer["chains"] = _chains(parent, level)
    answer["files"] = _files(dependents)
    answer["reexports"] = reexports
    relations: dict[str, int] = defaultdict(int)
    for item in dependents:
        relations[item["relation"]] += 1
    answer["summary"] = {"dependents": total, "files": len(answer["files"]),
                         "max_depth": max((x["depth"] for x in dependents), default=0),
                         "by_relation": dict(sorted(relations.items()))}
    potential = _potential_count(conn, scope, rows)
    truncated = {"dependents": total} if total > len(dependents) else {}
    if total_targets > len(targets):
        truncated["declarations"] = total_targets
    extra: dict[str, Any] = {"truncated": truncated}
    if potential:
        counted = f"{potential}+" if potential >= POTENTIAL_CAP else str(potential)
        extra["potential_only"] = (f"{counted} reference(s) to {rows[0][1]!r} match the "
                                   "name only and are not followed (see references)")
    explain(answer, conn, scope, symbol, bool(targets), bool(dependents),
            {"code": "no_dependents", "message": f"nothing in the index depends on {symbol!r} "
             "through a verified edge"}, **extra)
    return answer


def _overrides(conn: psycopg.Connection, scope: Scope, frontier: list[Node],
               kinds: dict[Node, str]) -> list[tuple]:
    """Methods of subclasses that override a method in the frontier: changing the method's
    contract changes theirs."""
    methods = [(p, qq) for p, qq in frontier if kinds.get((p, qq)) in ("method", "function")
               and "." in qq]
    if not methods:
        return []
    owners = sorted({(p, qq.rpartition(".")[0]) for p, qq in methods})
    names = defaultdict(set)
    for p, qq in methods:
        names[(p, qq.rpartition(".")[0])].add(qq.rpartition(".")[2])
    subs = conn.execute(scope.sql(q.GRAPH_SUBCLASSES), {
        **scope.params(), "paths": [o[0] for o in owners],
        "quals": [o[1] for o in owners]}).fetchall()
    wanted = []
    for src, cls, _kind, line, dst_path, dst_qual, ok, _how in subs:
        if ok:
            for name in names.get((dst_path, dst_qual), ()):
                wanted.append((src, f"{cls}.{name}", line, dst_path, f"{dst_qual}.{name}"))
    if not wanted:
        return []
    present = {(p, qq): (line, kind) for p, qq, kind, line, _sig in conn.execute(
        scope.sql(q.GRAPH_SYMBOL_AT), {**scope.params(), "paths": [w[0] for w in wanted],
                            "quals": [w[1] for w in wanted]})}
    out = []
    for src, qual, _line, dst_path, dst_qual in wanted:
        if (src, qual) in present:
            line, kind = present[(src, qual)]
            kinds[(src, qual)] = kind
            out.append((src, line, qual, "overrides", "override", dst_path, dst_qual, True, 0))
    return out


def _chains(parent: dict[Node, tuple[Node, str, int]], level: dict[Node, int]) -> list[str]:
    """The longest dependency chains, written ``a <-calls- b <-extends- c``."""
    parents = {up for up, _relation, _line in parent.values()}
    leaves = [n for n in parent if n not in parents]
    leaves.sort(key=lambda n: (-level[n], n))
    out = []
    for leaf in leaves[:MAX_CHAINS]:
        parts = []
        node = leaf
        while node in parent:
            up, relation, _line = parent[node]
            parts.append(f"{_label(node)} -{relation}-> ")
            node = up
        parts.append(_label(node))
        out.append("".join(parts))
    return out


def _label(node: Node) -> str:
    path, qual = node
    return f"{qual} ({path})" if qual else path


def _files(dependents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    files: dict[str, dict[str, Any]] = {}
    for item in dependents:
        entry = files.setdefault(item["path"], {"path": item["path"], "dependents": 0,
                                                "min_depth": item["depth"]})
        entry["dependents"] += 1
        entry["min_depth"] = min(entry["min_depth"], item["depth"])
    return sorted(files.values(), key=lambda f: (f["min_depth"], -f["dependents"], f["path"]))


def _potential_count(conn: psycopg.Connection, scope: Scope, rows: list[tuple]) -> int:
    """Name-only references (counted up to POTENTIAL_CAP: ``references`` lists them)."""
    if not rows:
        return 0
    found = conn.execute(scope.sql(q.GRAPH_UNRESOLVED_COUNT), {**scope.params(), "name": rows[0][1],
                                                    "cap": POTENTIAL_CAP}).fetchone()
    return int(found[0]) if found else 0


def _file_impact(conn: psycopg.Connection, scope: Scope, path: str, depth: int) -> dict[str, Any]:
    found, total = _walk_files(conn, scope, path, depth, forward=False)
    items = sorted(found.values(), key=lambda f: (f["depth"], f["path"]))[:MAX_FILES]
    parent = {(f["path"], ""): ((f.get("from", path), ""), "imports" if f["via"] != "reference"
                                else "references", 0) for f in found.values()}
    level = {(f["path"], ""): f["depth"] for f in found.values()}
    answer: dict[str, Any] = {"repo": scope.name, "target": path, "target_kind": "file",
                              "files": [{"path": f["path"], "depth": f["depth"],
                                         "via": f["via"]} for f in items],
                              "chains": _chains(parent, level)}
    answer["summary"] = {"files": total, "max_depth": max((f["depth"] for f in items),
                                                           default=0)}
    truncated = {"files": total} if total > len(items) else {}
    blind = unseen(conn, scope, truncated=truncated)
    if blind:
        answer["unseen"] = blind
    if not items:
        answer["empty"] = {"code": "no_dependents", "message": f"no indexed file imports or "
                           f"references {path}"}
    return answer
