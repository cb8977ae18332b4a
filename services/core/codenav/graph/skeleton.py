"""``skeleton``: the exported declarations of a directory, grouped by file, to orient in a
subsystem without opening files (methods are left out: ``outline`` shows them)."""

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
from codenav.graph.common import unseen
from codenav.navigate import clean_path

MAX_FILES = 200
MAX_EXPORTS = 30
_NESTING = frozenset({"class", "interface", "enum", "function", "method"})


def _like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"


def skeleton(conn: psycopg.Connection, scope: Scope, path: str | None = None,
             depth: int | None = None) -> dict[str, Any]:
    started = time.monotonic()
    prefix = clean_path(path).rstrip("/") if path and path.strip() not in ("", ".", "/")\
        else ""
    if depth is not None and depth < 0:
        raise InvalidRequest("depth must be 0 or more (0: the directory's own files)")
    like = _like(prefix) if prefix else None
    nesting: dict[str, set[str]] = defaultdict(set)
    for file_path, qualname in conn.execute(scope.sql(q.GRAPH_SKELETON_CLASSES),
                                            scope.params(like=like)):
        nesting[file_path].add(qualname)
    files: dict[str, dict[str, Any]] = {}
    for file_path, language, _name, qualname, kind, line, _parent in conn.execute(
            scope.sql(q.GRAPH_SKELETON), scope.params(like=like)):
        rel = file_path[len(prefix) + 1:] if prefix else file_path
        if depth is not None and rel.count("/") > depth:
            continue
        owner = qualname.rpartition(".")[0]
        if owner and owner in nesting[file_path]:
            continue  # a member of a class or function: outline shows it
        entry = files.setdefault(file_path, {"path": file_path, "language": language,
                                             "exports": [], "total": 0})
        entry["total"] += 1
        if len(entry["exports"]) < MAX_EXPORTS:
            entry["exports"].append({"name": qualname, "kind": kind, "line": line})
    items = list(files.values())
    for item in items:
        if item["total"] > len(item["exports"]):
            item["exports_total"] = item["total"]
        del item["total"]
    shown = items[:MAX_FILES]
    answer: dict[str, Any] = {"repo": scope.name, "path": prefix or ".", "files": shown,
                              "summary": {"files": len(items),
                                          "exports": sum(len(i["exports"]) for i in items)}}
    truncated = {"files": len(items)} if len(items) > len(shown) else {}
    blind = unseen(conn, scope, truncated=truncated)
    if blind:
        answer["unseen"] = blind
    if not shown:
        pattern = f"^{re.escape(prefix)}/" if prefix else "."
        exists = conn.execute(scope.sql(q.PATH_EXISTS), scope.params(regex=pattern)).fetchone()
        if prefix and exists is None:
            answer["empty"] = {"code": "path_not_indexed",
                               "message": f"no indexed file is under {prefix!r}"}
        else:
            answer["empty"] = {"code": "no_exports", "message": "no exported declaration in "
                               "the indexed files here" + ("" if depth is None else
                                                          f" (depth {depth})")}
    answer["_stats"] = stats(answer, {}, started)
    return answer
