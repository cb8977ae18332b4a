"""``search``: the chunks that answer a query, fused from three lexical rankers.

1. lexical: full-text match over the code-aware token stream, IDF-weighted per term group;
2. declarations: chunks declaring exactly a symbol the query names;
3. fuzzy symbols: trigram similarity on symbol names, for misspelt or partial names.
The lists are fused with RRF, then path and kind priors apply.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import psycopg
from psycopg import sql

from codenav.access import Scope
from codenav.answers import empty_reason, glob_to_regex, stats
from codenav.db import queries as q
from codenav.db.side import Side, inline
from codenav.embed import vectors
from codenav.errors import InvalidRequest
from codenav.graph.common import file_priors
from codenav.lang import conventions
from codenav.parse.model import CHUNK_KINDS
from codenav.search import bm25, fusion
from codenav.search import weights as W
from codenav.search.query import Group, ParsedQuery, asked_roles, parse_query, tsquery_for
from codenav.search.semantic import MODES, SemanticContext, describe_semantic
from codenav.tokens import identifier_terms
from codenav.tokens import path_terms as path_terms_of

MAX_LIMIT = 50
MAX_GROUPS = 24
CANDIDATE_BUDGET = 3000
"""Sum of document frequencies the fallback (OR) candidate query may cover; rare terms go
first. Scoring costs a few microseconds per candidate, so this bounds latency."""
CANDIDATE_CAP = 6000
"""Hard cap on scored candidates. A query whose rarest group is estimated over it is ranked
inside BM25's best files instead (``Weighted.over_cap``; with a kind or exported filter,
when a count confirms it: ``capped``)."""
OVER_CAP_FILES = 100
"""A query over the cap (``Weighted.over_cap``) ranks the chunks of this many of BM25's best
files, each by its own score. On Apache Kafka, of 790 queries drawn from its declarations,
682 found the declaration they were drawn from in the top 10 and 496 first, against 681
and 501 with the cap (bench/README.md)."""
PAIR_GROUPS = 6
"""The rarest groups combined pairwise for the first candidate query (two groups or more)."""


@dataclass(frozen=True)
class Filters:
    language: str | None = None
    path: str | None = None
    kind: str | None = None
    exported: bool = False

    @property
    def narrows_chunks(self) -> bool:
        """Whether only some chunks of a file may be answered (a kind or exported filter):
        a whole-file ranking cannot apply it."""
        return bool(self.kind or self.exported)

    @property
    def filtered(self) -> bool:
        """Whether any filter is set."""
        return bool(self.language or self.path or self.narrows_chunks)

    @property
    def files(self) -> bm25.Within:
        """The files the language and path filters let through, for a whole-file ranking."""
        return bm25.Within(self.language, glob_to_regex(self.path) if self.path else None)

    def params(self) -> dict[str, Any]:
        return {"kind": self.kind, "exported": self.exported, **self.files.params()}


@dataclass
class Weighted:
    """A parsed query with IDF weights, ready for the rankers."""

    query: ParsedQuery
    groups: list[Group]
    candidate_terms: list[str]
    avg_terms: float
    known_terms: set[str]
    n_chunks: int = 0
    pending_terms: bool = False
    """Some contents have no whole-file postings yet (a first index's, for seconds): their
    document frequencies, and their postings in ``bm25.score_files``, come from chunks."""

    @property
    def over_cap(self) -> bool:
        """Whether even the rarest group is in more chunks than ``CANDIDATE_CAP`` (by the
        estimate in ``Group.df``): the lexical ranker would score only the first of them in
        the table's physical order, so its answer would change when rows move on disk (an
        edit elsewhere, a VACUUM FULL, a store restored from a seed)."""
        return bool(self.groups) and min(g.df for g in self.groups) > CANDIDATE_CAP

    def candidate_queries(self) -> list[str]:
        """Candidate tsqueries, most selective first: chunks matching at least two of the
        rarest groups, then chunks matching any rare term (within the budget)."""
        out = []
        rare = sorted(self.groups, key=lambda g: g.df)[:PAIR_GROUPS]
        pairs = [f"({tsquery_for(a.terms)}) & ({tsquery_for(b.terms)})"
                 for a, b in combinations(rare, 2) if min(a.df, b.df) <= CANDIDATE_BUDGET]
        if pairs:
            out.append(" | ".join(f"({p})" for p in pairs))
        if self.candidate_terms:
            out.append(tsquery_for(self.candidate_terms))
        return out


def weigh(conn: psycopg.Connection, query: ParsedQuery, max_groups: int = 128,
          budget: int = CANDIDATE_BUDGET) -> Weighted:
    """Look up document frequencies, keep the most informative groups, and choose the
    rare terms whose matches form the candidate set."""
    rows = conn.execute(q.STATS_QUERY, {"terms": query.all_terms}).fetchall()
    row = rows[0] if rows else None
    n_chunks = int(row[0]) if row and row[0] else 0
    avg_terms = float(row[1]) if row and row[1] else 50.0
    n_docs = int(row[2]) if row and row[2] else 0
    if not n_chunks:  # chunk statistics not computed yet: count the live table instead
        live = conn.execute(q.STATS_CHUNK_COUNT).fetchone()
        n_chunks = int(live[0]) if live else 0
    if not n_docs:
        docs = conn.execute(q.STATS_CONTENTS).fetchone()
        n_docs = int(docs[0]) if docs else 0
    n_docs = max(n_docs, 1)
    per_doc = n_chunks / n_docs if n_chunks else 10.0
    dfs: dict[str, int] = {r[3]: int(r[4]) for r in rows if r[3] is not None}
    pending = bool(row[5]) if row else False
    if pending:
        for term, n in conn.execute(q.STATS_PENDING_DF, {"terms": query.all_terms}):
            dfs[term] = dfs.get(term, 0) + int(n)
    groups = []
    for g in query.groups:
        present = tuple(t for t in g.terms if dfs.get(t, 0) > 0)
        if not present:
            continue
        df = max(dfs[t] for t in present)  # files containing the term
        # IDF over files; ``df`` kept in chunks (estimated) for the candidate budget
        groups.append(Group(terms=present, label=g.label, idf=fusion.idf(df, n_docs),
                            df=max(1, round(df * per_doc)), count=g.count))
    keep = fusion.top_groups(((i, g.idf) for i, g in enumerate(groups)), max_groups)
    groups = [groups[i] for i in keep]
    candidates: list[str] = []
    covered = 0
    for g in sorted(groups, key=lambda g: g.df):
        if candidates and covered + g.df > budget:
            break
        candidates += list(g.terms)
        covered += g.df
    return Weighted(query=query, groups=groups, candidate_terms=candidates,
                    avg_terms=max(avg_terms, 1.0),
                    known_terms={t for t, df in dfs.items() if df > 0}, n_chunks=n_chunks,
                    pending_terms=pending)


def lexical_ranking(conn: psycopg.Connection, scope: Scope, w: Weighted, filters: Filters,
                    k: int, need: int | None = None) -> list[tuple[int, str, float]]:
    """The ``k`` best chunks, scored over candidates: the chunks holding two of the rarest
    groups, then any of the rarest terms, until ``k // 2`` are found. With a filter, when
    fewer than ``need`` (by default ``k // 2``) of those pass it, every chunk it lets
    through that holds a query term is a candidate."""
    if not w.groups:
        return []
    groups = sorted(w.groups, key=lambda g: -g.idf)[:MAX_GROUPS]
    params: dict[str, Any] = {
        "avg_terms": w.avg_terms, **scope.params(), "k": k, "cap": CANDIDATE_CAP,
        **filters.params(), "files": bool(filters.language or filters.path),
    }
    for i, g in enumerate(groups):
        params[f"q{i}"], params[f"w{i}"] = tsquery_for(g.terms), g.idf
    found: dict[tuple[int, str], float] = {}

    def run(statement: sql.Composed, plan: str, candidates: str) -> None:
        with conn.transaction():
            conn.execute(plan)
            rows = conn.execute(statement, {**params, "any": candidates}).fetchall()
        for r in rows:
            found.setdefault((r[0], r[1]), float(r[2] or 0.0))

    statement = q.search_lexical(len(groups), scope.flat)
    for candidates in w.candidate_queries():
        run(statement, q.LEXICAL_PLAN, candidates)
        if len(found) >= k // 2:
            break
    if filters.filtered and len(found) < (k // 2 if need is None else need):
        # the filters let through few of the chunks holding the rarest terms: then every
        # chunk they let through that holds a query term is a candidate
        run(q.search_lexical(len(groups), scope.flat, filtered=True), q.LEXICAL_PLAN_FILTERED,
            tsquery_for([t for g in groups for t in g.terms]))
    ranked = sorted(found.items(), key=lambda kv: -kv[1])[:k]
    return [(key[0], key[1], score) for key, score in ranked]


def lexical_in_files(conn: psycopg.Connection, scope: Scope, w: Weighted, filters: Filters,
                     k: int, asked: bm25.Asked | None = None, top_files: int = W.TOP_FILES,
                     by_file: bool = True) -> list[tuple[int, str, float]]:
    """Chunks for a long query or a task description (``_files_first``): the ``top_files``
    best files by BM25 among those the filters let through, then the best chunks in them,
    each chunk's score scaled by its file's (``by_file``), or by its own score alone (a
    query over the cap: ``Weighted.over_cap``). ``asked``: BM25's statements sent ahead
    (``bm25.ask``) for ``bm25.usable_groups(w.groups)`` and ``filters.files``."""
    boosts = bm25.mention_boosts(conn, scope, w.query.identifiers)
    files = bm25.rank_files(conn, scope, bm25.usable_groups(w.groups, w.n_chunks),
                            top_files, boosts, w.pending_terms, asked, filters.files)
    if not files:
        return []
    best = files[0].score or 1.0
    file_weight = {f.path: f.score / best for f in files}
    groups = sorted(w.groups, key=lambda g: -g.idf)[:MAX_GROUPS]
    rows = conn.execute(scope.sql(q.SEARCH_IN_FILES), {
        "tsqs": [tsquery_for(g.terms) for g in groups], "weights": [g.idf for g in groups],
        "avg_terms": w.avg_terms, **scope.params(), "k": k, "paths": list(file_weight),
        "any": tsquery_for([t for g in groups for t in g.terms]), **filters.params(),
    }).fetchall()
    if not by_file:
        return [(r[0], r[1], float(r[2] or 0.0)) for r in rows]
    top_chunk = max((float(r[2] or 0.0) for r in rows), default=0.0) or 1.0
    # The file's rank leads; a strong chunk can still lift its file a little.
    scored = [(r[0], r[1], file_weight[r[1]] + W.CHUNK_LIFT * float(r[2] or 0.0) / top_chunk)
              for r in rows]
    return sorted(scored, key=lambda r: -r[2])


def capped(conn: psycopg.Connection, w: Weighted) -> bool:
    """Whether more chunks than ``CANDIDATE_CAP`` hold a query term (counted up to one past
    it, not estimated): then the lexical ranker's candidates, the rarest terms' chunks or
    those a filter lets through, may be cut by the cap. A query with a kind or exported
    filter asks before it leaves the lexical ranker for BM25's best files, which may hold
    few chunks of a kind."""
    with conn.transaction():
        conn.execute(q.LEXICAL_PLAN)
        row = conn.execute(q.CANDIDATES_OVER_CAP, {
            "any": tsquery_for([t for g in w.groups for t in g.terms]),
            "cap": CANDIDATE_CAP}).fetchone()
    return bool(row and row[0])


def _files_first(query: ParsedQuery, long_query: bool, filters: Filters) -> bool:
    """Whether ``search`` ranks a query's chunks inside BM25's best files: a long query, or
    one of ``SEARCH_FILES_FIRST_WORDS`` words, which describes a task. BM25 ranks the files
    a language or path filter lets through; it cannot see a kind or exported filter, and
    with one a short query ranks every chunk the filter lets through."""
    return long_query or (query.words >= W.SEARCH_FILES_FIRST_WORDS
                          and not filters.narrows_chunks)


def declaration_ranking(conn: psycopg.Connection, scope: Scope, query: ParsedQuery,
                        filters: Filters, k: int) -> tuple[list[tuple[int, str]],
                                                           set[tuple[int, str]]]:
    """Chunks declaring a name the query uses, and the subset whose owner the query also
    names (``KafkaConsumer poll`` -> ``KafkaConsumer.poll``)."""
    names: dict[str, set[str]] = {}
    typed = [w.lower() for w in query.raw.replace("::", ".").split()]
    for ident in query.identifiers:
        parts = [p for p in ident.replace("::", ".").split(".") if p]
        if parts:
            owners = names.setdefault(parts[-1].lower(), set())
            if len(parts) > 1:
                owners.add(parts[-2].lower())
    # "KafkaConsumer poll" reads as Owner.member
    long_query = len(query.groups) >= bm25.LONG_QUERY_GROUPS
    for first, second in zip(typed, typed[1:], strict=False):
        if long_query:
            break  # in prose, neighbouring words are rarely Owner.member
        if first.isidentifier() and second.isidentifier():
            names.setdefault(second, set()).add(first)
            names.setdefault(first, set())
    if len(query.groups) <= 3:
        for g in query.groups:
            names.setdefault(g.terms[0], set())
    if not names:
        return [], set()
    qualified = [f"{owner}.{name}" for name, owners in names.items() for owner in owners]
    rows = conn.execute(scope.sql(q.SEARCH_DECLARATIONS), {
        "names": list(names), "qualified": qualified, **scope.params(), "k": k,
        **filters.params()}).fetchall()

    # a query that is one identifier and nothing else asks for that declaration: its chunk
    # is an exact match, boosted like Owner.member, however short (chunks under the
    # embedding minimum have no vector, so hybrid search's semantic list cannot vote for it)
    lone = query.raw.strip()
    lone = lone if query.identifiers == [lone] and lone.isidentifier() else ""

    def key(row: tuple) -> tuple[int, int]:
        """Members of the owner the query names first, then exact names, constructors last."""
        owners = names.get((row[2] or "").lower(), set())
        owned = 0 if owners and (row[3] or "").lower() in owners or lone and row[2] == lone \
            else 1
        return owned, 1 if row[4] == "constructor" else 0

    exact = {(r[0], r[1]) for r in rows if key(r)[0] == 0}
    return [(r[0], r[1]) for r in sorted(rows, key=key)], exact


def trigram_ranking(conn: psycopg.Connection, scope: Scope, query: ParsedQuery,
                    filters: Filters, k: int) -> list[tuple[int, str]]:
    names = [i.replace("::", ".").split(".")[-1].lower() for i in query.identifiers[:3]]
    if not names and len(query.groups) <= 2:
        names = [query.groups[0].terms[0]]
    out: list[tuple[int, str]] = []
    for name in names:
        if len(name) < 3:
            continue
        rows = conn.execute(scope.sql(q.SEARCH_TRIGRAM), {"name": name, **scope.params(), "k": k,
                                               **filters.params()}).fetchall()
        out += [(r[0], r[1]) for r in rows]
    return out


def validate(limit: int, kind: str | None) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be between 1 and {MAX_LIMIT}")
    if kind and kind not in CHUNK_KINDS:
        raise InvalidRequest(f"unknown kind {kind!r}",
                             hint="one of: " + ", ".join(sorted(CHUNK_KINDS)))


def semantic_ranking(conn: psycopg.Connection, scope: Scope, ctx: SemanticContext | None,
                     filters: Filters, k: int) -> list[tuple[int, str, float]]:
    if ctx is None or not ctx.usable:
        return []
    assert ctx.model is not None and ctx.vector is not None
    return vectors.knn(conn, ctx.model, ctx.vector, scope, filters.params(), k)


def search(conn: psycopg.Connection, scope: Scope, text: str, limit: int = 10,
           filters: Filters = Filters(), mode: str = "hybrid",
           semantic: SemanticContext | None = None, side: Side | None = None,
           ) -> dict[str, Any]:
    """The best chunks for ``text``: ``hybrid`` fuses the lexical rankers with vector k-NN,
    ``lexical`` and ``semantic`` use one side. Semantic trouble degrades, never fails. The
    rankers that do not need each other's answers go ahead on ``side``
    (``codenav.db.side``; by default all run on ``conn``)."""
    started = time.monotonic()
    validate(limit, filters.kind)
    if mode not in MODES:
        raise InvalidRequest(f"unknown mode {mode!r}", hint="hybrid, lexical or semantic")
    side = side if side is not None else inline(conn)
    query = parse_query(text)
    depth = max(W.SEARCH_DEPTH_MIN, limit * W.SEARCH_DEPTH_PER_RESULT)
    nearest = side.call(lambda c: semantic_ranking(c, scope, semantic, filters, depth)) \
        if mode == "hybrid" and semantic is not None and semantic.usable else None
    vectors = semantic_ranking(conn, scope, semantic, filters, depth) if mode == "semantic" \
        else []
    use_lexical = mode != "semantic" or not vectors
    lexical: list[tuple[int, str, float]] = []
    decls: list[tuple[int, str]] = []
    owned: set[tuple[int, str]] = set()
    fuzzy: list[tuple[int, str]] = []
    unknown = False
    if use_lexical:
        weighted = weigh(conn, query)
        long_query = len(weighted.groups) >= bm25.LONG_QUERY_GROUPS
        unknown = any(t not in weighted.known_terms for t in
                      (identifier_terms(i.split(".")[-1])[0] for i in query.identifiers[:3]
                       if identifier_terms(i.split(".")[-1])))

        def names_and_fuzzy(c: psycopg.Connection) -> tuple[
                list[tuple[int, str]], set[tuple[int, str]], list[tuple[int, str]]]:
            """The declarations the query names; then, for a short query, the trigram
            list: a name the index does not know is looked up whatever else is found, and
            a query naming no declaration gets it as a fallback (prose has no misspelt name
            to fix). Both go ahead while the lexical ranker runs."""
            found, exact = declaration_ranking(c, scope, query, filters, W.DECLARATION_DEPTH)
            near = trigram_ranking(c, scope, query, filters, W.FUZZY_DEPTH) \
                if not long_query and (unknown or not found) else []
            return found, exact, near

        task = _files_first(query, long_query, filters)
        # a query of common words only: the chunks holding them are too many to score, and
        # which of them a cap kept would depend on where rows lie on disk; its chunks are
        # ranked inside BM25's best files instead
        over_cap = not task and weighted.over_cap and (
            not filters.narrows_chunks or capped(conn, weighted))
        files_first = bool(weighted.groups) and (task or over_cap)
        # BM25's statistics and path matches go ahead of the declarations on ``side``
        asked = bm25.ask(scope, bm25.usable_groups(weighted.groups), side, filters.files) \
            if files_first else None
        declared = side.call(names_and_fuzzy)
        if over_cap:
            lexical = lexical_in_files(conn, scope, weighted, filters, depth, asked,
                                       OVER_CAP_FILES, by_file=False)
        elif files_first:
            lexical = lexical_in_files(conn, scope, weighted, filters, depth, asked)
        if not files_first or len(lexical) < limit:
            # a kind or exported filter may leave fewer than ``limit`` chunks in BM25's best
            # files, and BM25 leaves out one-letter terms: then every chunk is ranked, and
            # what the best files gave stays first
            found = {(i, p) for i, p, _ in lexical}
            every = lexical_ranking(conn, scope, weighted, filters, depth, limit)
            lexical += [r for r in every if (r[0], r[1]) not in found]
        decls, owned, fuzzy = declared.result()
    if nearest is not None:
        vectors = nearest.result()
    lists = {
        "lexical": [(i, p) for i, p, _ in lexical],
        "declaration": decls,
        "fuzzy": fuzzy,
        "semantic": [(i, p) for i, p, _ in vectors],
    }
    fused = fusion.rrf(list(lists.values()), weights=[
        W.LEXICAL_WEIGHT_UNKNOWN if unknown else W.LEXICAL_WEIGHT,
        W.DECLARATION_WEIGHT if query.identifiers else W.DECLARATION_WEIGHT_PROSE,
        W.FUZZY_WEIGHT_UNKNOWN if unknown else W.FUZZY_WEIGHT, W.SEMANTIC_WEIGHT])
    keys: list[tuple[int, str]] = list(fused)  # type: ignore[arg-type]
    ids = [key[0] for key in keys]
    paths = sorted({path for _id, path in keys})
    priors = side.call(lambda c: file_priors(c, scope, paths))
    details = {r[0]: r for r in conn.execute(scope.sql(q.CHUNK_DETAILS),
                                             scope.params(ids=ids)).fetchall()} if ids else {}
    about_docs = fusion.asks_for_docs(text)
    build_asked = conventions.BUILD in asked_roles(query, text)
    central = priors.result()
    query_terms = {t for g in query.groups for t in g.terms}
    scored = []
    for key in keys:
        score = fused[key]
        chunk_id, path = key
        row = details.get(chunk_id)
        if row is None:
            continue
        score *= fusion.path_prior(path, query.wants_tests, about_docs, build_asked) *\
            fusion.kind_prior(row[1], query.definition_intent, build_asked, path) *\
            fusion.centrality_prior(central.get(path, 0.0)) *\
            fusion.path_terms_prior(path_terms_of(path), query_terms)
        if key in owned:
            score *= W.QUALIFIED_BOOST
        scored.append((score, path, row))
    scored.sort(key=lambda s: (-s[0], s[1], s[2][6]))
    scored = _diversify(scored)
    results = []
    sizes: dict[str, int] = {}
    for score, path, row in scored[:limit]:
        (_id, kind, symbol, parent, signature, _doc, start, end, body, part, _exp, language,
         size, _lines) = row
        content, cut = _clip(body)
        item: dict[str, Any] = {"path": path, "start_line": start, "end_line": end,
                                "kind": kind, "symbol": symbol, "score": round(score * 1000, 2),
                                "content": content}
        if cut:
            item["truncated"] = f"{cut} more lines; read(path, start_line, end_line) for all"
        if parent:
            item["parent"] = parent
        if part:
            item["part"] = part
        item["language"] = language
        results.append(item)
        sizes[path] = size
    answer: dict[str, Any] = {"repo": scope.name, "query": text, "mode": mode,
                              "results": results}
    top_keys = [(r[2][0], r[1]) for r in scored[:limit]]
    distances = {(i, p): d for i, p, d in vectors}
    answer["match_confidence"] = fusion.match_confidence(
        top_keys, [s for s, _, _ in scored[:2]], lists, owned,
        distances.get(top_keys[0]) if top_keys else None)
    describe_semantic(answer, mode, semantic)
    if not results:
        answer["empty"] = empty_reason(conn, scope, filters.language, filters.path,
                                       filters.kind, filters.exported)
    answer["_stats"] = stats(answer, sizes, started)
    return answer


MAX_RESULT_LINES = 80


def _clip(body: str) -> tuple[str, int]:
    lines = body.split("\n")
    if len(lines) <= MAX_RESULT_LINES:
        return body, 0
    return "\n".join(lines[:MAX_RESULT_LINES]), len(lines) - MAX_RESULT_LINES


def _diversify(scored: list[tuple[float, str, tuple]]) -> list[tuple[float, str, tuple]]:
    """Overloads and split parts of one symbol in one file crowd a result page: each
    repeat of the same (path, symbol) counts for less."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for score, path, row in scored:
        key = (path, row[2] or f"@{row[6]}")
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append((score * (W.REPEAT_DECAY ** n), path, row))
    out.sort(key=lambda s: (-s[0], s[1], s[2][6]))
    return out
