"""What every answer carries besides its results: token accounting (``_stats``), the reason
an empty answer is empty, and the index state it was computed over."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import psycopg

from codenav.access import Scope
from codenav.db import queries as q
from codenav.lang import known_languages

REDACTED = "[REDACTED]"
"""What a secret found in a file reads as, in the stored text and so in every answer: one
token, valid inside any string literal (``codenav.index.redact`` writes it)."""


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about four characters per token for code)."""
    return (len(text) + 3) // 4


def stats(answer: dict[str, Any], file_sizes: dict[str, int], started: float) -> dict[str, Any]:
    """``_stats``: tokens returned, what reading the referenced files whole would cost."""
    body = {k: v for k, v in answer.items() if k != "_stats"}
    returned = estimate_tokens(json.dumps(body, ensure_ascii=False, default=str))
    whole = sum((size + 3) // 4 for size in file_sizes.values())
    out: dict[str, Any] = {
        "tokens_returned": returned,
        "tokens_full_files": whole,
        "files_referenced": len(file_sizes),
        "duration_ms": round((time.monotonic() - started) * 1000, 1),
    }
    if whole:
        out["saved"] = round(1 - returned / whole, 3)
    return out


def postings_pending(conn: psycopg.Connection, scope: Scope) -> dict[str, Any] | None:
    """What an answer says while files of the scope's tree wait for their whole-file
    postings (a first index leaves them to its graph job: ``codenav.index.terms``), or None
    when none does."""
    row = conn.execute(scope.sql(q.TERMS_PENDING_FILES), scope.params()).fetchone()
    files = int(row[0]) if row else 0
    if not files:
        return None
    return {"files_pending": files,
            "message": f"{files} files are not in the whole-file term statistics yet: a "
                       "first index leaves them to the graph job, which writes them first; "
                       "until then find_files counts their terms from their chunks, which "
                       "ranks less precisely (on Apache Kafka 64% of first results were the "
                       "same)"}


def glob_to_regex(glob: str) -> str:
    """A POSIX regex for a path glob: ``**`` crosses directories, ``*`` and ``?`` do not.
    A glob without a slash matches the file name anywhere (like .gitignore)."""
    glob = glob.strip()
    if glob.startswith("./"):
        glob = glob[2:]
    out = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if glob.startswith("**/", i):
            out.append("(.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(ch))
        i += 1
    pattern = "".join(out)
    if "/" not in glob:
        return f"(^|/){pattern}$"
    if glob.endswith("/"):
        return f"^{pattern}"
    return f"^{pattern}(/|$)"


def empty_reason(conn: psycopg.Connection, scope: Scope, language: str | None = None,
                 path: str | None = None, kind: str | None = None,
                 exported: bool = False) -> dict[str, str]:
    """Why an answer is empty: nothing indexed, the language or path is not indexed, or
    simply no match (naming the filters: ``kind`` and ``exported`` are search's)."""
    count = conn.execute(scope.sql(q.REPO_COUNTS), scope.params()).fetchone()
    n_files = int(count[0]) if count else 0
    if n_files == 0:
        latest = conn.execute(q.RUN_LATEST, scope.params()).fetchone()
        if latest and latest[2] == "running":
            return {"code": "indexing", "message": f"repository {scope.name!r} is being indexed "
                    f"({latest[5]}/{latest[4]} files); nothing is searchable yet"}
        return {"code": "not_indexed", "message": f"nothing is indexed for {scope.name!r}; "
                "this is not evidence the code is absent. Run `codenav index` or reindex()."}
    if language:
        langs: dict[str, int] = dict(conn.execute(scope.sql(q.REPO_LANGUAGES),
                                                  scope.params()).fetchall())
        if language not in langs:
            known = ", ".join(sorted(langs)) or "none"
            what = "not a language codenav knows" if language not in known_languages()\
                else "not indexed in this repository"
            return {"code": "language_not_indexed",
                    "message": f"language {language!r} is {what} (indexed: {known})"}
    if path:
        regex = glob_to_regex(path)
        hit = conn.execute(scope.sql(q.PATH_EXISTS), scope.params(regex=regex)).fetchone()
        if not hit:
            return {"code": "path_not_indexed",
                    "message": f"no indexed file matches path {path!r} (it may be ignored, "
                    "skipped or missing; `status` lists skipped files)"}
    within = " and ".join([f"{name} {value!r}" for name, value in
                           (("language", language), ("path", path), ("kind", kind)) if value]
                          + (["exported declarations only"] if exported else []))
    if within:
        return {"code": "no_match", "message": f"no indexed code matches within {within}; "
                "try without the filter, other words, or an identifier"}
    return {"code": "no_match", "message": "no indexed code matches; try other words, an "
            "identifier, or find_files for a broader description"}
