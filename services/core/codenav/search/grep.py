"""``grep``: literal or regular-expression search over a repository's indexed files.

The text searched is the stored body of each file (``contents.body``, redacted at index
time: a secret is never matched or shown, and the disk is never read). A search runs in
two steps, both under one time budget (``CODENAV_GREP_TIMEOUT_MS``):

1. **Candidates** (SQL): the repository's files, narrowed by the path glob and language,
   and by the trigram index on contents (pg_trgm): a literal, or each literal of three or
   more characters a regex cannot match without, must occur (``LIKE``/``ILIKE``, answered
   by the GIN index and rechecked). A regex without such a literal scans every file.
2. **Matches** (Python, RE2): bodies are fetched in path order and matched line by line
   with RE2 (``google-re2``), whose run time is linear in the text: no pattern can
   backtrack catastrophically. Matching stops at ``limit`` lines shown, then counts on
   while the count budget lasts; the answer says whether the total is exact.

Every statement runs under ``SET LOCAL statement_timeout`` and the Python side checks the
same deadline between files, so a search is bounded whatever the pattern; when the budget
ends the answer says so (``timed_out``) with what was found until then.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from re import _constants as _sre  # type: ignore[attr-defined]  # required literals
from re import _parser as _sre_parse  # type: ignore[attr-defined]
from typing import Any

import psycopg
import re2

from codenav.access import Scope
from codenav.answers import empty_reason, glob_to_regex, stats
from codenav.db import queries as q
from codenav.errors import InvalidRequest

MAX_LIMIT = 500
MAX_CONTEXT = 10
MAX_PATTERN = 1000
LINE_CHARS = 300
"""A matched line longer than this is cut around the first match."""
COUNT_BUDGET_BYTES = 4 * 1024 * 1024
"""After the shown matches, counting goes on over at most this much more text."""
BATCH_FILES = 64
CANDIDATE_CAP = 200_000
MIN_LITERAL = 3
"""pg_trgm needs three characters to have a trigram to look up."""
MAX_LITERALS = 3

@dataclass(frozen=True)
class Pattern:
    """A compiled grep pattern and the literals its matches must contain."""

    text: str
    regex: bool
    case_sensitive: bool
    compiled: Any
    literals: tuple[str, ...]
    """For the trigram prefilter; empty: every file is a candidate."""

    @property
    def like_case_sensitive(self) -> bool:
        return self.case_sensitive and not (self.regex and "(?" in self.text)


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # errors are answered, not logged on the API's stderr
    options.never_nl = True     # a match lies within one line, as grep's do
    return options


def compile_pattern(text: str, regex: bool = False, case_sensitive: bool = False) -> Pattern:
    """The pattern compiled for RE2, or ``InvalidRequest`` naming what is wrong."""
    if not text:
        raise InvalidRequest("pattern: empty", hint="give a literal or a regular expression")
    if len(text) > MAX_PATTERN:
        raise InvalidRequest(f"pattern: longer than {MAX_PATTERN} characters")
    if "\n" in text:
        raise InvalidRequest("pattern: contains a newline; grep matches within one line")
    source = text if regex else re2.escape(text)
    source = ("(?m)" if case_sensitive else "(?mi)") + source  # ^ and $ at each line
    try:
        compiled = re2.compile(source.encode("utf-8"), _options())
    except re2.error as exc:
        raise InvalidRequest(f"pattern: not a valid RE2 regular expression "
                             f"({_message(exc)})",
                             hint="RE2 syntax: no backreferences or lookaround; or pass "
                             "regex=false for a literal") from None
    literals = (text,) if not regex else required_literals(text)
    literals = tuple(sorted((lit for lit in literals if len(lit) >= MIN_LITERAL),
                            key=len, reverse=True)[:MAX_LITERALS])
    return Pattern(text, regex, case_sensitive, compiled, literals)


def _message(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else str(exc)
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


_RE2_ONLY = ("[[:", "\\Q", "\\p", "\\P", "\\C", "\\z")


def required_literals(pattern: str) -> tuple[str, ...]:
    """Literal strings every match of ``pattern`` contains (maybe none): runs of literal
    characters in the parts of the pattern that are not optional or alternatives. Syntax
    Python's parser does not read as RE2 does yields none (the search is then a scan)."""
    if any(token in pattern for token in _RE2_ONLY):
        return ()
    try:
        parsed = _sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError, ValueError):
        return ()
    found: list[str] = []
    _walk(list(parsed), found)
    return tuple(found)


def _walk(items: list[tuple[Any, Any]], found: list[str]) -> None:
    run: list[str] = []

    def close() -> None:
        if run:
            found.append("".join(run))
            run.clear()

    for op, arg in items:
        if op is _sre.LITERAL:
            run.append(chr(arg))
        elif op is _sre.AT:  # ^ $ \b: zero-width, the run goes on
            continue
        elif op is _sre.SUBPATTERN:
            close()
            _walk(list(arg[-1]), found)
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None)):
            close()
            low, _high, item = arg
            if low >= 1:
                _walk(list(item), found)
        else:  # alternatives, classes, any character, lookaround: no required literal
            close()
    close()


def like_pattern(literal: str) -> str:
    """``%literal%`` with LIKE's wildcards escaped."""
    escaped = literal.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@dataclass
class _Scan:
    shown: int = 0
    """Matching lines put in the answer (at most ``limit``)."""
    total: int = 0
    """Matching lines seen, shown or only counted."""
    files_matched: int = 0
    files_searched: int = 0
    bytes_counted: int = 0
    """Bytes read past ``limit`` only to count (bounded by ``COUNT_BUDGET_BYTES``)."""
    stopped: str = ""
    """Why counting stopped before the last candidate: ``count_budget`` or ``timeout``."""


def grep(conn: psycopg.Connection, scope: Scope, pattern: str, regex: bool = False,
         path: str | None = None, language: str | None = None, case_sensitive: bool = False,
         context: int = 0, limit: int = 50, timeout_ms: int = 1500) -> dict[str, Any]:
    """Lines of the repository's indexed files matching ``pattern``, grouped by file."""
    started = time.monotonic()
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit: must be 1-{MAX_LIMIT}, got {limit}")
    if not 0 <= context <= MAX_CONTEXT:
        raise InvalidRequest(f"context: must be 0-{MAX_CONTEXT}, got {context}")
    pat = compile_pattern(pattern, regex, case_sensitive)
    deadline = started + timeout_ms / 1000
    scan = _Scan()
    results: list[dict[str, Any]] = []
    sizes: dict[str, int] = {}
    candidates: list[tuple[str, int, str, int]] = []
    timed_out = False
    params = scope.params(language=language or None,
                          path_re=glob_to_regex(path) if path else None, cap=CANDIDATE_CAP,
                          **{f"lit{i}": like_pattern(lit) for i, lit in enumerate(pat.literals)})
    try:
        with conn.transaction():
            conn.execute(q.GREP_TIMEOUT, {"ms": f"{max(int(timeout_ms), 1)}ms"})
            candidates = [tuple(r) for r in conn.execute(
                q.grep_candidates(len(pat.literals), pat.like_case_sensitive),
                params).fetchall()]
            _match_all(conn, scope, pat, candidates, context, limit, deadline, scan, results,
                       sizes)
    except psycopg.errors.QueryCanceled:
        timed_out = True
    if scan.stopped == "timeout":
        timed_out = True
    answer: dict[str, Any] = {
        "repo": scope.name, "pattern": pattern, "regex": regex,
        "case_sensitive": case_sensitive, "results": results,
        "matches_shown": scan.shown, "matches_total": scan.total,
        "total_exact": not scan.stopped and not timed_out,
        "files_matched": scan.files_matched, "files_searched": scan.files_searched,
        "files_candidate": len(candidates),
        "accelerated": _accelerated(pat),
    }
    if scan.shown >= limit and (scan.total > scan.shown or scan.stopped):
        more = f"{scan.total}" if answer["total_exact"] else f"at least {scan.total}"
        answer["capped"] = {"limit": limit, "message": f"showing {scan.shown} of {more} "
                            "matching lines; narrow with path= or language=, or raise limit"}
    if timed_out:
        answer["timed_out"] = {
            "after_ms": round((time.monotonic() - started) * 1000),
            "budget_ms": timeout_ms,
            "message": f"the search stopped at its {timeout_ms} ms budget after "
                       f"{scan.files_searched} of {len(candidates) or 'the'} candidate files; "
                       "the results are partial. A pattern with a literal of 3+ characters "
                       "uses the trigram index; path= or language= narrow the scan."}
    if not results:
        answer["empty"] = _why_empty(conn, scope, pat, language, path, timed_out)
    answer["_stats"] = stats(answer, sizes, started)
    return answer


def _accelerated(pat: Pattern) -> str:
    if pat.literals:
        shown = ", ".join(repr(lit) for lit in pat.literals)
        return f"trigram index on {shown}"
    return "none: no literal of 3+ characters is required by the pattern; every file in " \
        "scope was scanned"


def _why_empty(conn: psycopg.Connection, scope: Scope, pat: Pattern, language: str | None,
               path: str | None, timed_out: bool) -> dict[str, str]:
    if timed_out:
        return {"code": "timeout", "message": "no match found before the time budget ended; "
                "this is not evidence the text is absent (see timed_out)"}
    reason = empty_reason(conn, scope, language, path)
    if reason["code"] == "no_match":
        how = "regular expression" if pat.regex else "literal"
        case = "case-sensitive" if pat.case_sensitive else "case-insensitive"
        reason["message"] = (f"no line of the indexed files matches the {case} {how} "
                             f"{pat.text!r}; skipped files are not searched (see status), "
                             "and redacted secrets never match")
    return reason


def _match_all(conn: psycopg.Connection, scope: Scope, pat: Pattern,
               candidates: list[tuple[str, int, str, int]], context: int, limit: int,
               deadline: float, scan: _Scan, results: list[dict[str, Any]],
               sizes: dict[str, int]) -> None:
    """Fetch candidate bodies in path order, a batch at a time, and match them."""
    bodies: dict[int, bytes] = {}
    for start in range(0, len(candidates), BATCH_FILES):
        if time.monotonic() > deadline:
            scan.stopped = "timeout"
            return
        if scan.shown >= limit and scan.bytes_counted >= COUNT_BUDGET_BYTES:
            scan.stopped = "count_budget"
            return
        batch = candidates[start:start + BATCH_FILES]
        needed = {int(cid) for _p, cid, _l, _s in batch}
        bodies = {cid: body for cid, body in bodies.items() if cid in needed}
        wanted = sorted(needed - set(bodies))
        if wanted:
            bodies.update({int(cid): body.encode("utf-8") for cid, body in conn.execute(
                scope.sql(q.GREP_BODIES), scope.params(ids=wanted)).fetchall()})
        for file_path, content_id, language, size in batch:
            if time.monotonic() > deadline:
                scan.stopped = "timeout"
                return
            body = bodies.get(int(content_id))
            if body is None:  # the file changed since the candidates were read
                continue
            scan.files_searched += 1
            if scan.shown >= limit:
                scan.bytes_counted += len(body)
            found = _match_file(pat, body, context, limit - scan.shown)
            if found is None:
                continue
            count, shown = found
            scan.files_matched += 1
            scan.total += count
            if shown:
                scan.shown += len(shown)
                results.append({"path": file_path, "language": language, "matches": shown})
                sizes[file_path] = int(size)
            if scan.shown >= limit and scan.bytes_counted >= COUNT_BUDGET_BYTES:
                scan.stopped = "count_budget"
                return
    if scan.stopped == "" and scan.files_searched < len(candidates) and \
            time.monotonic() > deadline:
        scan.stopped = "timeout"


def _match_file(pat: Pattern, body: bytes, context: int,
                room: int) -> tuple[int, list[dict[str, Any]]] | None:
    """(matching lines, the first ``room`` of them with context), or None for no match."""
    rx = pat.compiled
    first = rx.search(body)
    if first is None:
        return None
    lines: list[tuple[int, int, int, int]] = []  # line number, line start, match start, end
    line_no = 1
    pos = 0
    last_line = 0
    for m in rx.finditer(body):
        begin = m.start()
        if m.end() == begin and begin == len(body) and body.endswith(b"\n"):
            break  # an empty match after the last newline is not a line
        line_no += body.count(b"\n", pos, begin)
        pos = begin
        if line_no == last_line:
            continue
        last_line = line_no
        line_start = body.rfind(b"\n", 0, begin) + 1
        lines.append((line_no, line_start, begin, m.end()))
    if not lines:
        return None
    shown = [_show(body, ln, ls, ms, me, context) for ln, ls, ms, me in lines[:max(room, 0)]]
    if context and len(shown) > 1:
        _trim_overlap(shown)
    return len(lines), shown


def _line_at(body: bytes, start: int) -> str:
    end = body.find(b"\n", start)
    raw = body[start:] if end < 0 else body[start:end]
    return raw.decode("utf-8", "replace").rstrip("\r")


def _show(body: bytes, line_no: int, line_start: int, match_start: int, match_end: int,
          context: int) -> dict[str, Any]:
    text = _line_at(body, line_start)
    column = len(body[line_start:match_start].decode("utf-8", "replace"))
    item: dict[str, Any] = {"line": line_no, "column": column + 1}
    if len(text) > LINE_CHARS:
        width = len(body[match_start:match_end].decode("utf-8", "replace"))
        left = max(0, min(column - LINE_CHARS // 3, len(text) - LINE_CHARS))
        cut = text[left:left + max(LINE_CHARS, min(width, LINE_CHARS * 2))]
        text = ("…" if left else "") + cut + ("…" if left + len(cut) < len(text) else "")
    item["text"] = text
    if context:
        before: list[str] = []
        start = line_start
        for _ in range(context):
            if start == 0:
                break
            prev = body.rfind(b"\n", 0, start - 1) + 1
            before.insert(0, _clip(_line_at(body, prev)))
            start = prev
        after: list[str] = []
        nxt = body.find(b"\n", line_start)
        for _ in range(context):
            if nxt < 0 or nxt + 1 >= len(body):
                break
            after.append(_clip(_line_at(body, nxt + 1)))
            nxt = body.find(b"\n", nxt + 1)
        item["before"], item["after"] = before, after
    return item


def _clip(text: str) -> str:
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + "…"


def _trim_overlap(shown: list[dict[str, Any]]) -> None:
    """Context lines another match of the file already shows are not repeated."""
    for prev, cur in zip(shown, shown[1:], strict=False):
        prev_end = prev["line"] + len(prev["after"])
        gap = cur["line"] - prev["line"] - 1
        if gap < len(prev["after"]):
            prev["after"] = prev["after"][:gap]
            prev_end = prev["line"] + gap
        keep = max(0, cur["line"] - 1 - prev_end)
        cur["before"] = cur["before"][len(cur["before"]) - min(keep, len(cur["before"])):]
