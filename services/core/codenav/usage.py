"""Token economy: every answer's ``_stats`` summed per day, team, repository and tool.

An API process adds each answer to a ``UsageBuffer`` in memory (no statement on the
request's path) and writes the sums in one statement at most every ``interval_s``, on the
connection of the request that finds the buffer due, from the API's background flush, and
at shutdown; sums from several processes add up (an upsert). A killed process loses at
most its last ``interval_s`` of figures, never an answer.

``summary`` reads them back within what the caller may see: the repositories of its visible
set and, for a token of a whole team, its team's answers about no single repository (the
status of all of them); the operator (the CLI on the database) sees every team's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg

from codenav.access import Caller, visible_repos
from codenav.db import queries as q

log = logging.getLogger("codenav.usage")
FLUSH_INTERVAL_S = 5.0
MAX_DAYS = 366


class UsageBuffer:
    """Per-process sums of answers' ``_stats`` waiting to be written (thread-safe)."""

    def __init__(self, interval_s: float = FLUSH_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._sums: dict[tuple[date, int, int | None, str], Counter[str]] = {}
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()

    def record(self, caller: Caller, repo_id: int | None, tool: str,
               answer: dict[str, Any]) -> None:
        if caller.team_id is None:  # the operator's own commands are not a team's usage
            return
        st = answer.get("_stats") or {}
        key = (datetime.now(UTC).date(), caller.team_id, repo_id, tool)
        with self._lock:
            self._sums.setdefault(key, Counter()).update(
                calls=1, empty=1 if answer.get("empty") else 0,
                tokens_returned=int(st.get("tokens_returned") or 0),
                tokens_full_files=int(st.get("tokens_full_files") or 0),
                duration_us=round(float(st.get("duration_ms") or 0.0) * 1000))

    def due(self) -> bool:
        return bool(self._sums) and time.monotonic() - self._last_flush >= self.interval_s

    def pending(self) -> int:
        return len(self._sums)

    def flush(self, conn: psycopg.Connection) -> int:
        """Write the sums (one statement); returns the rows written. A store that is down
        or a row that lost its team or repository meanwhile drops these figures (logged),
        never an answer."""
        with self._lock:
            taken, self._sums = self._sums, {}
            self._last_flush = time.monotonic()
        if not taken:
            return 0
        keys = list(taken)
        params = {
            "day": [k[0] for k in keys], "team": [k[1] for k in keys],
            "repo": [k[2] for k in keys], "tool": [k[3] for k in keys],
            "calls": [taken[k]["calls"] for k in keys], "empty": [taken[k]["empty"] for k in keys],
            "returned": [taken[k]["tokens_returned"] for k in keys],
            "full": [taken[k]["tokens_full_files"] for k in keys],
            "ms": [taken[k]["duration_us"] / 1000 for k in keys],
        }
        try:
            written = conn.execute(q.USAGE_FLUSH, params).rowcount
        except (psycopg.OperationalError, psycopg.errors.IntegrityError) as exc:
            log.warning("usage figures of %d tool/day rows dropped: %s", len(keys),
                        str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return 0
        return max(written, 0)


def _row(day: Any, tool: str, calls: int, empty: int, returned: int, full: int,
         ms: float) -> dict[str, Any]:
    out: dict[str, Any] = {"day": day.isoformat() if day else None, "tool": tool,
                           "calls": int(calls), "empty": int(empty),
                           "tokens_returned": int(returned), "tokens_full_files": int(full),
                           "avg_ms": round(float(ms) / calls, 1) if calls else 0.0}
    if full:
        out["saved"] = round(1 - int(returned) / int(full), 3)
    return out


def summary(conn: psycopg.Connection, caller: Caller, days: int = 7) -> dict[str, Any]:
    """Figures of the last ``days`` days (today included) that ``caller`` may see: per day
    and tool, per tool, and the total."""
    if not 1 <= days <= MAX_DAYS:
        from codenav.errors import InvalidRequest

        raise InvalidRequest(f"days: must be 1-{MAX_DAYS}, got {days}")
    since = datetime.now(UTC).date() - timedelta(days=days - 1)
    visible = [r.id for r in visible_repos(conn, caller)]
    params = {"since": since, "visible": visible, "team": caller.team_id,
              "team_wide": not caller.restricted, "all": caller.is_operator}
    rows = conn.execute(q.USAGE_SUMMARY, params).fetchall()
    by_day = [_row(*r) for r in rows]
    tools: dict[str, list[Any]] = {}
    for r in rows:
        acc = tools.setdefault(r[1], [0, 0, 0, 0, 0.0])
        for i in range(5):
            acc[i] += r[2 + i]
    by_tool = sorted((_row(None, t, *v) for t, v in tools.items()),
                     key=lambda x: -x["calls"])
    for entry in by_tool:
        entry.pop("day")
    total = _row(None, "all", *[sum(v[i] for v in tools.values()) for i in range(5)])
    total.pop("day")
    total.pop("tool")
    answer: dict[str, Any] = {"days": days, "since": since.isoformat(),
                              "of": "every team" if caller.is_operator else
                              f"the repositories this token sees (team {caller.team})",
                              "total": total, "by_tool": by_tool, "by_day": by_day}
    if not rows:
        answer["empty"] = {"code": "no_usage", "message": f"no tool answer recorded since "
                           f"{since.isoformat()} for what this token sees (figures are "
                           f"written every {FLUSH_INTERVAL_S:g} s)"}
    return answer


def week(conn: psycopg.Connection, caller: Caller) -> dict[str, Any]:
    """The last week's figures, compact (the status answer; ``codenav stats`` has the
    detail)."""
    figures = summary(conn, caller, 7)
    return {"days": 7, **figures["total"],
            "by_tool": {t["tool"]: {"calls": t["calls"], "tokens_returned": t["tokens_returned"],
                                    "tokens_full_files": t["tokens_full_files"]}
                        for t in figures["by_tool"]}}
