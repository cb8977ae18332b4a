"""Whole-file ranking for long queries (an issue text, a stack trace, a task description).

Okapi BM25 over files: term frequencies from ``file_terms`` (whole-file postings written
at index time), plus a bonus when the file's path contains the term. Short queries do not
need this: the chunk rankers and the coverage ordering of ``find_files`` serve them better.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from typing import NamedTuple

import psycopg

from codenav.access import Scope
from codenav.db import queries as q
from codenav.search.query import Group, tsquery_for
from codenav.search.weights import BM25_B as B
from codenav.search.weights import BM25_K1 as K1
from codenav.search.weights import DECLARES_BOOST, DECLARES_CAP, MODULE_BOOST, PATH_TF

LONG_QUERY_GROUPS = 7
"""Queries with at least this many informative groups are ranked file by file."""
MAX_GROUPS = 128
MAX_QUERY_TF = 10


class RankedFile(NamedTuple):
    path: str
    score: float
    counts: dict[int, float]
    """Term frequency of each query group (by index) in the file, its path included."""
    path_groups: AbstractSet[int]
    """The groups its path matches."""


_NO_GROUPS: frozenset[int] = frozenset()


def usable_groups(groups: list[Group], n_chunks: int = 0) -> list[Group]:
    """The most informative groups (by IDF), at most ``MAX_GROUPS``."""
    return sorted(groups, key=lambda g: -g.idf)[:MAX_GROUPS]




def mention_boosts(conn: psycopg.Connection, scope: Scope,
                   identifiers: list[str]) -> dict[str, float]:
    """Multipliers for files that declare, or are the module of, identifiers the query
    spells out: issue texts name the code they are about."""
    names: set[str] = set()
    modules: set[str] = set()
    for ident in identifiers:
        parts = [p for p in ident.replace("::", ".").replace("/", ".").split(".") if p]
        if not parts:
            continue
        names.add(parts[-1].lower())
        for end in range(len(parts), 0, -1):  # a.b.C -> a/b/C.py, a/b.py, ...
            if end >= 2 or len(parts) == 1:
                modules.add("/".join(parts[:end]))
    boosts: dict[str, float] = {}
    if names:
        for path, count in conn.execute(q.DECLARING_FILES, scope.params(names=sorted(names))):
            boosts[path] = 1.0 + DECLARES_BOOST * min(int(count), DECLARES_CAP)
    return boosts | {p: b for p, b in _module_paths(modules).items()}


def _module_paths(modules: set[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for module in modules:
        if "/" not in module:
            continue
        for path in (f"{module}.py", f"{module}/__init__.py"):
            out[path] = 1.0 + MODULE_BOOST
    return out


class FileScores:
    """Every file holding a query term, scored, best first (ties by path); a file's
    ``RankedFile`` (its per-group counts and path groups) is built when asked for, so a
    query over thousands of files pays only for the few it reads."""

    __slots__ = ("_order", "_counts", "_path_hits", "_score")

    def __init__(self, order: list[tuple[float, str]], counts: dict[str, dict[int, float]],
                 path_hits: dict[str, set[int]]) -> None:
        self._order = order
        """(-score, path), sorted."""
        self._counts = counts
        self._path_hits = path_hits
        self._score = {path: -neg for neg, path in order}

    @property
    def best(self) -> float:
        return -self._order[0][0] if self._order else 0.0

    def paths(self, limit: int | None = None) -> Iterator[str]:
        """File paths, best first."""
        for _neg, path in self._order[:limit]:
            yield path

    def score(self, path: str) -> float:
        """The file's score, 0 when it holds no query term."""
        return self._score.get(path, 0.0)

    def get(self, path: str) -> RankedFile | None:
        score = self._score.get(path)
        return None if score is None else self._ranked(path, score)

    def top(self, limit: int) -> list[RankedFile]:
        return [self._ranked(path, -neg) for neg, path in self._order[:limit]]

    def _ranked(self, path: str, score: float) -> RankedFile:
        return RankedFile(path, score, self._counts[path], self._path_hits.get(path, _NO_GROUPS))


def rank_files(conn: psycopg.Connection, scope: Scope, groups: list[Group],
               limit: int = 100, boosts: dict[str, float] | None = None) -> list[RankedFile]:
    """Files ranked by BM25 for ``groups`` (each group's ``count`` is its query frequency;
    a group's alternatives, such as plural forms, add up)."""
    return score_files(conn, scope, groups, boosts).top(limit)


def score_files(conn: psycopg.Connection, scope: Scope, groups: list[Group],
                boosts: dict[str, float] | None = None) -> FileScores:
    """``rank_files`` for every file holding a query term (in the order of its score, ties
    by path)."""
    if not groups:
        return FileScores([], {}, {})
    group_of: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        for term in g.terms:
            group_of[term].append(i)
    row = conn.execute(q.REPO_FILE_STATS, scope.params()).fetchone()
    n_files = int(row[0]) if row else 0
    avg_size = float(row[1]) if row and row[1] else 1.0
    # The loops below run over every file holding a query term (thousands on a large
    # repository), so they stay plain: rows fetched at once, tuples until the cut, and the
    # float arithmetic in the order the formula reads.
    counts: dict[str, dict[int, float]] = defaultdict(dict)
    sizes: dict[str, int] = {}
    for term, path, tf, size in conn.execute(q.FILE_TERM_POSTINGS, {
            "terms": list(group_of), **scope.params()}).fetchall():
        per_file = counts[path]
        for i in group_of[term]:
            per_file[i] = per_file.get(i, 0.0) + float(tf)
        sizes[path] = int(size)
    path_hits: dict[str, set[int]] = defaultdict(set)
    tsqs = [tsquery_for(g.terms) for g in groups]
    for i, path in conn.execute(q.FILE_GROUP_PATHS, scope.params(
            tsqs=tsqs, any=tsquery_for(list(group_of)))).fetchall():
        path_hits[path].add(i - 1)
        counts[path][i - 1] = counts[path].get(i - 1, 0.0) + PATH_TF
    df = [0] * len(groups)
    for per_file in counts.values():
        for i in per_file:
            df[i] += 1
    idf = [math.log(1.0 + (n_files - d + 0.5) / (d + 0.5)) for d in df]
    weight = [float(min(max(g.count, 1), MAX_QUERY_TF)) for g in groups]
    factor = [w * f for w, f in zip(weight, idf, strict=True)]  # weight[i] * idf[i]
    k1_plus_1 = K1 + 1
    modules = _module_boosts(boosts) if boosts else []
    scored = []
    for path, per_file in counts.items():
        norm = K1 * (1 - B + B * sizes.get(path, avg_size) / avg_size)
        score = sum([factor[i] * tf * k1_plus_1 / (tf + norm) for i, tf in per_file.items()])
        if boosts:
            score *= _boost_for(path, boosts, modules)
        scored.append((-score, path))
    scored.sort()
    return FileScores(scored, counts, path_hits)


def _module_boosts(boosts: dict[str, float]) -> list[tuple[str, float]]:
    """The boosts that can match a path's tail (module paths: ``a/b.py``), in order."""
    return [(key, value) for key, value in boosts.items() if "/" in key and key.endswith(".py")]


def _boost_for(path: str, boosts: dict[str, float], modules: list[tuple[str, float]]) -> float:
    """The file's own boost times a module-path boost (``_module_boosts``) matched on its
    path's tail."""
    factor = boosts.get(path, 1.0)
    for key, value in modules:
        if key != path and path.endswith("/" + key):
            factor *= value
            break
    return factor
