"""``find_files``: rank the files that matter for a task description.

Each query group (a word, its plural, or a ``[a|b]`` alternative) is looked for in the file's
path, in the names it declares, its imports, and its content. Files matching more groups rank
first (soft AND); within that, path and declaration matches weigh more than mentions.
Every result says why it matched.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from codenav import embeddings, filerank, rank
from codenav.access import Scope
from codenav.answers import empty_reason, stats
from codenav.db import queries as q
from codenav.errors import InvalidRequest
from codenav.graph.common import file_priors
from codenav.query import parse_query, tsquery_for
from codenav.search import Filters, weigh
from codenav.semantic import MODES, SemanticContext, describe_semantic
from codenav.tokens import identifier_terms, path_terms

MAX_LIMIT = 50
CHUNK_DEPTH = 400
PATH_DEPTH = 400
SEMANTIC_DEPTH = 80
LONG_DEPTH = 100


@dataclass
class _FileScore:
    path: str
    groups: set[int] = field(default_factory=set)
    path_groups: set[int] = field(default_factory=set)
    name_groups: set[int] = field(default_factory=set)
    symbol_groups: set[int] = field(default_factory=set)
    symbols: list[str] = field(default_factory=list)
    mentions: dict[int, int] = field(default_factory=dict)
    content_score: float = 0.0
    bm25: float = 0.0
    """Whole-file BM25 score (long queries)."""
    semantic: tuple[float, str | None] | None = None
    """Similarity of the file's nearest chunk to the query, and that chunk's symbol."""


def find_files(conn: psycopg.Connection, scope: Scope, text: str, limit: int = 7,
               include_tests: bool = False, mode: str = "hybrid",
               semantic: SemanticContext | None = None) -> dict[str, Any]:
    started = time.monotonic()
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be between 1 and {MAX_LIMIT}")
    if mode not in MODES:
        raise InvalidRequest(f"unknown mode {mode!r}", hint="hybrid, lexical or semantic")
    query = parse_query(text)
    w = weigh(conn, query)
    files: dict[str, _FileScore] = {}
    groups = w.groups
    near: dict[str, tuple[float, str | None]] = {}
    if mode != "lexical" and semantic is not None and semantic.usable:
        assert semantic.model is not None and semantic.vector is not None
        hits = embeddings.knn(conn, semantic.model, semantic.vector, scope,
                              Filters().params(), SEMANTIC_DEPTH)
        symbols = _symbols_of(conn, scope, [h[0] for h in hits])
        for chunk_id, path, dist in hits:
            if path not in near:  # hits come nearest first
                near[path] = (1.0 - dist, symbols.get(chunk_id))
    use_lexical = mode != "semantic" or not near
    long_query = len(groups) >= filerank.LONG_QUERY_GROUPS
    if groups and use_lexical and long_query:
        groups = filerank.usable_groups(groups, w.n_chunks)  # indices below refer to these
        boosts = filerank.mention_boosts(conn, scope, query.identifiers)
        for ranked_file in filerank.rank_files(conn, scope, groups, LONG_DEPTH, boosts):
            fs = files.setdefault(ranked_file.path, _FileScore(ranked_file.path))
            fs.bm25 = ranked_file.score
            fs.groups.update(ranked_file.counts)
            fs.path_groups.update(ranked_file.path_groups)
            fs.mentions.update({i: int(c) for i, c in ranked_file.counts.items()
                                if i not in ranked_file.path_groups})
    elif groups and use_lexical:
        tsqs = [tsquery_for(g.terms) for g in groups]
        weights = [g.idf for g in groups]
        group_terms = [set(g.terms) for g in groups]
        chunk_rows = conn.execute(q.FIND_CHUNKS, {
            "tsqs": tsqs, "weights": weights, "any": tsquery_for(w.candidate_terms),
            "avg_terms": w.avg_terms, **scope.params(), "k": CHUNK_DEPTH}).fetchall()
        for path, symbol, kind, matched, score in chunk_rows:
            fs = files.setdefault(path, _FileScore(path))
            fs.content_score = max(fs.content_score, float(score or 0)) + 0.1 * float(score or 0)
            for gi in matched:
                fs.groups.add(gi - 1)
                fs.mentions[gi - 1] = fs.mentions.get(gi - 1, 0) + 1
            if symbol and kind not in ("block", "text", "section"):
                sym_terms = set(identifier_terms(symbol))
                hit = [i for i, terms in enumerate(group_terms) if terms & sym_terms]
                if hit:
                    fs.symbol_groups.update(hit)
                    if symbol not in fs.symbols:
                        fs.symbols.append(symbol)
        any_path = tsquery_for([t for g in groups for t in g.terms])
        path_rows = conn.execute(q.FIND_PATHS, {"tsqs": tsqs, "any": any_path,
                                                **scope.params(), "k": PATH_DEPTH}).fetchall()
        for path, matched in path_rows:
            fs = files.setdefault(path, _FileScore(path))
            name = set(path_terms(path.rsplit("/", 1)[-1]))
            for gi in matched:
                fs.groups.add(gi - 1)
                fs.path_groups.add(gi - 1)
                if group_terms[gi - 1] & name:
                    fs.name_groups.add(gi - 1)
    about_docs = rank.asks_for_docs(text)
    for path in near:
        files.setdefault(path, _FileScore(path))
    ranked = []
    central = file_priors(conn, scope, sorted(files))
    for fs in files.values():
        if not include_tests and rank.is_test_path(fs.path) and not query.wants_tests:
            continue
        if long_query:
            prior = rank.path_prior(fs.path, query.wants_tests or include_tests, about_docs)
            prior *= rank.centrality_prior(central.get(fs.path, 0.0))
            ranked.append((0, fs.bm25 * prior, fs))
            continue
        score = 0.0
        for gi in fs.groups:
            weight = groups[gi].idf
            if gi in fs.name_groups:
                weight *= 2.5
            elif gi in fs.symbol_groups:
                weight *= 2.0
            elif gi in fs.path_groups:
                weight *= 1.6
            score += weight
        score += 0.5 * fs.content_score
        score *= rank.path_prior(fs.path, query.wants_tests or include_tests, about_docs) *\
            rank.centrality_prior(central.get(fs.path, 0.0))
        coverage = len(fs.groups)
        ranked.append((coverage if len(groups) <= 6 else 0, score, fs))
    ranked.sort(key=lambda r: (-r[0], -r[1], r[2].path))
    lexical_order = [r[2].path for r in ranked if r[1] > 0 or r[0] > 0]
    lists: dict[str, list[str]] = {"lexical": lexical_order} if use_lexical else {}
    if near:  # fuse the lexical file ranking with the files of the nearest chunks
        semantic_order = [p for p in near if p in {r[2].path for r in ranked}]
        lists["semantic"] = semantic_order
        fused = rank.rrf([lexical_order, semantic_order],
                         weights=[1.0 if use_lexical else 0.0, rank.SEMANTIC_WEIGHT])
        by_path = {r[2].path: r for r in ranked}
        ranked = [(0, fused[p], by_path[p][2]) for p in rank.ordered(fused) if p in by_path]
        for _c, _s, fs in ranked:
            if fs.path in near:
                fs.semantic = near[fs.path]
    top = ranked[:limit]
    sizes = {}
    if top:
        meta = conn.execute(q.FILE_META, scope.params(paths=[r[2].path for r in top])).fetchall()
        sizes = {m[0]: int(m[1]) for m in meta}
    results = []
    for _coverage, score, fs in top:
        results.append({"path": fs.path, "score": round(score, 3),
                        "reason": _reason(fs, groups, len(fs.groups))})
    answer: dict[str, Any] = {"repo": scope.name, "query": text, "mode": mode,
                              "results": results}
    if results:
        # "Exactly what the query names": a short query whose every group a file declares.
        exact = {fs.path for _c, _s, fs in top[:1]
                 if 0 < len(groups) <= 3 and fs.symbol_groups >= set(range(len(groups)))}
        first = top[0][2]
        answer["match_confidence"] = rank.match_confidence(
            [r[2].path for r in top], [r[1] for r in top[:2]], lists, exact,
            1.0 - first.semantic[0] if first.semantic else None)
    describe_semantic(answer, mode, semantic)
    if not results:
        answer["empty"] = empty_reason(conn, scope)
        if answer["empty"]["code"] == "no_match" and files and not include_tests:
            answer["empty"]["message"] += "; only test files matched (include_tests=true)"
    answer["_stats"] = stats(answer, sizes, started)
    return answer


def _reason(fs: _FileScore, groups: list[Any], coverage: int) -> str:
    parts = []
    if fs.path_groups:
        parts.append("path has " + ", ".join(groups[i].label for i in sorted(fs.path_groups)
                                             [:6]))
    if fs.symbols:
        parts.append("declares " + ", ".join(fs.symbols[:4]))
    mention_only = [i for i in sorted(fs.mentions) if i not in fs.path_groups and
                    i not in fs.symbol_groups]
    if mention_only:
        best = sorted(mention_only, key=lambda i: -groups[i].idf * fs.mentions[i])[:5]
        parts.append("mentions " + ", ".join(
            f"{groups[i].label} ({fs.mentions[i]}x)" for i in best))
    if fs.semantic is not None:
        sim, symbol = fs.semantic
        parts.append(f"close in meaning ({sim:.2f}" + (f", {symbol}" if symbol else "") + ")")
    if len(groups) > 1:
        parts.append(f"{coverage}/{len(groups)} terms")
    return "; ".join(parts) or "matched"


def _symbols_of(conn: psycopg.Connection, scope: Scope,
                chunk_ids: list[int]) -> dict[int, str | None]:
    if not chunk_ids:
        return {}
    return {r[0]: r[2] for r in conn.execute(q.CHUNK_DETAILS,
                                             scope.params(ids=chunk_ids)).fetchall()}
