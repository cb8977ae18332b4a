"""Whole-file ranking for long queries (an issue text, a stack trace, a task description).

Okapi BM25 over files: term frequencies from ``file_terms`` (whole-file postings written
at index time), plus a bonus when the file's path contains the term. Short queries do not
need this: the chunk rankers and the coverage ordering of ``find_files`` serve them better.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import psycopg

from codenav.access import Scope
from codenav.db import queries as q
from codenav.db import side
from codenav.db.side import Pending, Side
from codenav.lang import language_for
from codenav.search.query import Group, tsquery_for
from codenav.search.weights import BM25_B as B
from codenav.search.weights import BM25_K1 as K1
from codenav.search.weights import DECLARES_BOOST, DECLARES_CAP, MODULE_BOOST, PATH_TF

LONG_QUERY_GROUPS = 7
"""Queries with at least this many informative groups are ranked file by file."""
MAX_GROUPS = 128
MAX_QUERY_TF = 10


class Within(NamedTuple):
    """The files a ranking runs over: one language, paths matching a regular expression
    (``codenav.answers.glob_to_regex``); None for any. Its statistics count only them."""

    language: str | None = None
    path_re: str | None = None

    def params(self) -> dict[str, str | None]:
        return {"language": self.language, "path_re": self.path_re}

    def keeps(self, path: str) -> bool:
        """Whether ``path`` matches the path pattern and is of the language, as far as its
        name tells: a file that has no extension the index knows may be a script whose first
        line names its language, and is kept (the statements that read ``files.language``
        are exact)."""
        if self.path_re is not None and _pattern(self.path_re).search(path) is None:
            return False
        if self.language is None:
            return True
        named = language_for(path)
        return named == self.language or named == "text"


@lru_cache(maxsize=64)
def _pattern(path_re: str) -> re.Pattern[str]:
    return re.compile(path_re)


EVERY_FILE = Within()


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
        for path, count in conn.execute(scope.sql(q.DECLARING_FILES),
                                        scope.params(names=sorted(names))):
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
    ``RankedFile`` (its per-group counts and path groups) is built when asked for, and the
    order is sorted only as far as it is read, so a query over thousands of files pays only
    for the few it reads."""

    __slots__ = ("_scores", "_paths", "_sorted", "_fid", "_starts", "_groups", "_tfs",
                 "_by_path")

    FIRST_SORT = 256
    """Files ordered at the first read; reading past them orders the rest."""

    def __init__(self, scores: np.ndarray, paths: list[str], fid: dict[str, int],
                 starts: list[int], groups: list[int], tfs: list[float],
                 by_path: list[bool]) -> None:
        self._scores = scores
        """File number -> score."""
        self._paths = paths
        self._sorted: list[tuple[float, str]] = []
        """(-score, path) of the best files, in order: a prefix of the whole order."""
        self._fid = fid
        """Path -> file number; file ``f``'s (group, tf) pairs are ``[starts[f], starts[f+1])``
        of ``groups`` and ``tfs``, by group; ``by_path`` says which of them its path
        matches."""
        self._starts = starts
        self._groups = groups
        self._tfs = tfs
        self._by_path = by_path

    @classmethod
    def empty(cls) -> FileScores:
        return cls(np.zeros(0), [], {}, [0], [], [], [])

    @property
    def best(self) -> float:
        return float(self._scores.max()) if len(self._paths) else 0.0

    def _order(self, limit: int | None) -> list[tuple[float, str]]:
        """At least the first ``limit`` entries of the order (all of it for None)."""
        n = len(self._paths)
        want = n if limit is None else min(limit, n)
        if len(self._sorted) < want:
            self._sorted = _best_first(self._scores, self._paths,
                                       None if want > self.FIRST_SORT else self.FIRST_SORT)
        return self._sorted

    def paths(self, limit: int | None = None) -> Iterator[str]:
        """File paths, best first."""
        n = len(self._paths) if limit is None else min(limit, len(self._paths))
        order = self._order(min(n, self.FIRST_SORT))
        for i in range(n):
            if i == len(order):  # read past the first sort: the rest
                order = self._order(None)
            yield order[i][1]

    def score(self, path: str) -> float:
        """The file's score, 0 when it holds no query term."""
        f = self._fid.get(path)
        return 0.0 if f is None else float(self._scores[f])

    def get(self, path: str) -> RankedFile | None:
        f = self._fid.get(path)
        return None if f is None else self._ranked(path, f)

    def top(self, limit: int) -> list[RankedFile]:
        return [self._ranked(path, self._fid[path]) for _neg, path in self._order(limit)[:limit]]

    def _ranked(self, path: str, f: int) -> RankedFile:
        lo, hi = self._starts[f], self._starts[f + 1]
        groups = self._groups[lo:hi]
        counts = dict(zip(groups, self._tfs[lo:hi], strict=True))
        by_path = self._by_path[lo:hi]
        return RankedFile(path, float(self._scores[f]), counts, frozenset(
            g for g, hit in zip(groups, by_path, strict=True) if hit) if any(by_path)
            else _NO_GROUPS)


def rank_files(conn: psycopg.Connection, scope: Scope, groups: list[Group],
               limit: int = 100, boosts: dict[str, float] | None = None,
               pending: bool = False, asked: Asked | None = None,
               within: Within = EVERY_FILE) -> list[RankedFile]:
    """Files ranked by BM25 for ``groups`` (each group's ``count`` is its query frequency;
    a group's alternatives, such as plural forms, add up). ``pending``, ``asked``,
    ``within``: see ``score_files``."""
    return score_files(conn, scope, groups, boosts, asked=asked, pending=pending,
                       within=within).top(limit)


class Asked(NamedTuple):
    """What ``score_files`` reads beside the postings, sent ahead on a ``Side``."""

    stats: Pending
    """The tree's file count and mean size."""
    paths: Pending
    """One row: the group numbers (from 1) and the paths of every path matching a group."""


def ask(scope: Scope, groups: list[Group], side: Side, within: Within = EVERY_FILE) -> Asked:
    """Send the statements ``score_files`` needs beside the postings ahead on ``side``."""
    terms = list(dict.fromkeys(t for g in groups for t in g.terms))
    return Asked(side.fetch(scope.sql(q.REPO_FILE_STATS), scope.params(**within.params())),
                 side.fetch(scope.sql(q.FILE_GROUP_PATHS), scope.params(
                     tsqs=[tsquery_for(g.terms) for g in groups], any=tsquery_for(terms),
                     **within.params()), binary=True))


def score_files(conn: psycopg.Connection, scope: Scope, groups: list[Group],
                boosts: dict[str, float] | None = None, asked: Asked | None = None,
                pending: bool = False, within: Within = EVERY_FILE) -> FileScores:
    """``rank_files`` for every file holding a query term (in the order of its score, ties
    by path). ``asked``: what ``ask`` sent ahead for the same groups and ``within``; the
    postings are read on ``conn`` meanwhile. ``pending``: some contents have no whole-file
    postings yet (a first index's, ``codenav.index.terms``); theirs are counted from their
    chunks. ``within``: only these files are ranked, and counted (a search's filters)."""
    if not groups:
        return FileScores.empty()
    group_of: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        for term in g.terms:
            group_of[term].append(i)
    if asked is None:
        asked = ask(scope, groups, side.inline(conn), within)
    with conn.cursor(binary=True) as cur:  # one row of arrays (``q.FILE_TERM_POSTINGS``)
        postings = cur.execute(scope.sql(
            q.FILE_TERM_POSTINGS_PENDING if pending else q.FILE_TERM_POSTINGS), {
            "terms": list(group_of), **scope.params(**within.params())}).fetchone()
    stats = asked.stats.rows()
    n_files = int(stats[0][0]) if stats else 0
    avg_size = float(stats[0][1]) if stats and stats[0][1] else 1.0
    path_rows = asked.paths.rows()
    # One entry per (file, group, term) posting, then one per path match, as flat columns:
    # thousands of files hold a common term, so the arithmetic runs over arrays (numpy),
    # and only the files a caller reads get their counts back as a dict.
    terms, posted, tf_col, size_col = [column or [] for column in postings or (None,) * 4]
    path_groups, path_files = [column or [] for column in
                               (path_rows[0] if path_rows else (None, None))]
    paths = list(dict.fromkeys(posted + path_files))
    if not paths:  # no file (none the filters let through) holds a term
        return FileScores.empty()
    fid = {path: i for i, path in enumerate(paths)}
    files = list(map(fid.__getitem__, posted))
    size = np.full(len(paths), avg_size)
    size[files] = size_col  # a file only its path matches counts as of the mean size
    tfs = np.array(tf_col, dtype=np.float64)
    if all(len(ids) == 1 for ids in group_of.values()):
        grp = list(map({term: ids[0] for term, ids in group_of.items()}.__getitem__, terms))
    else:  # a term in several groups counts in each
        expanded = [(f, i, tf) for f, term, tf in zip(files, terms, tf_col, strict=True)
                    for i in group_of[term]]
        files = [f for f, _i, _tf in expanded]
        grp = [i for _f, i, _tf in expanded]
        tfs = np.array([tf for _f, _i, tf in expanded], dtype=np.float64)
    n_posted = len(files)
    files += map(fid.__getitem__, path_files)
    grp += [i - 1 for i in path_groups]
    tfs = np.concatenate([tfs, np.full(len(path_files), PATH_TF)])
    n_groups = len(groups)
    # tf of each (file, group): a group's terms and its path match add up
    keys, inverse = np.unique(np.array(files, dtype=np.int64) * n_groups +
                              np.array(grp, dtype=np.int64), return_inverse=True)
    tf = np.bincount(inverse, weights=tfs, minlength=len(keys))
    by_path = np.bincount(inverse[n_posted:], minlength=len(keys)) > 0
    file_of, group_at = np.divmod(keys, n_groups)
    df = np.bincount(group_at, minlength=n_groups).tolist()
    idf = [math.log(1.0 + (n_files - d + 0.5) / (d + 0.5)) for d in df]
    weight = [float(min(max(g.count, 1), MAX_QUERY_TF)) for g in groups]
    factor = np.array([w * f for w, f in zip(weight, idf, strict=True)])
    norm = K1 * (1 - B + B * size / avg_size)
    contrib = factor[group_at] * tf * (K1 + 1) / (tf + norm[file_of])
    score = np.bincount(file_of, weights=contrib, minlength=len(paths))
    if boosts:
        modules = _module_boosts(boosts)
        score *= np.array([_boost_for(path, boosts, modules) for path in paths]) \
            if modules else np.array([boosts.get(path, 1.0) for path in paths])
    starts = np.searchsorted(file_of, np.arange(len(paths) + 1)).tolist()
    return FileScores(score, paths, fid, starts, group_at.tolist(), tf.tolist(),
                      by_path.tolist())


def _best_first(score: np.ndarray, paths: list[str],
                limit: int | None = None) -> list[tuple[float, str]]:
    """(-score, path) of the best ``limit`` files (every file for None), best first, ties by
    path; files tied with the last one are all included, so the list is a prefix of the
    whole order."""
    neg = -score
    if limit is not None and limit < len(paths):
        cut = np.partition(neg, limit - 1)[limit - 1]
        idx = np.flatnonzero(neg <= cut)
    else:
        idx = np.arange(len(paths))
    return sorted(zip(neg[idx].tolist(), [paths[i] for i in idx.tolist()], strict=True))


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
