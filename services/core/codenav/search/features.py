"""Candidate files for ``find_files`` and the features the file ranker scores them by.

Every signal the index holds, per file: whole-file BM25 over the code-aware terms; fielded
matches (path, file name, declared names, doc comments, the best chunk); identifiers,
paths and stack-trace frames the query spells out; the code graph (centrality, importers,
neighbours of the strongest candidates); the checkout's recent git history (how often and
how lately the file changed: ``codenav.index.history``); and, in hybrid mode, the similarity
of the file's nearest chunks. ``codenav.search.learned`` turns a candidate's features into a
score.

Features are plain floats in ``FEATURES`` order, normalised per query where their scale
depends on the query (BM25 over the best BM25), so one model serves short and long queries.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import psycopg

from codenav.access import Scope
from codenav.db import queries as q
from codenav.db.side import Side, ahead, inline
from codenav.embed import vectors
from codenav.lang import conventions
from codenav.search import bm25
from codenav.search import weights as W
from codenav.search.query import Group, ParsedQuery, tsquery_for
from codenav.search.semantic import SemanticContext
from codenav.tokens import identifier_terms, path_terms

FEATURES = (
    "bm25", "bm25_rank", "cov_idf", "cov_frac", "path_idf", "name_idf", "sym_idf",
    "sym_top_idf", "doc_idf", "chunk", "chunk_cov", "idents_declared", "ident_frac",
    "path_mentioned", "prior", "importers", "nbr", "nbr_n", "sem", "sem_rank", "sem_n",
    "lines", "depth", "q_groups", "q_idents", "generated", "other_role", "test",
    "build_file", "build_asked", "churn", "churn_rel", "recent",
)
"""The model's input columns, in order."""


@dataclass
class Candidate:
    path: str
    role: str
    values: dict[str, float] = field(default_factory=dict)
    path_groups: set[int] = field(default_factory=set)
    symbol_groups: set[int] = field(default_factory=set)
    symbols: list[str] = field(default_factory=list)
    mentions: dict[int, float] = field(default_factory=dict)
    semantic: tuple[float, str | None] | None = None
    neighbour_of: str | None = None
    mentioned: bool = False
    changed: tuple[int, int] | None = None
    """(commits, age) from the checkout's recent history (``codenav.index.history``)."""
    size: int = 0
    """Bytes (what reading the file whole would cost)."""

    def vector(self) -> list[float]:
        return [self.values.get(name, 0.0) for name in FEATURES]


@dataclass
class Pool:
    """The candidates of one query, and what the explanations need."""

    groups: list[Group]
    candidates: list[Candidate]
    lexical_order: list[str]
    semantic_order: list[str]
    long_query: bool
    pending_terms: bool = False
    """Some files were scored without whole-file postings (``chunks.Weighted``)."""
    history: bool = False
    """The candidates' repository has its recent history read (``codenav.index.history``):
    ``churn``, ``churn_rel`` and ``recent`` mean something, and the model trained with them
    scores the pool."""


_OUTSIDE = "outside"
"""The role recorded for a file outside ``gather``'s ``within``: never a candidate."""
_PATH_TOKEN = re.compile(r"[\w$@.\\/-]*\w\.(?:py|pyi|go|java|kt|kts|scala|swift|rs|c|h|cc|cpp|"
                         r"cxx|hpp|hh|cs|rb|php|js|jsx|mjs|cjs|ts|tsx|mts|cts)\b")


def history_values(changed: tuple[int, int] | None, most: int) -> tuple[float, float, float]:
    """A file's ``churn``, ``churn_rel`` and ``recent`` (``codenav.index.history``): the
    commits that changed it (log), those over the most any candidate of the query has, and
    1 / (1 + log(1 + age)). ``changed``: (commits, age), None when it did not change in the
    commits read."""
    if changed is None:
        return 0.0, 0.0, 0.0
    commits, age = changed
    return math.log1p(commits), commits / max(most, 1), 1.0 / (1.0 + math.log1p(age))


def path_patterns(query: ParsedQuery) -> list[str]:
    """LIKE patterns for files the query names: ``pkg/mod.py``, ``Foo.java:12``, a stack
    frame's ``com.acme.Foo.bar``, a module path ``_pytest.capture``."""
    out: dict[str, None] = {}
    for token in _PATH_TOKEN.findall(query.raw):
        token = token.replace("\\", "/").lstrip("./")
        if len(token) < 4:
            continue
        if "/" in token:
            out[_like(token)] = None
            out["%/" + _like(token)] = None
        else:
            out[_like(token)] = None
            out["%/" + _like(token)] = None
    for ident in query.identifiers:
        parts = [p for p in re.split(r"::|\.|/|\\", ident) if p]
        if len(parts) < 2:
            continue
        for end in range(len(parts), 1, -1):  # a.b.C.method -> a/b/C/method, a/b/C, a/b
            stem = "/".join(_like(p) for p in parts[:end])
            out[stem + ".%"] = None
            out["%/" + stem + ".%"] = None
            out["%/" + stem + "/\\_\\_init\\_\\_.py"] = None
    return list(out)[:W.PATH_PATTERNS]


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _outermost(terms: Iterable[str]) -> list[str]:
    """The terms no shorter term begins: a row holding ``levels`` holds ``level`` too, so
    '%level%' alone selects the rows '%level%' and '%levels%' select (half the patterns a
    query of plurals tests per declaration). Prefixes only, so a long query's hundreds of
    terms cost a set lookup per letter."""
    kept: set[str] = set()
    for term in sorted(set(terms), key=lambda t: (len(t), t)):
        if not any(term[:end] in kept for end in range(1, len(term))):
            kept.add(term)
    return sorted(kept, key=lambda t: (len(t), t))


def _declared_names(query: ParsedQuery, groups: list[Group], long_query: bool) -> list[str]:
    names = {i.replace("::", ".").replace("\\", ".").split(".")[-1].lower()
             for i in query.identifiers}
    if not long_query:
        names |= {g.terms[0] for g in groups}
    return sorted(n for n in names if len(n) > 2)


class _Near(NamedTuple):
    """The nearest chunks (chunk id, path, distance), their symbols, and the graph links of
    the seed files (the best of BM25 and of the nearest chunks)."""

    hits: list[tuple[int, str, float]]
    symbols: dict[int, str | None]
    seeds: list[str]
    linked: list[tuple[Any, ...]]


FILLER_ROLES = (conventions.EXAMPLE, conventions.DOCS, conventions.BENCH)


def other_role(role: str, asked: set[str]) -> float:
    """1 for an example, doc or benchmark the query does not ask for: a file the query is
    about counts like source."""
    return 1.0 if role in FILLER_ROLES and role not in asked else 0.0


def build_features(path: str, asked: set[str]) -> tuple[float, float]:
    """``build_file``: a build script (``codenav.lang.conventions.is_build_script``);
    ``build_asked``: a build script, and the query is about dependencies, versions or the
    build."""
    if not conventions.is_build_script(path):
        return 0.0, 0.0
    return 1.0, 1.0 if conventions.BUILD in asked else 0.0


class _DocTerms:
    """The query terms as whole words of a doc comment, as ``codenav.tokens.words`` cuts
    them (a maximal run of word characters) with the run's underscores at either end
    dropped and its case ignored: one regex pass over a doc instead of splitting all of its
    words (declared names' docs are hundreds per query)."""

    def __init__(self, terms: Iterable[str]) -> None:
        terms = list(terms)
        alternatives = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
        word = rf"(?<!\w)_*({alternatives})_*(?!\w)"
        self._any_case = re.compile(word, re.IGNORECASE)
        self._lower = re.compile(word) if all(t.isascii() for t in terms) else None

    def found(self, doc: str) -> set[str]:
        """The terms (lower case) ``doc`` holds as words. With ASCII terms, an ASCII doc is
        lowered first and matched as it is: the same words as ignoring case (Unicode's case
        rules differ from ASCII's only beyond it), for two thirds of the time (Apache Kafka:
        1.4 against 2.1 ms for a query's 267 docs)."""
        if self._lower is not None and doc.isascii():
            return set(self._lower.findall(doc.lower()))
        return {m.lower() for m in self._any_case.findall(doc)}


def gather(conn: psycopg.Connection, scope: Scope, query: ParsedQuery, groups: list[Group],
           avg_terms: float, *, include_tests: bool, asked: set[str],
           semantic: SemanticContext | None = None, side: Side | None = None,
           pending_terms: bool = False, within: bm25.Within = bm25.EVERY_FILE) -> Pool:
    """The candidate files of a query with their features. ``groups`` are the weighted
    query groups (``codenav.search.chunks.weigh``); ``asked`` the non-source roles the query is
    about (``codenav.lang.conventions.asked_roles``). Statements that do not need each
    other's rows go ahead on ``side`` (``codenav.db.side``; by default all run on ``conn``).
    ``pending_terms``: see ``chunks.Weighted``. ``within``: only files under its path
    pattern can be candidates, and BM25 and the nearest chunks are taken among them."""
    side = side if side is not None else inline(conn)
    groups = bm25.usable_groups(groups)
    long_query = len(groups) >= bm25.LONG_QUERY_GROUPS
    total_idf = sum(g.idf for g in groups) or 1.0
    group_terms = [set(g.terms) for g in groups]
    keep_tests = include_tests or conventions.TEST in asked
    pool: dict[str, Candidate] = {}
    roles: dict[str, str] = {}

    def admitted(path: str) -> str | None:
        """The file's role, or None when it cannot be a candidate (a test not asked for, a
        file outside ``within``)."""
        role = roles.get(path)
        if role is None:
            role = roles[path] = conventions.role(path) if within.keeps(path) else _OUTSIDE
        if role == _OUTSIDE or (role in (conventions.TEST, conventions.FIXTURE)
                                and not keep_tests):
            return None
        return role

    def get(path: str) -> Candidate | None:
        cand = pool.get(path)
        if cand is None:
            role = admitted(path)
            if role is None:
                return None
            cand = pool[path] = Candidate(path, role)
        return cand

    # sent ahead: what needs the query only (BM25's statistics and path matches, the files
    # declaring the names it spells, the files whose path it spells)
    bm25_asked = bm25.ask(scope, groups, side, within) if groups else None
    names = _declared_names(query, groups, long_query)
    declaring = side.fetch(scope.sql(q.DECLARING_FILES), scope.params(names=names)) \
        if names else None
    patterns = path_patterns(query)
    spelled = side.fetch(scope.sql(q.FILE_PATHS_LIKE), scope.params(
        patterns=patterns, k=W.PATH_MATCHES)) if patterns else None

    # 1. whole-file BM25: every file with a query term, scored
    scores = bm25.score_files(conn, scope, groups, asked=bm25_asked, pending=pending_terms,
                              within=within)
    # 2. chunks (short queries): the best chunk of each file, declarations matching a group,
    # among the files BM25 ranked best. The statement goes ahead on ``conn`` (pipeline
    # mode) while BM25's best join the pool and the statements that need them are sent;
    # its rows are read before the graph neighbours join (``NEIGHBOUR_NEW`` counts the
    # files not in the pool yet).
    chunk_best: dict[str, float] = {}
    chunk_cov: dict[str, int] = {}
    chunk_files = [path for path in scores.paths(W.CHUNK_FILES) if admitted(path) is not None]
    rank_chunks = bool(chunk_files) and not long_query
    chunk_params = {
        "tsqs": [tsquery_for(g.terms) for g in groups], "weights": [g.idf for g in groups],
        "any": tsquery_for([t for g in groups for t in g.terms]), "paths": chunk_files,
        "avg_terms": avg_terms, **scope.params(), "k": W.CHUNK_DEPTH} if rank_chunks else {}
    with ahead(conn, scope.sql(q.FIND_CHUNKS), chunk_params, skip=not rank_chunks) \
            as best_chunks:
        lexical_order: list[str] = []
        for path in scores.paths():
            if len(lexical_order) >= W.BM25_DEPTH:
                break
            if get(path) is not None:
                lexical_order.append(path)
        best = scores.best or 1.0
        bm_rank = {p: i for i, p in enumerate(lexical_order)}

        # the nearest chunks (hybrid mode), then the graph neighbours of the strongest files
        # of both lists, go ahead on ``side`` while the chunks are ranked
        def nearest_and_linked(c: psycopg.Connection) -> _Near:
            hits: list[tuple[int, str, float]] = []
            symbols: dict[int, str | None] = {}
            if semantic is not None and semantic.usable:
                assert semantic.model is not None and semantic.vector is not None
                hits = vectors.knn(c, semantic.model, semantic.vector, scope,
                                   {"kind": None, "exported": False, **within.params()},
                                   W.SEMANTIC_DEPTH)
                if hits:
                    symbols = {r[0]: r[2] for r in c.execute(
                        scope.sql(q.CHUNK_DETAILS), scope.params(ids=[h[0] for h in hits]))}
            near_files = list(dict.fromkeys(path for _id, path, _d in hits
                                            if admitted(path) is not None))
            top = lexical_order[:W.NEIGHBOUR_SEEDS]
            seeds = top + [p for p in near_files[:W.NEIGHBOUR_SEEDS] if p not in top]
            linked = c.execute(scope.sql(q.FILE_NEIGHBOURS), scope.params(
                paths=seeds, k=W.NEIGHBOUR_LINKS)).fetchall() if seeds else []
            return _Near(hits, symbols, seeds, linked)

        near_later = side.call(nearest_and_linked)
        # the declarations of BM25's files go ahead too (step 6 asks for the rest of the pool)
        term_group: dict[str, list[int]] = defaultdict(list)
        for i, terms in enumerate(group_terms):
            for t in terms:
                term_group[t].append(i)
        likes = [f"%{_like(t)}%" for t in _outermost(term_group)]
        declared = [side.fetch(scope.sql(q.FILE_DECLARED), scope.params(
            paths=lexical_order, likes=likes, k=W.DECLARED_ROWS))] \
            if side.concurrent and lexical_order and likes else []

        # 3. files declaring what the query names, and files whose path it spells out
        declared_count: dict[str, int] = {}
        if declaring is not None:
            for path, count in declaring.rows():
                if get(path) is not None:
                    declared_count[path] = int(count)
        if spelled is not None:
            for (path,) in spelled.rows():
                cand = get(path)
                if cand is not None:
                    cand.mentioned = True
        chunk_rows = best_chunks.rows()
    for path, symbol, kind, matched, score in chunk_rows:
        cand = get(path)
        if cand is None:
            continue
        chunk_best[path] = max(chunk_best.get(path, 0.0), float(score or 0.0))
        chunk_cov[path] = max(chunk_cov.get(path, 0), len(matched))
        if symbol and kind not in ("block", "text", "section"):
            sym_terms = set(identifier_terms(symbol))
            if any(terms & sym_terms for terms in group_terms) and symbol not in cand.symbols:
                cand.symbols.append(symbol)

    # 4. semantic: the files of the nearest chunks
    hits, symbols, seeds, linked = near_later.result()
    semantic_order: list[str] = []
    near: dict[str, list[float]] = defaultdict(list)
    if hits:
        for chunk_id, path, dist in hits:
            cand = get(path)
            if cand is None:
                continue
            if path not in near:
                semantic_order.append(path)
                cand.semantic = (1.0 - dist, symbols.get(chunk_id))
            near[path].append(1.0 - dist)

    # 5. graph neighbours of the strongest candidates
    seed_strength = {p: max(scores.score(p) / best, near[p][0] if p in near else 0.0)
                     for p in seeds}
    nbr: dict[str, float] = defaultdict(float)
    nbr_n: dict[str, int] = defaultdict(int)
    nbr_from: dict[str, str] = {}
    added = 0
    if linked:
        for src, dst, _weight in linked:
            for seed, other in ((src, dst), (dst, src)):
                if seed not in seed_strength or other == seed:
                    continue
                if other not in pool:
                    if added >= W.NEIGHBOUR_NEW:
                        continue
                    if get(other) is None:
                        continue
                    added += 1
                if seed_strength[seed] > nbr[other]:
                    nbr[other] = seed_strength[seed]
                    nbr_from[other] = seed
                nbr_n[other] += 1

    # keep the pool bounded: the best by a cheap pre-score
    if len(pool) > W.MAX_CANDIDATES:
        def pre(c: Candidate) -> float:
            lex = 1.0 / (1 + bm_rank[c.path]) if c.path in bm_rank else 0.0
            return lex + (near[c.path][0] if c.path in near else 0.0) + \
                (1.0 if c.mentioned else 0.0) + \
                W.PRESCORE_DECLARED * declared_count.get(c.path, 0) + \
                W.PRESCORE_CHUNK * chunk_best.get(c.path, 0.0)
        kept = sorted(pool.values(), key=lambda c: (-pre(c), c.path))[:W.MAX_CANDIDATES]
        pool = {c.path: c for c in kept}
    paths = sorted(pool)

    # 6. per-candidate fields: declared names and docs, graph ranks, sizes
    sym_hits: dict[str, set[int]] = defaultdict(set)
    sym_top: dict[str, set[int]] = defaultdict(set)
    doc_hits: dict[str, set[int]] = defaultdict(set)
    # the other candidates' declarations go ahead (the longest statement); the facts and
    # the features that do not need them are read and computed meanwhile
    asked_for = set(lexical_order) if declared else set()
    rest = [p for p in paths if p not in asked_for]
    if rest and likes:
        declared.append(side.fetch(scope.sql(q.FILE_DECLARED), scope.params(
            paths=rest, likes=likes, k=W.DECLARED_ROWS)))
    # the facts (lines, size, graph ranks) are read while the features that do not need
    # them are computed: the statement goes out in pipeline mode, its rows are taken after
    with ahead(conn, scope.sql(q.FILE_FACTS), scope.params(paths=paths), skip=not paths) \
            as facts:
        chunk_max = max(chunk_best.values(), default=0.0) or 1.0
        n_groups = max(len(groups), 1)
        idents = [i for i in query.identifiers if len(i) > 2]
        q_groups = math.log1p(len(groups))
        for cand in pool.values():
            path = cand.path
            v = cand.values
            hit = scores.get(path)
            if hit is not None:
                v["bm25"] = hit.score / best
                cand.path_groups = set(hit.path_groups)
                cand.mentions = {i: c for i, c in hit.counts.items() if i not in hit.path_groups}
                matched = set(hit.counts)
                v["cov_idf"] = sum(groups[i].idf for i in matched) / total_idf
                v["cov_frac"] = len(matched) / n_groups
                v["path_idf"] = sum(groups[i].idf for i in hit.path_groups) / total_idf
                name = set(path_terms(path.rsplit("/", 1)[-1]))
                v["name_idf"] = sum(groups[i].idf for i, terms in enumerate(group_terms)
                                    if terms & name) / total_idf
            if path in bm_rank:
                v["bm25_rank"] = 1.0 / (1 + bm_rank[path])
            if path in chunk_best:
                v["chunk"] = chunk_best[path] / chunk_max
                v["chunk_cov"] = chunk_cov[path] / n_groups
            if path in declared_count:
                v["idents_declared"] = float(min(declared_count[path], 4))
                v["ident_frac"] = min(declared_count[path] / max(len(names), 1), 1.0)
            v["path_mentioned"] = 1.0 if cand.mentioned else 0.0
            v["prior"] = v["importers"] = v["lines"] = 0.0  # (the facts below, where read)
            if path in nbr:
                v["nbr"] = nbr[path]
                v["nbr_n"] = float(min(nbr_n[path], 8))
                if hit is None:
                    cand.neighbour_of = nbr_from.get(path)
            if path in near:
                sims = near[path]
                v["sem"] = sims[0]
                v["sem_rank"] = 1.0 / (1 + semantic_order.index(path))
                v["sem_n"] = float(min(len(sims), 8))
            v["depth"] = float(path.count("/"))
            v["q_groups"] = q_groups
            v["q_idents"] = float(min(len(idents), 10))
            v["generated"] = 1.0 if cand.role in (conventions.GENERATED,
                                                  conventions.VENDORED) else 0.0
            v["other_role"] = other_role(cand.role, asked)
            v["test"] = 1.0 if cand.role in (conventions.TEST, conventions.FIXTURE) else 0.0
            v["build_file"], v["build_asked"] = build_features(path, asked)
        fact_rows = facts.rows()
    has_history = False
    for path, n_lines, size, prior, importers, commits, age, read in fact_rows:
        cand = pool[path]
        cand.size = int(size)
        cand.values["lines"] = math.log1p(int(n_lines))
        if prior is not None:
            cand.values["prior"] = float(prior)
            cand.values["importers"] = math.log1p(int(importers))
        if commits is not None:
            cand.changed = (int(commits), int(age))
        has_history = has_history or bool(read)
    most = max((c.changed[0] for c in pool.values() if c.changed), default=0)
    for cand in pool.values():
        v = cand.values
        v["churn"], v["churn_rel"], v["recent"] = history_values(cand.changed, most)

    if declared:
        doc_terms = _DocTerms(term_group)
        rows = [row for part in declared for row in part.rows() if row[0] in pool]
        for path, name, depth, doc in rows[:W.DECLARED_ROWS]:
            for t in identifier_terms(name):
                for i in term_group.get(t, ()):
                    sym_hits[path].add(i)
                    if depth == 0:
                        sym_top[path].add(i)
            if doc:  # a doc word counts whole (``identifier_terms(word)[0]``), not split
                for t in doc_terms.found(doc):
                    doc_hits[path].update(term_group.get(t, ()))
    for cand in pool.values():
        v = cand.values
        cand.symbol_groups = sym_hits.get(cand.path, set())
        v["sym_idf"] = sum(groups[i].idf for i in cand.symbol_groups) / total_idf
        v["sym_top_idf"] = sum(groups[i].idf for i in sym_top.get(cand.path, ())) / total_idf
        v["doc_idf"] = sum(groups[i].idf for i in doc_hits.get(cand.path, ())) / total_idf
    return Pool(groups, list(pool.values()), lexical_order,
                [p for p in semantic_order if p in pool], long_query, pending_terms,
                has_history)
