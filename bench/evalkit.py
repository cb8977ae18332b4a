"""The retrieval-evaluation harness shared by ``eval_swebench.py`` and ``eval_history.py``.

One repository at a time: a working copy that shares the mirror's objects (``Checkout``),
an embedded Postgres of its own (``store``: term statistics are global to a database, so
repositories must not share one), ``codenav.index.reconcile.reconcile`` run in-process after each
checkout, then every ranker in ``RANKERS`` on every query. Rankers are plain callables:
adding one (say ``search`` in a new mode) is one line in ``RANKERS``; a ranker whose mode
the installed codenav does not know is skipped and listed as such.
"""

from __future__ import annotations

import contextlib
import gzip
import inspect
import json
import logging
import math
import os
import re
import shutil
import statistics
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from benchkit import stores
from codenav import repos
from codenav.access import Scope
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.embed.client import EmbedClient
from codenav.embed.vectors import embed_backlog
from codenav.errors import CodenavError, UserError
from codenav.index.reconcile import reconcile
from codenav.index.walk import walk
from codenav.lang import conventions
from codenav.repos import Repo
from codenav.search import chunks, features, find, fusion
from codenav.search.query import parse_query
from codenav.search.semantic import QueryEmbedder
from codenav.tokens import term_counts, words
from codenav.versions import CHUNKER_VERSION

log = logging.getLogger("codenav.eval")

DEPTH = 50
"""How deep every ranker ranks (codenav's ``limit`` maximum)."""
KS = (1, 3, 5, 10)


# --- git ----------------------------------------------------------------------------------
def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(cwd), *args],
                          capture_output=True, check=False)
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()[-400:]
        raise RuntimeError(f"git {' '.join(args[:3])} failed in {cwd}: {err}")
    return done.stdout.decode("utf-8", "surrogateescape")


def commit_time(repo: Path, sha: str) -> int:
    return int(git(repo, "show", "-s", "--format=%ct", sha).strip())


TEST_EXCLUDES = ["test/", "tests/", "testing/", "test_*.py", "*_test.py", "tests.py",
                 "conftest.py"]
# the same files as codenav.search.fusion.is_test_path, in every language (history evaluations)
ALL_TEST_EXCLUDES = [*TEST_EXCLUDES, "__tests__/", "spec/", "specs/", "testdata/",
                     "test_data/", "fixture/", "fixtures/", "e2e/", "integration-test/",
                     "integration-tests/", "integration_test/", "integration_tests/",
                     "test_*", "*_test.*", "*Test.*", "*Tests.*", "*Spec.*", "*[._-]test.*",
                     "*[._-]tests.*", "*[._-]spec.*", "*[._-]specs.*"]


@dataclass
class Checkout:
    """A working copy of a mirror (``git clone --shared``: no objects copied) holding only
    files with the given extensions (a sparse checkout: the mirrors may lack the blobs of
    large data files), whose ``.git/info/exclude`` also keeps anything else out of the
    index."""

    mirror: Path
    root: Path

    @classmethod
    def prepare(cls, mirror: Path, root: Path, extensions: Iterable[str],
                exclude_tests: bool = False, test_excludes: Iterable[str] = TEST_EXCLUDES,
                ) -> Checkout:
        if not (mirror / "objects").is_dir() and not (mirror / ".git").is_dir():
            raise SystemExit(f"no git repository at {mirror}")
        if not (root / ".git").is_dir():
            root.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(root, ignore_errors=True)
            git(root.parent, "clone", "-q", "--shared", "--no-checkout", str(mirror), root.name)
        # codenav's ignore rules do not re-include directories with `!*/` after `*`, so
        # ignore every name with a dot and re-include the wanted extensions.
        lines = ["# written by bench/evalkit.py", "*.*", *(f"!*{e}" for e in sorted(extensions)),
                 "!*.*/"]  # directories with a dot (Src/Newtonsoft.Json/) stay walkable
        if exclude_tests:  # gold files are never tests; every ranker sees the same corpus
            lines += test_excludes
        exclude = root / ".git" / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("\n".join(lines) + "\n", encoding="utf-8")
        git(root, "sparse-checkout", "set", "--no-cone", *(f"*{e}" for e in sorted(extensions)))
        return cls(mirror, root)

    def checkout(self, sha: str) -> None:
        """Move to ``sha``: git rewrites only files that differ, so the others keep their
        mtime and the indexer re-reads only what changed."""
        git(self.root, "checkout", "-q", "--force", "--detach", sha)
        git(self.root, "clean", "-q", "-fdx")


# --- the store ----------------------------------------------------------------------------
@contextlib.contextmanager
def store(home: Path, fresh: bool, processes: int,
          allowed_root: Path | None = None) -> Iterator[Settings]:
    """An embedded Postgres in ``home``, migrated; yields the settings pointing at it
    (allowing ``allowed_root`` as a repository root)."""
    if fresh and home.exists():
        shutil.rmtree(home)
    with stores(home, queue=False) as started:
        pg = started.pg
        env = {k: v for k, v in os.environ.items() if k.startswith("CODENAV_")}
        env.update({"CODENAV_DATABASE_URL": pg.url, "CODENAV_HOME": str(home),
                    "CODENAV_LOG_LEVEL": "WARNING"})
        if processes:
            env["CODENAV_PARSE_PROCESSES"] = str(processes)
        if allowed_root is not None:
            env["CODENAV_ALLOWED_ROOTS"] = str(allowed_root)
        yield Settings.load(env=env, dotenv=Path("/nonexistent"))


def query_connection(settings: Settings) -> psycopg.Connection:
    """A connection configured like the API's pooled ones."""
    conn = connect(settings, application_name="codenav-eval")
    conn.execute(q.SESSION_SETUP)
    return conn


# --- rankings -----------------------------------------------------------------------------
@dataclass
class Ranking:
    files: list[str]
    modules: list[str] | None = None
    functions: list[str] | None = None

    def without_tests(self) -> Ranking:
        def keep(items: list[str] | None) -> list[str] | None:
            if items is None:
                return None
            return [i for i in items if not fusion.is_test_path(i.split(":", 1)[0])]

        return Ranking(keep(self.files) or [], keep(self.modules), keep(self.functions))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def function_id(hit: dict[str, Any]) -> str | None:
    """``path.py:Class.method``, ``path.py:func`` or ``path.py:Class`` for a search hit on a
    declaration (``Class.__init__`` counts as the class); None for blocks and text."""
    symbol, parent, path = hit.get("symbol"), hit.get("parent"), hit["path"]
    if not symbol or hit.get("kind") in ("block", "text", "section"):
        return None
    if parent and symbol == "__init__":
        return f"{path}:{parent}"
    return f"{path}:{parent}.{symbol}" if parent else f"{path}:{symbol}"


def _module_of(function: str) -> str:
    """``path.py:Class.method`` -> ``path.py:Class``; ``path.py:func`` stays."""
    path, qualname = function.split(":", 1)
    return f"{path}:{qualname.split('.', 1)[0]}"


def rollup(hits: list[dict[str, Any]]) -> Ranking:
    """Chunk hits rolled up to files, modules and functions, each by first appearance."""
    functions = _unique(f for h in hits if (f := function_id(h)))
    modules = _unique(_module_of(f) for f in functions)
    return Ranking(_unique(h["path"] for h in hits), modules, functions)


@dataclass
class Context:
    """What a ranker may use: the query connection, the repository, the BM25 corpus, and
    the query embedder (semantic modes only)."""

    conn: psycopg.Connection
    repo: Repo
    corpus: Corpus
    embedder: Any = None
    """A ``codenav.search.semantic.QueryEmbedder`` when an embedder is configured."""
    outputs: dict[str, Ranking] = field(default_factory=dict)
    """This query's rankings so far (views read their source here)."""


RankFn = Callable[[Context, str], Ranking]
SEMANTIC_MODES = ("semantic", "hybrid")


class Degraded(Exception):
    """A semantic-mode answer that fell back to lexical: the ranker measures nothing new."""


@dataclass(frozen=True)
class Ranker:
    name: str
    run: RankFn
    mode: str | None = None
    """The ``mode`` passed to codenav: ``lexical`` where the installed code takes a mode
    (else no argument); ``semantic``/``hybrid`` need that mode and a configured embedder."""
    entry: Callable[..., Any] | None = None
    """The codenav function called."""
    view: str | None = None
    """The earlier ranker whose output this one is derived from (no latency of its own);
    choosing the view runs that ranker too."""


def _takes_mode(entry: Callable[..., Any], mode: str) -> bool:
    """True if ``entry`` takes ``mode`` (and its module's ``MODES``, if any, lists it)."""
    if "mode" not in inspect.signature(entry).parameters:
        return False
    modes = getattr(inspect.getmodule(entry), "MODES", None)
    return modes is None or mode in modes


def _mode_args(ctx: Context, entry: Callable[..., Any], mode: str,
               text: str) -> dict[str, Any]:
    if not _takes_mode(entry, mode):
        return {}  # a codenav from before modes: lexical only
    if mode not in SEMANTIC_MODES:
        return {"mode": mode}
    return {"mode": mode,
            "semantic": ctx.embedder.context(ctx.conn, Scope.system(ctx.repo), text, mode)}


def _check(answer: dict[str, Any], mode: str) -> dict[str, Any]:
    if mode in SEMANTIC_MODES and answer.get("note"):
        raise Degraded(answer["note"])
    return answer


def _search(mode: str = "lexical") -> RankFn:
    def run(ctx: Context, text: str) -> Ranking:
        extra = _mode_args(ctx, chunks.search, mode, text)
        answer = chunks.search(ctx.conn, Scope.system(ctx.repo), text, DEPTH, chunks.Filters(),
                               **extra)
        return rollup(_check(answer, mode)["results"])

    return run


def _find(mode: str = "lexical") -> RankFn:
    def run(ctx: Context, text: str) -> Ranking:
        extra = _mode_args(ctx, find.find_files, mode, text)
        answer = find.find_files(ctx.conn, Scope.system(ctx.repo), text, DEPTH, False, **extra)
        return Ranking([r["path"] for r in _check(answer, mode)["results"]])

    return run


def _bm25(analyzer: str) -> RankFn:
    def run(ctx: Context, text: str) -> Ranking:
        return Ranking(ctx.corpus.indexes[analyzer].rank(text, DEPTH))

    return run


def _without_tests(source: str) -> RankFn:
    def run(ctx: Context, text: str) -> Ranking:
        return ctx.outputs[source].without_tests()

    return run


def _source_only(source: str) -> RankFn:
    def run(ctx: Context, text: str) -> Ranking:
        files = ctx.outputs[source].files
        return Ranking([p for p in files if conventions.role(p) == conventions.SOURCE])

    return run


RANKERS: list[Ranker] = [
    Ranker("find_files", _find(), "lexical", find.find_files),
    Ranker("search", _search(), "lexical", chunks.search),
    Ranker("find_files semantic", _find("semantic"), "semantic", find.find_files),
    Ranker("search semantic", _search("semantic"), "semantic", chunks.search),
    Ranker("find_files hybrid", _find("hybrid"), "hybrid", find.find_files),
    Ranker("search hybrid", _search("hybrid"), "hybrid", chunks.search),
    Ranker("bm25", _bm25("split")),
    Ranker("bm25 unsplit", _bm25("unsplit")),
    Ranker("search -tests", _without_tests("search"), view="search"),
    Ranker("bm25 -tests", _without_tests("bm25"), view="bm25"),
    Ranker("bm25 source", _source_only("bm25"), view="bm25"),
]
"""Every ranker, in the order they run and are reported. Views (``-tests``: the same
ranking with test files removed; ``source``: only files of the source role, by
``codenav.lang.conventions``, the strongest fair baseline for find_files) come after their
source."""


def select_rankers(names: list[str] | None) -> tuple[list[Ranker], dict[str, str]]:
    """The rankers to run, and the reason each left-out one is left out. A view brings its
    source along (``bm25 source`` alone runs ``bm25`` too: its answers were read from it)."""
    chosen, skipped = [], {}
    wanted = set(names or ()) | {r.view for r in RANKERS if r.view and r.name in (names or ())}
    for ranker in RANKERS:
        if names and ranker.name not in wanted:
            continue
        if ranker.mode in SEMANTIC_MODES and ranker.entry is not None:
            if not _takes_mode(ranker.entry, ranker.mode):
                skipped[ranker.name] = f"installed codenav has no mode={ranker.mode!r}"
                continue
            if not os.environ.get("CODENAV_EMBED_URL"):
                skipped[ranker.name] = "no embedder: set CODENAV_EMBED_URL to evaluate it"
                continue
        chosen.append(ranker)
    return chosen, skipped


def wants_embeddings(rankers: list[Ranker], skipped: dict[str, str]) -> bool:
    return any(r.mode in SEMANTIC_MODES and r.name not in skipped for r in rankers)


class Runner:
    """Runs the chosen rankers on one query. A query codenav refuses (``UserError``: no
    searchable words) ranks nothing; a ranker failing otherwise (an embedder that is not
    there) is switched off with its reason, not retried per query."""

    def __init__(self, rankers: list[Ranker], skipped: dict[str, str]) -> None:
        self.rankers = rankers
        self.skipped = skipped
        self.latency: dict[str, list[float]] = {r.name: [] for r in rankers if not r.view}

    def run(self, ctx: Context, text: str) -> dict[str, Ranking]:
        ctx.outputs = {}
        for ranker in self.rankers:
            if ranker.name in self.skipped:
                continue
            started = time.perf_counter()
            try:
                ctx.outputs[ranker.name] = ranker.run(ctx, text)
            except UserError:  # this query only (no searchable words): an empty ranking
                ctx.outputs[ranker.name] = Ranking([])
            except (CodenavError, Degraded, KeyError) as exc:
                self.skipped[ranker.name] = f"{type(exc).__name__}: {exc}"
                log.warning("ranker %s switched off: %s", ranker.name, exc)
                continue
            if not ranker.view:
                self.latency[ranker.name].append((time.perf_counter() - started) * 1000)
        return ctx.outputs


# --- the whole-file BM25 baseline ---------------------------------------------------------
Analyzer = Callable[[str], Counter[str]]


def split_terms(text: str) -> Counter[str]:
    """codenav's token stream: each identifier and its camel/snake/digit parts."""
    return term_counts(text)


def unsplit_terms(text: str) -> Counter[str]:
    """Whole words only, lower-cased."""
    return Counter(w.lower() for w in words(text))


ANALYZERS: dict[str, Analyzer] = {"split": split_terms, "unsplit": unsplit_terms}


class BM25:
    """Okapi BM25 over whole files, updated incrementally as files change.

    A document is the file's text plus its path (directory and file names); the query is
    analysed like a document, every occurrence of a term counting (no stopword list).
    IDF is Lucene's non-negative ``ln(1 + (N - df + 0.5) / (df + 0.5))``.
    """

    def __init__(self, analyzer: Analyzer, k1: float = 1.2, b: float = 0.75) -> None:
        self.analyzer = analyzer
        self.k1, self.b = k1, b
        self.postings: dict[str, dict[str, int]] = {}
        self.lengths: dict[str, int] = {}
        self._terms: dict[str, tuple[str, ...]] = {}
        self._norm: dict[str, float] | None = None

    def remove(self, path: str) -> None:
        for term in self._terms.pop(path, ()):
            docs = self.postings[term]
            del docs[path]
            if not docs:
                del self.postings[term]
        self.lengths.pop(path, None)
        self._norm = None

    def add(self, path: str, text: str) -> None:
        self.remove(path)
        counts = self.analyzer(text)
        counts.update(self.analyzer(path))
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[path] = tf
        self._terms[path] = tuple(counts)
        self.lengths[path] = sum(counts.values())
        self._norm = None

    def _norms(self) -> dict[str, float]:
        if self._norm is None:
            avg = (sum(self.lengths.values()) / len(self.lengths)) if self.lengths else 1.0
            k1, b = self.k1, self.b
            self._norm = {p: k1 * (1 - b + b * n / avg) for p, n in self.lengths.items()}
        return self._norm

    def rank(self, text: str, k: int) -> list[str]:
        norm = self._norms()
        n_docs = len(self.lengths)
        scores: dict[str, float] = {}
        get = scores.get
        for term, qtf in self.analyzer(text).items():
            docs = self.postings.get(term)
            if not docs:
                continue
            df = len(docs)
            weight = qtf * math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) * (self.k1 + 1)
            for path, tf in docs.items():
                scores[path] = get(path, 0.0) + weight * tf / (tf + norm[path])
        return [p for p, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


class Corpus:
    """The files of a checkout that codenav would index (same walk, same ignore rules),
    kept in step with disk by size and mtime, and one BM25 index per analyzer."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.state: dict[str, tuple[int, int]] = {}
        self.indexes = {name: BM25(fn) for name, fn in ANALYZERS.items()}

    def sync(self) -> int:
        """Bring the indexes in line with disk; returns how many files were (re)read."""
        on_disk = {e.path: (e.size, e.mtime_ns) for e in walk(self.root, self.max_bytes).files}
        for path in [p for p in self.state if p not in on_disk]:
            del self.state[path]
            for index in self.indexes.values():
                index.remove(path)
        changed = [p for p, st in on_disk.items() if self.state.get(p) != st]
        for path in changed:
            text = (self.root / path).read_bytes().decode("utf-8", "replace")
            for index in self.indexes.values():
                index.add(path, text)
            self.state[path] = on_disk[path]
        return len(changed)

    def __contains__(self, path: object) -> bool:
        return path in self.state


# --- metrics ------------------------------------------------------------------------------
LEVELS = ("files", "modules", "functions")


def gold_ranks(gold: list[str], ranking: list[str] | None) -> list[int | None] | None:
    """1-based rank of each gold item in ``ranking`` (None: not ranked)."""
    if ranking is None:
        return None
    where = {item: i + 1 for i, item in enumerate(ranking)}
    return [where.get(g) for g in gold]


def record_ranks(gold: dict[str, list[str]], ranking: Ranking) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for level in LEVELS:
        if gold.get(level):
            out[level] = gold_ranks(gold[level], getattr(ranking, level))
    out["top"] = ranking.files[:10]
    return out


def acc_at(ranks: list[int | None], k: int) -> bool:
    return all(r is not None and r <= k for r in ranks)


def hit_at(ranks: list[int | None], k: int) -> bool:
    """At least one gold item in the top k."""
    return any(r is not None and r <= k for r in ranks)


def reciprocal_rank(ranks: list[int | None]) -> float:
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def summarize(records: list[dict[str, Any]], ranker: str, level: str = "files",
              ks: tuple[int, ...] = KS) -> dict[str, Any] | None:
    """Acc@k (every gold item in the top k) in percent and MRR (first gold item) over the
    records that have gold at ``level`` and a ranking from ``ranker`` at that level."""
    ranks = [r["ranks"][ranker][level] for r in records
             if ranker in r["ranks"] and r["ranks"][ranker].get(level) is not None]
    if not ranks:
        return None
    out: dict[str, Any] = {"n": len(ranks)}
    for k in ks:
        out[f"acc@{k}"] = 100.0 * sum(acc_at(x, k) for x in ranks) / len(ranks)
        out[f"hit@{k}"] = 100.0 * sum(hit_at(x, k) for x in ranks) / len(ranks)
    out["mrr"] = sum(reciprocal_rank(x) for x in ranks) / len(ranks)
    return out


def fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def file_table(records: list[dict[str, Any]], rankers: list[str],
               latency: dict[str, list[float]]) -> str:
    rows = []
    for name in rankers:
        s = summarize(records, name)
        if s is None:
            continue
        rows.append([name, str(s["n"]), *(fmt(s[f"acc@{k}"]) for k in KS), fmt(s["mrr"], 3),
                     fmt(median(latency.get(name, [])), 0)])
    return table(["ranker", "n", "Acc@1", "Acc@3", "Acc@5", "Acc@10", "MRR", "p50 ms"], rows)


HIT_KS = (1, 5, 10)


def language_table(records: list[dict[str, Any]], rankers: list[str],
                   metric: str = "hit") -> str:
    """Per language and overall: hit@1/5/10 (at least one gold file in the top k) or
    Acc@k (all of them), and MRR, one row per ranker."""
    languages = sorted({r.get("language", "?") for r in records})
    groups = [(lang, [r for r in records if r.get("language", "?") == lang])
              for lang in languages] + [("all", records)]
    header = ["ranker"]
    for lang, mine in groups:
        header += [f"{lang} (n={len(mine)}) {metric}@{k}" for k in HIT_KS] + [f"{lang} MRR"]
    rows = []
    for name in rankers:
        cells = [name]
        for _lang, mine in groups:
            s = summarize(mine, name, ks=HIT_KS)
            cells += [fmt(s[f"{metric}@{k}"]) if s else "–" for k in HIT_KS]
            cells.append(fmt(s["mrr"], 3) if s else "–")
        rows.append(cells)
    return table(header, rows)


def compact_language_table(records: list[dict[str, Any]], rankers: list[str],
                           k: int = 5, metric: str = "hit") -> str:
    """One cell per language: the ranker's hit@k (or Acc@k), languages as columns."""
    languages = sorted({r.get("language", "?") for r in records})
    groups = [(lang, [r for r in records if r.get("language", "?") == lang])
              for lang in languages] + [("all", records)]
    rows = []
    for name in rankers:
        cells = [name]
        for _lang, mine in groups:
            s = summarize(mine, name, ks=(k,))
            cells.append(fmt(s[f"{metric}@{k}"]) if s else "–")
        rows.append(cells)
    return table(["ranker", *(f"{lang} (n={len(m)})" for lang, m in groups)], rows)


def split_table(records: list[dict[str, Any]], rankers: list[str]) -> str:
    """Single-gold-file vs multi-gold-file instances."""
    single = [r for r in records if len(r["gold"]["files"]) == 1]
    multi = [r for r in records if len(r["gold"]["files"]) > 1]
    rows = []
    for name in rankers:
        cells = [name]
        for group in (single, multi):
            s = summarize(group, name)
            cells += [fmt(s[f"acc@{k}"]) if s else "–" for k in KS] + [
                fmt(s["mrr"], 3) if s else "–"]
        rows.append(cells)
    head = [f"single (n={len(single)}) Acc@{k}" for k in KS] + ["single MRR"]
    head += [f"multi (n={len(multi)}) Acc@{k}" for k in KS] + ["multi MRR"]
    return table(["ranker", *head], rows)


def repo_table(records: list[dict[str, Any]], rankers: list[str],
               timing: dict[str, dict[str, Any]], k: int = 5) -> str:
    rows = []
    for repo, t in timing.items():
        mine = [r for r in records if r["repo"] == repo]
        cells = [repo, str(len(mine)), str(t["commits"]), str(t["files"]),
                 fmt(t["first_index_s"]), fmt(median(t["incremental_s"]), 2),
                 fmt(median([float(x) for x in t["incremental_parsed"]]), 0)]
        for name in rankers:
            s = summarize(mine, name, ks=(k,))
            cells.append(fmt(s[f"acc@{k}"]) if s else "–")
        rows.append(cells)
    return table(["repo", "n", "commits", "files", "first index s", "incr. index s (median)",
                  "incr. files parsed (median)", *(f"{n} Acc@{k}" for n in rankers)], rows)


# --- one repository, commit by commit -----------------------------------------------------
@dataclass
class Query:
    id: str
    text: str
    gold: dict[str, list[str]]
    """``files`` (and, where known, ``modules`` and ``functions``)."""
    info: dict[str, Any] = field(default_factory=dict)
    """Extra fields copied into the record (the commit subject, the instance's repo...)."""


@dataclass
class RepoTiming:
    commits: int = 0
    files: int = 0
    first_index_s: float | None = None
    first_parsed: int = 0
    incremental_s: list[float] = field(default_factory=list)
    incremental_parsed: list[int] = field(default_factory=list)
    bm25_sync_s: float = 0.0
    embedded: int = 0
    embed_s: float = 0.0
    total_s: float = 0.0


class _Embeddings:
    """Chunk embeddings kept complete after each reindex, and the query side, for the
    semantic modes (only built when one of them runs)."""

    def __init__(self, settings: Settings) -> None:
        client = EmbedClient.from_settings(settings)
        if client is None:
            raise SystemExit("a semantic mode needs CODENAV_EMBED_URL")
        self.client = client
        self.queries = QueryEmbedder(client)

    def complete(self, conn: psycopg.Connection, repo_id: int) -> int:
        """Embed every chunk the repository lacks; returns how many were embedded."""
        done = 0
        while True:
            run = embed_backlog(conn, self.client, repo_id, budget_s=600.0)
            done += run.embedded
            if run.remaining == 0 or not run.embedded:
                return done


class FeatureLog:
    """Per query, the candidate pool ``find_files`` scores and every candidate's features
    (gzip JSON lines, one file per repository), for training the file ranker and scoring
    it leave-one-repository-out (``bench/train_ranker.py``). A row per query and model
    family: ``lexical`` always, ``hybrid`` when an embedder is configured."""

    def __init__(self, path: Path, families: tuple[str, ...]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.families = families
        self._tmp = path.with_suffix(".partial")
        self._out = gzip.open(self._tmp, "wt", encoding="utf-8")

    def record(self, ctx: Context, query: Query, repo: str) -> None:
        for family in self.families:
            scope = Scope.system(ctx.repo)
            semantic = ctx.embedder.context(ctx.conn, scope, query.text, family) \
                if family == "hybrid" and ctx.embedder is not None else None
            try:
                _q, pool, asked, used = find.collect(ctx.conn, scope, query.text, False,
                                                     family, semantic)
            except UserError:
                continue
            if used != family:
                continue  # hybrid degraded to lexical: nothing new to learn from
            self._out.write(json.dumps({
                "id": query.id, "repo": repo, "family": family, "asked": sorted(asked),
                "features": list(features.FEATURES),
                "paths": [c.path for c in pool.candidates],
                "roles": [c.role for c in pool.candidates],
                "x": [[round(v, 4) for v in c.vector()] for c in pool.candidates],
            }) + "\n")

    def close(self) -> None:
        self._out.close()
        os.replace(self._tmp, self.path)


def evaluate_repository(name: str, checkout: Checkout, steps: list[tuple[str, list[Query]]],
                        home: Path, runner: Runner, *, fresh: bool = True, processes: int = 0,
                        on_step: Callable[[list[dict[str, Any]], RepoTiming], None] | None = None,
                        features_path: Path | None = None, info: dict[str, Any] | None = None,
                        ) -> tuple[list[dict[str, Any]], RepoTiming]:
    """Index ``checkout`` at each step's commit in turn (incrementally: reconcile after a
    checkout re-reads only what changed; embeddings completed when a semantic mode runs),
    then run every ranker on the step's queries. ``on_step`` sees the records so far after
    each step (so a long repository's partial results survive an interrupted run);
    ``features_path`` gets the ranker's features of every query (``FeatureLog``); ``info``
    is copied into every record (the repository's language)."""
    records: list[dict[str, Any]] = []
    timing = RepoTiming()
    began = time.perf_counter()
    with store(home, fresh, processes, checkout.root) as settings:
        conn = query_connection(settings)
        vectors = _Embeddings(settings) if wants_embeddings(runner.rankers,
                                                            runner.skipped) else None
        log_features = FeatureLog(features_path, ("lexical", "hybrid") if vectors else
                                  ("lexical",)) if features_path else None
        try:
            repo = repos.register(conn, str(checkout.root), re.sub(r"[^\w.-]", "-", name))
            corpus = Corpus(checkout.root, settings.max_file_bytes)
            for i, (sha, queries) in enumerate(steps):
                checkout.checkout(sha)
                started = time.perf_counter()
                summary = reconcile(settings, repo.id)
                seconds = time.perf_counter() - started
                if i == 0:
                    timing.first_index_s, timing.first_parsed = seconds, summary.files_parsed
                else:
                    timing.incremental_s.append(seconds)
                    timing.incremental_parsed.append(summary.files_parsed)
                if vectors is not None:
                    started = time.perf_counter()
                    timing.embedded += vectors.complete(conn, repo.id)
                    timing.embed_s += time.perf_counter() - started
                started = time.perf_counter()
                corpus.sync()
                timing.bm25_sync_s += time.perf_counter() - started
                timing.commits += 1
                timing.files = summary.files_total
                log.info("%s %d/%d %s: %d files, %d parsed in %.1fs; %d queries", name, i + 1,
                         len(steps), sha[:10], summary.files_total, summary.files_parsed,
                         seconds, len(queries))
                ctx = Context(conn, repo, corpus, vectors.queries if vectors else None)
                for query in queries:
                    outputs = runner.run(ctx, query.text)
                    if log_features is not None:
                        log_features.record(ctx, query, name)
                    records.append({
                        "id": query.id, "repo": name, "commit": sha, **(info or {}),
                        **query.info,
                        "gold": query.gold,
                        "missing_gold": [g for g in query.gold["files"] if g not in corpus],
                        "wants_tests": parse_query(query.text).wants_tests,
                        "ranks": {n: record_ranks(query.gold, r) for n, r in outputs.items()},
                    })
                if on_step is not None:
                    timing.total_s = time.perf_counter() - began
                    on_step(records, timing)
            if log_features is not None:
                log_features.close()
        finally:
            conn.close()
    timing.total_s = time.perf_counter() - began
    return records, timing


# --- the report ---------------------------------------------------------------------------
def latency_summary(runner: Runner) -> dict[str, dict[str, float | None]]:
    return {name: {"p50": median(v), "p95": percentile(v, 95),
                   "mean": statistics.fmean(v) if v else None, "n": len(v)}
            for name, v in runner.latency.items()}


def symbol_table(records: list[dict[str, Any]], rankers: list[str]) -> str | None:
    rows = []
    for name in rankers:
        mod = summarize(records, name, "modules", (5, 10))
        fun = summarize(records, name, "functions", (5, 10))
        if mod is None and fun is None:
            continue
        cells = [name]
        for s in (mod, fun):
            cells += [str(s["n"]) if s else "–", *(fmt(s[f"acc@{k}"]) if s else "–"
                                                  for k in (5, 10))]
        rows.append(cells)
    if not rows:
        return None
    return table(["ranker", "modules n", "module Acc@5", "module Acc@10", "functions n",
                  "function Acc@5", "function Acc@10"], rows)


def report(title: str, records: list[dict[str, Any]], runner: Runner,
           timing: dict[str, RepoTiming], notes: list[str], by_repo: bool = False,
           by_language: bool = False) -> str:
    """The markdown report; ``by_repo`` adds a files table per repository, ``by_language``
    hit@k per language."""
    names = [r.name for r in runner.rankers if r.name not in runner.skipped]
    timing_rows = {k: {"commits": t.commits, "files": t.files,
                       "first_index_s": t.first_index_s, "incremental_s": t.incremental_s,
                       "incremental_parsed": t.incremental_parsed} for k, t in timing.items()}
    parts = [f"# {title}", "", *notes, "",
             "## Files (Acc@k: every gold file in the top k; MRR: first gold file)", "",
             file_table(records, names, runner.latency), ""]
    if by_language:
        parts += ["## hit@5 per language (at least one gold file in the top 5)", "",
                  compact_language_table(records, names), "",
                  "## hit@1/5/10 and MRR per language", "", language_table(records, names),
                  ""]
    if by_repo:
        for repo in timing:
            mine = [r for r in records if r["repo"] == repo]
            parts += [f"### {repo}", "", file_table(mine, names, {}), ""]
    symbols = symbol_table(records, names)
    if symbols:
        parts += ["## Modules and functions (search hits rolled up by first appearance)", "",
                  symbols, ""]
    parts += ["## Single-file vs multi-file instances", "", split_table(records, names), "",
              "## Per repository (files Acc@5) and indexing time", "",
              repo_table(records, names, timing_rows), ""]
    missing = [r for r in records if r["missing_gold"]]
    wants = sum(1 for r in records if r["wants_tests"])
    parts += ["## Notes", "",
              f"- {len(missing)} of {len(records)} queries have a gold file that is not in the "
              "indexed checkout (added by the change, or filtered); they count as misses.",
              f"- {wants} of {len(records)} queries read as asking for tests to codenav "
              "(`wants_tests`: the text has test/tests/pytest/mock/...), so find_files keeps "
              "test files and the test-path prior is off for them.",
              "- total wall time per repository: " + ", ".join(
                  f"{k} {t.total_s:.0f}s" for k, t in timing.items()),
              "- BM25 corpus upkeep (read + tokenize changed files, both analyzers): " +
              ", ".join(f"{k} {t.bm25_sync_s:.0f}s" for k, t in timing.items())]
    if any(t.embedded for t in timing.values()):
        parts.append("- chunks embedded (semantic modes): " + ", ".join(
            f"{k} {t.embedded} in {t.embed_s:.0f}s" for k, t in timing.items()))
    for name, why in runner.skipped.items():
        parts.append(f"- skipped ranker `{name}`: {why}")
    return "\n".join(parts) + "\n"


def results_json(meta: dict[str, Any], records: list[dict[str, Any]], runner: Runner,
                 timing: dict[str, RepoTiming]) -> dict[str, Any]:
    names = [r.name for r in runner.rankers if r.name not in runner.skipped]
    summary: dict[str, Any] = {}
    for name in names:
        summary[name] = {level: summarize(records, name, level) for level in LEVELS}
        single = [r for r in records if len(r["gold"]["files"]) == 1]
        multi = [r for r in records if len(r["gold"]["files"]) > 1]
        summary[name]["files_single"] = summarize(single, name)
        summary[name]["files_multi"] = summarize(multi, name)
    return {"meta": {**meta, "skipped_rankers": runner.skipped},
            "summary": summary, "latency_ms": latency_summary(runner),
            "timing": {k: vars(t) for k, t in timing.items()}, "instances": records}


def code_version() -> dict[str, Any]:
    """Which codenav produced the numbers: commit, dirty paths, chunker version."""
    here = Path(__file__).resolve().parents[1]
    try:
        head = git(here, "rev-parse", "--short", "HEAD").strip()
        dirty = [line[3:] for line in git(here, "status", "--porcelain").splitlines()
                 if line[3:].startswith("services/")]
    except RuntimeError:
        head, dirty = "unknown", []
    return {"codenav_commit": head, "codenav_dirty": dirty, "chunker_version": CHUNKER_VERSION}
