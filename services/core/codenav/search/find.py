"""``find_files``: rank the files that matter for a task description.

Candidates come from every signal the index has (``codenav.search.features``: whole-file BM25,
fielded matches on path, declared names, docs and chunks, identifiers and paths the query
spells out, graph neighbours, the nearest chunks in hybrid mode); a learned ranker
(``codenav.search.learned``) scores them: LambdaRank trees for lexical mode, the hand-set
weights of ``codenav.search.weights`` for hybrid mode (each chosen leave-one-repository-out).
Tests, fixtures, examples, docs and benchmarks (by the conventions of each ecosystem,
``codenav.lang.conventions``) stay out unless the query is about them; examples, docs and
benchmarks only fill the answer up to ``limit`` after the source files. Every result says
why it matched.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from codenav.access import Scope
from codenav.answers import empty_reason, glob_to_regex, postings_pending, stats
from codenav.db import queries as q
from codenav.db.side import Side
from codenav.errors import InvalidRequest
from codenav.lang import conventions
from codenav.search import bm25, features, fusion, learned
from codenav.search.chunks import weigh
from codenav.search.features import Candidate, Pool
from codenav.search.query import (
    VERSION_DECLARED,
    Group,
    ParsedQuery,
    asked_roles,
    is_release,
    parse_query,
    tsquery_for,
)
from codenav.search.semantic import MODES, SemanticContext, describe_semantic

MAX_LIMIT = 50
RELEASE_FILES = 3
"""A release query's files that declare the version, put first."""
RELEASE_BUDGET_MS = 400
"""Finding them reads the chunks that hold the word "version" (on Apache Kafka, where the
word is everywhere, 14,000 of them in about 220 ms); past this the answer goes without."""
_FILLERS = features.FILLER_ROLES
__all__ = ["asked_roles", "collect", "find_files", "order"]


def collect(conn: psycopg.Connection, scope: Scope, text: str, include_tests: bool = False,
            mode: str = "hybrid", semantic: SemanticContext | None = None,
            side: Side | None = None, within: bm25.Within = bm25.EVERY_FILE,
            ) -> tuple[ParsedQuery, Pool, set[str], str]:
    """The query, its candidate pool, the roles it asks for, and the model family that
    scores it (``hybrid`` when vectors are used, else ``lexical``). ``side``, ``within``:
    see ``features.gather``."""
    query = parse_query(text)
    w = weigh(conn, query)
    asked = asked_roles(query, text)
    use_vectors = mode != "lexical" and semantic is not None and semantic.usable
    pool = features.gather(conn, scope, query, w.groups if mode != "semantic" else [],
                           w.avg_terms, include_tests=include_tests or query.wants_tests,
                           asked=asked, semantic=semantic if use_vectors else None,
                           side=side, pending_terms=w.pending_terms, within=within)
    if mode == "semantic" and not pool.candidates:  # nothing embedded: lexical after all
        pool = features.gather(conn, scope, query, w.groups, w.avg_terms,
                               include_tests=include_tests or query.wants_tests, asked=asked,
                               side=side, pending_terms=w.pending_terms, within=within)
    return query, pool, asked, "hybrid" if use_vectors and mode == "hybrid" else "lexical"


def order(candidates: Sequence[Candidate], scores: Sequence[float],
          asked: set[str]) -> list[tuple[float, Candidate]]:
    """Candidates best first: the model's score decides, except that examples, docs and
    benchmarks the query does not ask for come after every other file."""
    ranked = [(s, c) for s, c in zip(scores, candidates, strict=True)]
    ranked.sort(key=lambda sc: (sc[1].role in _FILLERS and sc[1].role not in asked,
                                -sc[0], sc[1].path))
    return ranked


def semantic_order(pool: Pool) -> list[tuple[float, Candidate]]:
    """``mode="semantic"``: the files of the nearest chunks, nearest first."""
    by_path = {c.path: c for c in pool.candidates}
    out = []
    for path in pool.semantic_order:
        near = by_path[path].semantic
        out.append((near[0] if near is not None else 0.0, by_path[path]))
    return out or [(0.0, c) for c in pool.candidates]


def find_files(conn: psycopg.Connection, scope: Scope, text: str, limit: int = 7,
               include_tests: bool = False, mode: str = "hybrid",
               semantic: SemanticContext | None = None, side: Side | None = None,
               path: str | None = None, language: str | None = None) -> dict[str, Any]:
    """Files ranked for ``text`` (see the module's docstring); ``path``: only files under
    this glob; ``language``: only files of this language."""
    started = time.monotonic()
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be between 1 and {MAX_LIMIT}")
    if mode not in MODES:
        raise InvalidRequest(f"unknown mode {mode!r}", hint="hybrid, lexical or semantic")
    within = bm25.Within(language, glob_to_regex(path) if path else None) \
        if path or language else bm25.EVERY_FILE
    query, pool, asked, family = collect(conn, scope, text, include_tests, mode, semantic,
                                         side, within)
    if mode == "semantic" and pool.semantic_order:
        ranked = semantic_order(pool)
    else:
        scores, _name = learned.score([c.vector() for c in pool.candidates], family,
                                     history=pool.history)
        ranked = order(pool.candidates, scores, asked)
    if is_release(text):
        ranked = versions_first(conn, scope, ranked, within)
    top = ranked[:limit]
    sizes = {c.path: c.size for _s, c in top}
    results = []
    for score, cand in top:
        item: dict[str, Any] = {"path": cand.path, "score": round(score, 3),
                                "reason": _reason(cand, pool.groups)}
        if cand.role != conventions.SOURCE:
            item["role"] = cand.role
        results.append(item)
    answer: dict[str, Any] = {"repo": scope.name, "query": text, "mode": mode,
                              "results": results}
    if results:
        n = len(pool.groups)
        first = top[0][1]
        # "Exactly what the query names": a short query whose every group the file declares.
        exact = {first.path} if 0 < n <= 3 and first.symbol_groups >= set(range(n)) else set()
        lists = {"lexical": pool.lexical_order}
        if pool.semantic_order:
            lists["semantic"] = pool.semantic_order
        margins = [math.exp(min(s, 50.0)) for s, _c in top[:2]]
        answer["match_confidence"] = fusion.match_confidence(
            [c.path for _s, c in top], margins, lists, exact,
            1.0 - first.semantic[0] if first.semantic else None)
    describe_semantic(answer, mode, semantic)
    if pool.pending_terms:  # right after a first index (seconds): which of these files?
        pending = postings_pending(conn, scope)
        if pending:
            answer["file_terms"] = pending
    if not results:
        answer["empty"] = empty_reason(conn, scope, language, path)
        if answer["empty"]["code"] == "no_match" and not include_tests:
            answer["empty"]["message"] += "; only test files may match (include_tests=true)"
    answer["_stats"] = stats(answer, sizes, started)
    return answer


def versions_first(conn: psycopg.Connection, scope: Scope,
                   ranked: list[tuple[float, Candidate]],
                   within: bm25.Within = bm25.EVERY_FILE) -> list[tuple[float, Candidate]]:
    """A release query ("release 7.0", "start version 8.0.1.dev0", "4.4.2") first gets the
    files that declare the version (at most ``RELEASE_FILES``, shallowest first, those
    ``within`` keeps): its words name nothing else, and BM25 ranks whatever holds the same
    digits."""
    try:
        with conn.transaction():
            conn.execute(q.GREP_TIMEOUT, {"ms": f"{RELEASE_BUDGET_MS}ms"})
            rows = conn.execute(scope.sql(q.VERSION_FILES), scope.params(
                pattern=VERSION_DECLARED, word=tsquery_for(["version"]),
                k=4 * RELEASE_FILES)).fetchall()
    except psycopg.errors.QueryCanceled:  # a huge repository: answer as any other query
        return ranked
    paths = [p for (p,) in rows if conventions.role(p) in (conventions.SOURCE, conventions.BUILD)
             and not any(part.startswith(".") for part in p.split("/"))
             and within.keeps(p)][:RELEASE_FILES]
    if not paths:
        return ranked
    found = {c.path: c for _s, c in ranked}
    best = ranked[0][0] if ranked else 0.0
    first = []
    for path in paths:
        cand = found.get(path) or Candidate(path, conventions.role(path))
        cand.values["declares_version"] = 1.0
        first.append((best, cand))
    return first + [(s, c) for s, c in ranked if c.path not in paths]


RECENT_REASON = 100
"""A file that changed within this many commits says so in its ``reason``."""


def _reason(cand: Candidate, groups: list[Group]) -> str:
    parts = []
    if cand.values.get("declares_version"):
        parts.append("declares the version (a release query)")
    if cand.mentioned:
        parts.append("the query names its path")
    if cand.path_groups:
        parts.append("path has " + ", ".join(groups[i].label for i in sorted(cand.path_groups)
                                             [:6]))
    if cand.symbols or cand.symbol_groups:
        names = cand.symbols[:4] or [groups[i].label for i in sorted(cand.symbol_groups)[:4]]
        parts.append("declares " + ", ".join(names))
    mention_only = [i for i in sorted(cand.mentions) if i not in cand.path_groups and
                    i not in cand.symbol_groups]
    if mention_only:
        best = sorted(mention_only, key=lambda i: -groups[i].idf * cand.mentions[i])[:5]
        parts.append("mentions " + ", ".join(
            f"{groups[i].label} ({int(cand.mentions[i])}x)" for i in best))
    if cand.semantic is not None:
        sim, symbol = cand.semantic
        parts.append(f"close in meaning ({sim:.2f}" + (f", {symbol}" if symbol else "") + ")")
    if cand.neighbour_of:
        parts.append(f"linked to {cand.neighbour_of}")
    if cand.values.get("build_asked"):
        parts.append("build script")
    if cand.changed is not None and cand.changed[1] < RECENT_REASON:
        parts.append(f"recently changed ({cand.changed[0]} commits, last {cand.changed[1]} ago)")
    if len(groups) > 1:
        matched = len(set(cand.mentions) | cand.path_groups | cand.symbol_groups)
        parts.append(f"{matched}/{len(groups)} terms")
    return "; ".join(parts) or "matched"
