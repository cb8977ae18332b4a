"""``definition``, ``references`` and ``implementations``: a symbol's declaration with
the types it mentions, who uses it (verified apart from name-only matches), and the classes
that implement or extend it."""

from __future__ import annotations

import re
import time
from collections import defaultdict
from typing import Any

import psycopg

from codenav.access import Scope
from codenav.answers import stats
from codenav.db import queries as q
from codenav.errors import InvalidRequest
from codenav.graph.common import declaration, explain, locate, no_symbol, unseen
from codenav.navigate import clean_path

MAX_TARGETS = 10
MAX_VERIFIED = 200
MAX_POTENTIAL = 50
MAX_TYPES = 12
MAX_IMPLEMENTATIONS = 100
MAX_METHODS = 30
IMPLEMENTATION_DEPTH = 5
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
CLASS_KINDS = ["class", "interface", "enum", "type", "module"]
_CALLABLE = frozenset({"function", "method", "constructor", "macro", "property"})


def _sizes(conn: psycopg.Connection, scope: Scope, paths: set[str]) -> dict[str, int]:
    if not paths:
        return {}
    return {r[0]: int(r[1]) for r in conn.execute(scope.sql(q.FILE_META),
                                                  scope.params(paths=sorted(paths)))}


def definition(conn: psycopg.Connection, scope: Scope, symbol: str,
               path: str | None = None) -> dict[str, Any]:
    """The declarations of ``symbol``, each with the declarations of the types its
    signature mentions (resolved the way the file's imports resolve)."""
    started = time.monotonic()
    if not symbol.strip():
        raise InvalidRequest("symbol is empty", hint="give a name like 'User' or 'User.save'")
    clean = clean_path(path) if path else None
    rows, total = locate(conn, scope, symbol, clean, limit=MAX_TARGETS)
    results = []
    for row in rows:
        item = declaration(row)
        words = set(_IDENT.findall(item["signature"]))
        types: dict[tuple[str, str], dict[str, Any]] = {}
        for name, dst_path, dst_qual, kind, start, end, signature, doc in conn.execute(
                scope.sql(q.GRAPH_TYPES_OF), {**scope.params(), "path": item["path"],
                                   "scope": item["qualname"]}):
            if name not in words or (dst_path, dst_qual) in types or\
                    (dst_path, dst_qual) == (item["path"], item["qualname"]):
                continue
            entry: dict[str, Any] = {"name": name, "qualname": dst_qual, "kind": kind,
                                     "path": dst_path, "start_line": start, "end_line": end,
                                     "signature": signature}
            if doc:
                entry["doc"] = doc
            types[(dst_path, dst_qual)] = entry
        if types:
            item["types"] = list(types.values())[:MAX_TYPES]
        unresolved = _unresolved_types(conn, scope, item, words)
        if unresolved:
            item["unresolved_types"] = unresolved
        results.append(item)
    answer: dict[str, Any] = {"repo": scope.name, "symbol": symbol, "results": results}
    extra: dict[str, Any] = {}
    if total > len(results):
        extra["truncated"] = {"declarations": total}
    blind = unseen(conn, scope, **extra)
    if blind:
        answer["unseen"] = blind
    if not results:
        answer["empty"] = no_symbol(conn, scope, symbol, clean)
    paths = {r["path"] for r in results} | {t["path"] for r in results for t in r.get("types", [])}
    answer["_stats"] = stats(answer, _sizes(conn, scope, paths), started)
    return answer


def _unresolved_types(conn: psycopg.Connection, scope: Scope, item: dict[str, Any],
                      words: set[str]) -> list[str]:
    """Type names in the signature that resolved to no indexed declaration (libraries)."""
    refs = [(o, n) for o, n in conn.execute(scope.sql(q.GRAPH_TYPE_REFS), {
        **scope.params(), "path": item["path"], "scope": item["qualname"]}) if n in words]
    if not refs:
        return []
    resolved = {r[0] for r in conn.execute(scope.sql(q.GRAPH_RESOLVED_ORDS), scope.params(
        path=item["path"], ords=[o for o, _n in refs]))}
    return sorted({n for o, n in refs if o not in resolved})


def _reason(kind: str, qualifier: str) -> str:
    if not qualifier:
        return "the name is not declared in the file nor reached through its imports"
    if qualifier == "this":
        return "not found in the enclosing class or its resolved base classes"
    if qualifier == "super":
        return "not found in the resolved base classes"
    if qualifier == "<expr>":
        return "called on an expression whose type is not known"
    return f"on `{qualifier}`, whose type or module could not be resolved"


def _target_kinds(kinds: set[str]) -> list[str]:
    """Which reference kinds can name a declaration of these kinds."""
    out = set()
    if kinds & _CALLABLE or kinds & {"class", "enum", "type"}:
        out.add("call")
    if kinds - _CALLABLE:
        out |= {"type", "extends", "implements"}
    return sorted(out)


def references(conn: psycopg.Connection, scope: Scope, symbol: str, path: str | None = None,
               include_potential: bool = True) -> dict[str, Any]:
    """Verified references to ``symbol`` (how each resolved), then potential matches by
    name only (why each did not resolve)."""
    started = time.monotonic()
    if not symbol.strip():
        raise InvalidRequest("symbol is empty", hint="give a name like 'User' or 'User.save'")
    clean = clean_path(path) if path else None
    rows, total_targets = locate(conn, scope, symbol, clean, limit=MAX_TARGETS)
    targets = [{"path": r[0], "qualname": r[2], "kind": r[3], "line": r[5]} for r in rows]
    answer: dict[str, Any] = {"repo": scope.name, "symbol": symbol, "targets": targets}
    verified: list[dict[str, Any]] = []
    potential: list[dict[str, Any]] = []
    n_verified = n_potential = 0
    if targets:
        # overloads (and a Scala class with its companion) are declarations of one name
        # in one file: edges are to the name, so each is asked for once
        named = list(dict.fromkeys((t["path"], t["qualname"]) for t in targets))
        several = len(named) > 1
        edges = conn.execute(scope.sql(q.GRAPH_EDGES_TO), {
            **scope.params(), "paths": [p for p, _q in named],
            "quals": [qq for _p, qq in named], "verified": None, "kinds": None,
            "k": MAX_VERIFIED + MAX_POTENTIAL}).fetchall()
        edge_total = int(edges[0][8]) if edges else 0
        for src, line, within, kind, how, dst_path, dst_qual, ok, _total in edges:
            item: dict[str, Any] = {"path": src, "line": line, "scope": within, "kind": kind}
            if several:
                item["target"] = {"path": dst_path, "qualname": dst_qual}
            if ok:
                item["how"] = how
                verified.append(item)
            elif include_potential:
                item["reason"] = how
                potential.append(item)
        n_verified = len(verified) if edge_total <= len(edges) else\
            edge_total - len(potential)
        verified = verified[:MAX_VERIFIED]
        if include_potential:
            name = rows[0][1]
            kinds = _target_kinds({t["kind"] for t in targets})
            found = conn.execute(scope.sql(q.GRAPH_UNRESOLVED), {**scope.params(), "name": name,
                                                      "kinds": kinds,
                                                      "k": MAX_POTENTIAL}).fetchall()
            unresolved_total = int(found[0][5]) if found else 0
            for src, line, within, kind, qualifier, _total in found:
                potential.append({"path": src, "line": line, "scope": within, "kind": kind,
                                  "called_on": qualifier or None,
                                  "reason": _reason(kind, qualifier)})
            n_potential = len([p for p in potential if "called_on" not in p]) +\
                unresolved_total
            potential = [{k: v for k, v in p.items() if v is not None}
                         for p in potential[:MAX_POTENTIAL]]
    answer["verified"] = verified
    if include_potential:
        answer["potential"] = potential
    answer["summary"] = {"verified": n_verified, "potential": n_potential,
                         "files": len({v["path"] for v in verified} |
                                      {p["path"] for p in potential})}
    truncated: dict[str, int] = {}
    if n_verified > len(verified):
        truncated["verified"] = n_verified
    if include_potential and n_potential > len(potential):
        truncated["potential"] = n_potential
    if total_targets > len(targets):
        truncated["targets"] = total_targets
    extra: dict[str, Any] = {"truncated": truncated}
    if include_potential and n_potential:
        extra["potential_only"] = (f"{n_potential} reference(s) match the name only; review "
                                   "them before changing the declaration")
    blind = unseen(conn, scope, **extra)
    if blind:
        answer["unseen"] = blind
    if not targets:
        answer["empty"] = no_symbol(conn, scope, symbol, clean)
    elif not verified and not potential:
        answer["empty"] = {"code": "no_references", "message": f"nothing in the index refers "
                           f"to {symbol!r}" + ("" if include_potential else
                                               " through a verified edge")}
    paths = {t["path"] for t in targets} | {v["path"] for v in verified}
    answer["_stats"] = stats(answer, _sizes(conn, scope, paths), started)
    return answer


def implementations(conn: psycopg.Connection, scope: Scope, symbol: str) -> dict[str, Any]:
    """Classes that implement the interface (or extend the class) ``symbol``, directly or
    through other classes, each with its methods."""
    started = time.monotonic()
    if not symbol.strip():
        raise InvalidRequest("symbol is empty", hint="give an interface or class name")
    rows, total_targets = locate(conn, scope, symbol, kinds=CLASS_KINDS, limit=MAX_TARGETS)
    targets = [{"path": r[0], "qualname": r[2], "kind": r[3], "line": r[5],
                "language": r[11]} for r in rows]
    results: list[dict[str, Any]] = []
    potential: list[dict[str, Any]] = []
    seen = {(t["path"], t["qualname"]) for t in targets}
    frontier = list(dict.fromkeys((t["path"], t["qualname"]) for t in targets))
    total = 0
    for depth in range(1, IMPLEMENTATION_DEPTH + 1):
        if not frontier:
            break
        found = conn.execute(scope.sql(q.GRAPH_SUBCLASSES), {**scope.params(),
                                                  "paths": [p for p, _q in frontier],
                                                  "quals": [qq for _p, qq in frontier]})
        nxt = []
        for src, cls, kind, line, _dst_path, dst_qual, ok, how in found:
            if not ok:
                if depth == 1:
                    potential.append({"path": src, "qualname": cls, "line": line,
                                      "reason": how})
                continue
            if (src, cls) in seen:
                continue
            seen.add((src, cls))
            total += 1
            if len(results) < MAX_IMPLEMENTATIONS:
                results.append({"path": src, "qualname": cls, "line": line,
                                "relation": kind, "depth": depth,
                                "via": dst_qual if depth > 1 else None, "how": how})
            nxt.append((src, cls))
        frontier = nxt
    go = [t for t in targets if t["language"] == "go" and t["kind"] == "interface"]
    if go:
        results += _go_satisfiers(conn, scope, go, seen)
    _attach_methods(conn, scope, results)
    results = [{k: v for k, v in r.items() if v is not None} for r in results]
    answer: dict[str, Any] = {"repo": scope.name, "symbol": symbol,
                              "targets": [{k: v for k, v in t.items() if k != "language"}
                                          for t in targets],
                              "results": results}
    if potential:
        answer["potential"] = potential
    answer["summary"] = {"implementations": max(total, len(results)),
                         "direct": sum(1 for r in results if r.get("depth") == 1)}
    truncated = {"implementations": total} if total > len(results) else {}
    if total_targets > len(targets):
        truncated["targets"] = total_targets
    explain(answer, conn, scope, symbol, bool(targets), bool(results),
            {"code": "no_implementations", "message": f"no indexed class implements or "
             f"extends {symbol!r}"}, truncated=truncated)
    paths = {r["path"] for r in results} | {t["path"] for t in targets}
    answer["_stats"] = stats(answer, _sizes(conn, scope, paths), started)
    return answer


def _attach_methods(conn: psycopg.Connection, scope: Scope, results: list[dict[str, Any]]) -> None:
    if not results:
        return
    by_class: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for path, qualname, name, kind, line, signature in conn.execute(
            scope.sql(q.GRAPH_MEMBERS), scope.params(paths=sorted({r["path"] for r in results}))):
        owner, _dot, _name = qualname.rpartition(".")
        by_class[(path, owner)].append({"name": name, "kind": kind, "line": line,
                                        "signature": signature})
    for r in results:
        methods = by_class.get((r["path"], r["qualname"]), [])
        r["methods"] = methods[:MAX_METHODS]
        if len(methods) > MAX_METHODS:
            r["methods_total"] = len(methods)


def _go_satisfiers(conn: psycopg.Connection, scope: Scope, interfaces: list[dict[str, Any]],
                   seen: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """Go types whose method set (by name, across their package) covers an interface's."""
    out: list[dict[str, Any]] = []
    for iface in interfaces:
        members = [r for r in conn.execute(scope.sql(q.GRAPH_MEMBERS),
                                           scope.params(paths=[iface["path"]]))
                   if r[1].rpartition(".")[0] == iface["qualname"]]
        names = sorted({r[2] for r in members})
        if not names:
            continue
        methods: dict[tuple[str, str], set[str]] = defaultdict(set)
        where: dict[tuple[str, str], str] = {}
        for path, qualname, name in conn.execute(scope.sql(q.GRAPH_GO_METHODS), {**scope.params(),
                                                                      "names": names}):
            owner = qualname.rpartition(".")[0]
            if not owner or (path == iface["path"] and owner == iface["qualname"]):
                continue
            key = (path.rpartition("/")[0], owner)
            methods[key].add(name)
            where.setdefault(key, path)
        for key, have in sorted(methods.items()):
            if have >= set(names):
                path = where[key]
                if (path, key[1]) in seen:
                    continue
                seen.add((path, key[1]))
                out.append({"path": path, "qualname": key[1], "relation": "implements",
                            "depth": 1, "how": "method set (Go interfaces are satisfied "
                            "implicitly; matched by method names)"})
    _locate_owner_files(conn, scope, out)
    return out


def _locate_owner_files(conn: psycopg.Connection, scope: Scope,
                        found: list[dict[str, Any]]) -> None:
    """A Go type's methods may sit in another file of its package than the type itself."""
    for item in found:
        directory = item["path"].rpartition("/")[0]
        rows, _total = locate(conn, scope, item["qualname"], kinds=["class", "type"], limit=10)
        for row in rows:
            if row[0].rpartition("/")[0] == directory and row[2] == item["qualname"]:
                item["path"], item["line"] = row[0], row[5]
                break
