"""``outline`` and ``read``: a file's structure, and exact code from the index.

Paths are validated as repo-relative before anything is looked up; a traversal attempt is
a 400 with one uniform message that never echoes a resolved location.
"""

from __future__ import annotations

import posixpath
import time
from typing import Any

import psycopg

from codenav.access import Scope
from codenav.answers import REDACTED as MARK
from codenav.answers import stats
from codenav.db import queries as q
from codenav.errors import InvalidRequest, NotFound
from codenav.lang import STRUCTURED

MAX_READ_LINES = 2000
_TRAVERSAL = "path must be relative to the repository root and stay inside it"


def clean_path(path: str) -> str:
    """Normalise a repo-relative path, refusing anything that could leave the repo."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidRequest("path is empty", hint="give a path relative to the repo root")
    raw = path.strip()
    if "\0" in raw or "\\" in raw or raw.startswith("/") or "%2e" in raw.lower() or\
            "%2f" in raw.lower() or "\uff0e" in raw or "\uff0f" in raw:
        raise InvalidRequest(_TRAVERSAL)
    if raw.startswith("./"):
        raw = raw[2:]
    parts = raw.split("/")
    if any(p == ".." for p in parts) or (parts and ":" in parts[0]):
        raise InvalidRequest(_TRAVERSAL)
    norm = posixpath.normpath(raw)
    if norm.startswith("..") or norm == ".":
        raise InvalidRequest(_TRAVERSAL)
    return norm


def _file(conn: psycopg.Connection, scope: Scope, path: str) -> tuple:
    row = conn.execute(scope.sql(q.FILE_BY_PATH), scope.params(path=path)).fetchone()
    if row is not None:
        return row
    skipped = conn.execute(q.SKIPPED_FOR, scope.params(path=path)).fetchone()
    if skipped is not None:
        raise NotFound(f"{path} is not indexed: skipped ({skipped[0]}"
                       f"{': ' + skipped[1] if skipped[1] else ''})")
    similar = [r[0] for r in conn.execute(scope.sql(q.SIMILAR_PATHS),
                                          scope.params(path=path)).fetchall()]
    raise NotFound(f"{path} is not indexed in {scope.name!r}",
                   hint=("similar indexed paths: " + ", ".join(similar)) if similar else
                   "use find_files to locate it")


def redacted(redactions: list[dict[str, Any]]) -> dict[str, Any]:
    """What an answer says about secrets removed from the file it shows."""
    return {"lines": sorted({int(r["line"]) for r in redactions}),
            "kinds": sorted({str(r["type"]) for r in redactions}),
            "note": f"secrets were replaced by {MARK} before indexing"}


def _nest(rows: list[tuple]) -> list[dict[str, Any]]:
    """Symbols as a tree: methods under their class, by line containment."""
    roots: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []
    for name, qualname, kind, _parent, _depth, start, end, signature, _doc, exported, bases\
            in rows:
        node: dict[str, Any] = {"name": name, "kind": kind, "start_line": start,
                                "end_line": end, "signature": signature}
        if exported:
            node["exported"] = True
        if bases:
            node["bases"] = list(bases)
        while stack and not (stack[-1]["start_line"] <= start and end <= stack[-1]["end_line"]
                             and stack[-1]["qualname"] != qualname):
            stack.pop()
        node["qualname"] = qualname
        if stack:
            stack[-1].setdefault("children", []).append(node)
        else:
            roots.append(node)
        stack.append(node)
    _strip(roots)
    return roots


def _strip(nodes: list[dict[str, Any]]) -> None:
    for node in nodes:
        node.pop("qualname", None)
        _strip(node.get("children", []))


def outline(conn: psycopg.Connection, scope: Scope, path: str) -> dict[str, Any]:
    started = time.monotonic()
    path = clean_path(path)
    (fpath, content_id, size, _mtime, language, line_count, imports, _indexed,
     parse_error, redactions) = _file(conn, scope, path)
    rows = conn.execute(scope.sql(q.FILE_SYMBOLS), scope.params(content=content_id)).fetchall()
    answer: dict[str, Any] = {
        "repo": scope.name, "path": fpath, "language": language, "lines": line_count,
        "symbols": _nest(rows), "imports": list(imports or []),
    }
    if not rows:
        answer["empty"] = {"code": "no_symbols", "message": (
            f"its structure could not be read ({parse_error}); it is indexed as text"
            if parse_error else
            f"{language} files are indexed as text, without symbols"
            if language not in STRUCTURED else
            "no declarations found in this file")}
    if parse_error:
        answer["note"] = f"structure extraction failed ({parse_error}); indexed as text"
    if redactions:
        answer["redacted"] = redacted(redactions)
    answer["_stats"] = stats(answer, {fpath: size}, started)
    return answer


def read(conn: psycopg.Connection, scope: Scope, path: str | None = None,
         start_line: int | None = None, end_line: int | None = None,
         symbol: str | None = None) -> dict[str, Any]:
    started = time.monotonic()
    if not path and not symbol:
        raise InvalidRequest("give a path, a symbol, or both")
    clean = clean_path(path) if path else None
    candidates: list[dict[str, Any]] = []
    if symbol:
        sym = symbol.strip().replace("::", ".")
        rows = conn.execute(scope.sql(q.SYMBOL_LOCATE), {
            **scope.params(), "name": sym.split(".")[-1].lower(), "qual": sym.lower(),
            "path": clean}).fetchall()
        if not rows:
            hint = "check the spelling, or use search to find it"
            if clean:
                _file(conn, scope, clean)  # raises if the file itself is unknown
            raise NotFound(f"no symbol {symbol!r}" + (f" in {clean}" if clean else ""), hint=hint)
        fpath, _name, qualname, kind, s_start, s_end, _cid = rows[0]
        candidates = [{"path": r[0], "symbol": r[2], "kind": r[3], "start_line": r[4],
                       "end_line": r[5]} for r in rows[1:6]]
        clean = fpath
        start_line = s_start if start_line is None else start_line
        end_line = s_end if end_line is None else end_line
    assert clean is not None
    row = _file(conn, scope, clean)
    content_id, size, language, line_count, redactions = row[1], row[2], row[4], row[5], row[9]
    first = 1 if start_line is None else int(start_line)
    last = line_count if end_line is None else int(end_line)
    if first < 1 or last < first:
        raise InvalidRequest(f"invalid line range {first}-{last}",
                             hint=f"{clean} has {line_count} lines")
    if first > max(line_count, 1):
        raise InvalidRequest(f"{clean} has only {line_count} lines")
    last = min(last, line_count)
    truncated = False
    if last - first + 1 > MAX_READ_LINES:
        last = first + MAX_READ_LINES - 1
        truncated = True
    body_row = conn.execute(scope.sql(q.FILE_BODY), scope.params(content=content_id)).fetchone()
    lines = (body_row[0] if body_row else "").split("\n")
    answer: dict[str, Any] = {
        "repo": scope.name, "path": clean, "language": language, "start_line": first,
        "end_line": last, "total_lines": line_count,
        "content": "\n".join(lines[first - 1:last]),
    }
    if symbol:
        answer["symbol"] = symbol
    shown = [r for r in redactions or [] if first <= r["line"] <= last]
    if shown:
        answer["redacted"] = redacted(shown)
    if truncated:
        answer["truncated"] = f"showing {MAX_READ_LINES} lines; ask for the next range"
    if candidates:
        answer["other_matches"] = candidates
    answer["_stats"] = stats(answer, {clean: size}, started)
    return answer
