"""Train find_files' ranker and score it leave-one-repository-out (LORO).

Reads the features every evaluation run logs per query (``bench/out/features/``: the
candidate pool find_files scored, each candidate's features) and the runs' results
(``eval_history.json``, ``eval_swebench.json``: gold files and every other ranker's ranks).
For each repository of the suite, a LightGBM LambdaRank model is trained on the *other*
repositories only and ranks that repository's queries exactly as find_files would (same
candidates, same ordering rule, ``codenav.search.find.order``); those are the scores reported as
``find_files LORO``. Nothing about a repository is used to choose the model it is scored
with. ``--write-model`` then trains on every repository and writes the shipped model
(``services/core/codenav/search/models/find_files_<family>.txt``).

    .venv/bin/python bench/train_ranker.py                      # LORO report
    .venv/bin/python bench/train_ranker.py --write-model        # and ship the model
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

import eval_history
import evalkit
from codenav.search import features, find, fusion, learned, trees, weights
from codenav.search.features import FEATURES, Candidate
from codenav.search.query import parse_query

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
MODELS = ROOT / "services" / "core" / "codenav" / "search" / "models"

PARAMS: dict[str, Any] = {
    "objective": "lambdarank", "metric": "ndcg", "ndcg_eval_at": [1, 5, 10],
    "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 40,
    "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
    "lambdarank_truncation_level": 20, "verbose": -1, "num_threads": 2, "seed": 7,
}
_GOLD: dict[tuple[str, str], set[str]] = {}
"""Gold files of every query loaded (training may use queries outside the scored set)."""
ROUNDS = 200
"""Fixed before any LORO score was looked at; changed only by comparing LORO scores."""
BAGGED: dict[str, tuple[int, ...]] = {"hybrid": (7, 11, 23, 31, 47)}
"""Families whose model is the mean of LightGBM models trained with these seeds, shipped as
one model (``codenav.search.trees.averaged``). ``PARAMS`` sample rows and features, so one
model's quality is partly its seed's: on the hybrid pools of 38 repositories, LORO, five
seeds gave suite hit@5 78.9-80.2 and SWE-bench Acc@5 78.4-80.3 (bench/README.md, "One
hybrid model from five seeds"). The mean of five scores about what the seeds do on average
(more on the suite's hit@5 and SWE-bench's MRR), without a seed's luck either way, for five
times the trees (about 2.4 ms more a query). The lexical model stays one: it scores
find_files' lexical queries, whose latency target is closer."""


def load_rows(directory: Path, family: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Feature rows of ``family`` by (repo, query id)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(directory.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if row["family"] == family:
                    rows[(row["repo"], row["id"])] = row
    return rows


def load_records(paths: list[Path], extra: list[Path] | None = None,
                 ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every query of the given result files; a query in several files keeps the first
    file's ranks and gains the rankers only a later one has. ``extra`` files (a hybrid run
    beside the main ones) only add rankers to queries the main files have."""
    records: dict[tuple[str, str], dict[str, Any]] = {}
    metas = {}
    main = len(paths)
    for n, path in enumerate([*paths, *(extra or [])]):
        if not path.exists():
            continue
        body = json.loads(path.read_text(encoding="utf-8"))
        kind = "swebench" if "data" in body["meta"] else "history"
        for r in body["instances"]:
            r["suite"] = kind
            r["language"] = "python" if kind == "swebench" else eval_history.language_of(r)
            key = (r["repo"], r["id"])
            if key in records:
                for name, ranks in r["ranks"].items():
                    records[key]["ranks"].setdefault(name, ranks)
            elif n < main:
                records[key] = r
        metas.setdefault(kind, body["meta"])
    return list(records.values()), metas


def attach_queries(rows: dict[tuple[str, str], dict[str, Any]],
                   records: list[dict[str, Any]]) -> None:
    """Gives each history row the roles its query asks for as find_files asks them now,
    once (a log from before the build features lacks ``build``)."""
    for r in records:
        row = rows.get((r["repo"], r["id"]))
        if row is not None and "subject" in r:
            text = eval_history.PR_SUFFIX.sub("", r["subject"])
            row["asked"] = sorted(find.asked_roles(parse_query(text), text))


def add_baseline(records: list[dict[str, Any]], path: Path, rankers: list[str]) -> int:
    """Ranks from an earlier run (the code before this ranker) under ``<name> (before)``,
    for the queries both runs have; gold files the current run does not count are left
    out, so both are scored on the same gold. Returns how many queries matched."""
    body = json.loads(path.read_text(encoding="utf-8"))
    old = {(r["repo"], r["id"]): r for r in body["instances"]}
    matched = 0
    for r in records:
        before = old.get((r["repo"], r["id"]))
        if before is None:
            continue
        keep = [i for i, g in enumerate(before["gold"]["files"]) if g in r["gold"]["files"]]
        if not keep:
            continue
        matched += 1
        for name in rankers:
            ranks = before["ranks"].get(name)
            if ranks is None or ranks.get("files") is None:
                continue
            r["ranks"][f"{name} (before)"] = {"files": [ranks["files"][i] for i in keep],
                                             "top": ranks.get("top", [])}
    return matched


def matrix(row: dict[str, Any]) -> np.ndarray:
    """The row's features in ``FEATURES`` order (a log from an older feature set maps by
    name; a missing feature is 0)."""
    names = row["features"]
    index = [names.index(f) if f in names else -1 for f in FEATURES]
    x = np.array(row["x"], dtype=np.float64).reshape(len(row["x"]), len(names))
    out = np.zeros((x.shape[0], len(FEATURES)))
    for j, i in enumerate(index):
        if i >= 0:
            out[:, j] = x[:, i]
    # logs from before other_role knew the asked roles: recompute it as find_files does
    asked = set(row["asked"])
    build = [features.build_features(p, asked) for p in row["paths"]]
    out[:, FEATURES.index("build_file")] = [b[0] for b in build]
    out[:, FEATURES.index("build_asked")] = [b[1] for b in build]
    out[:, FEATURES.index("other_role")] = [features.other_role(role, asked)
                                            for role in row["roles"]]
    for name in WITHOUT:
        out[:, FEATURES.index(name)] = 0.0
    return out


WITHOUT: set[str] = set()
"""Features read as 0 in training and scoring (``--without``: an ablation)."""
HISTORY = ("churn", "churn_rel", "recent")
"""The features of a repository's recent git history (``codenav.index.history``): read as
0 unless ``--history``, since the lexical model also ranks repositories without it."""


TRAIN_DEPTH = 60
"""Training keeps, per query, the gold files and the best others by the fallback weights:
the ranker is judged on its top 10, and the long tail of a pool only slows training."""


def dataset(keys: list[tuple[str, str]], rows: dict[tuple[str, str], dict[str, Any]],
            gold: dict[tuple[str, str], set[str]]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    xs, ys, groups = [], [], []
    KEPT.clear()
    for key in keys:
        row = rows[key]
        labels = np.array([1.0 if p in gold[key] else 0.0 for p in row["paths"]])
        if not labels.any() or len(labels) < 2:
            continue  # nothing to learn from a query whose gold is not in the pool
        x = matrix(row)
        if len(labels) > TRAIN_DEPTH:
            pre = np.array(learned.fallback([list(v) for v in x]))
            keep = np.argsort(-pre, kind="stable")[:TRAIN_DEPTH]
            keep = np.union1d(keep, np.flatnonzero(labels))
            x, labels = x[keep], labels[keep]
        xs.append(x)
        ys.append(labels)
        groups.append(len(labels))
        KEPT.append(key)
    if not xs:
        return np.zeros((0, len(FEATURES))), np.zeros(0), []
    return np.vstack(xs), np.concatenate(ys), groups


KEPT: list[tuple[str, str]] = []
"""The queries the last ``dataset`` call kept, in order (their repository weighs them)."""


def train(x: np.ndarray, y: np.ndarray, groups: list[int], rounds: int = ROUNDS,
          params: dict[str, Any] | None = None) -> Any:
    import lightgbm

    data = lightgbm.Dataset(x, y, group=groups, feature_name=list(FEATURES),
                            free_raw_data=False)
    return lightgbm.train({**PARAMS, **(params or {})}, data, num_boost_round=rounds)


def train_text(x: np.ndarray, y: np.ndarray, groups: list[int], rounds: int = ROUNDS,
               params: dict[str, Any] | None = None, seeds: tuple[int, ...] = ()) -> str:
    """The text of the model ``train`` makes, or with ``seeds`` of the mean of one model
    per seed (``BAGGED``)."""
    if not seeds:
        return str(train(x, y, groups, rounds, params).model_to_string())
    return trees.averaged([train(x, y, groups, rounds, {**(params or {}), "seed": seed})
                           .model_to_string() for seed in seeds])


class PairwiseLinear:
    """A linear ranker (one weight vector for short queries, one for long ones) fitted by
    pairwise logistic loss on gold-vs-other pairs: the "tuned fusion" alternative to the
    trees, compared with them by LORO."""

    LONG = float(np.log1p(7))

    def __init__(self, x: np.ndarray, y: np.ndarray, groups: list[int], l2: float = 1e-3,
                 steps: int = 150, lr: float = 0.5) -> None:
        self.name = "pairwise-linear"
        self.w = {False: np.zeros(x.shape[1]), True: np.zeros(x.shape[1])}
        qcol = FEATURES.index("q_groups")
        pairs: dict[bool, list[np.ndarray]] = {False: [], True: []}
        start = 0
        for size in groups:
            xs, ys = x[start:start + size], y[start:start + size]
            start += size
            pos, neg = xs[ys > 0], xs[ys == 0]
            if not len(pos) or not len(neg):
                continue
            diff = (pos[:, None, :] - neg[None, :, :]).reshape(-1, x.shape[1])
            pairs[bool(xs[0, qcol] >= self.LONG)].append(diff)
        for regime, chunks in pairs.items():
            if not chunks:
                continue
            d = np.vstack(chunks)
            w = np.zeros(x.shape[1])
            for _ in range(steps):
                margin = d @ w
                grad = -(d * (1.0 / (1.0 + np.exp(margin)))[:, None]).mean(axis=0) + l2 * w
                w -= lr * grad
            self.w[regime] = w

    def predict(self, rows: Any) -> list[float]:
        x = np.asarray(rows, dtype=np.float64)
        qcol = FEATURES.index("q_groups")
        return [float(r @ self.w[bool(r[qcol] >= self.LONG)]) for r in x]


TUNED = ("bm25", "bm25_rank", "cov_idf", "cov_frac", "path_idf", "name_idf", "sym_idf",
         "sym_top_idf", "doc_idf", "chunk", "chunk_cov", "idents_declared", "ident_frac",
         "path_mentioned", "prior", "importers", "nbr", "nbr_n", "sem", "sem_rank", "sem_n",
         "lines", "generated", "build_file", "build_asked")
"""The weights tuned fusion may change (the others stay 0)."""
_STEPS = (0.0, 0.5, 0.8, 1.25, 2.0)
_NUDGES = (-0.5, -0.2, 0.2, 0.5)


class TunedLinear:
    """Tuned fusion: the linear weights of ``codenav.search.weights.FALLBACK`` improved by
    coordinate ascent on the training repositories' MRR + hit@5 (find_files' ordering
    rule included: unasked examples/docs/benchmarks last), one weight vector for short
    queries and one for long ones (an issue text; ``codenav.search.learned.LONG_QUERY``), each
    tuned on its own queries. Pure arithmetic at query time."""

    def __init__(self, x: np.ndarray, y: np.ndarray, groups: list[int],
                 passes: int = 2, balance: bool = True) -> None:
        self.name = "tuned-linear"
        repos = [k[0] for k in KEPT] if len(KEPT) == len(groups) else ["?"] * len(groups)
        counts: dict[str, int] = defaultdict(int)
        for repo in repos:
            counts[repo] += 1
        qweight = np.array([1.0 / counts[r] if balance else 1.0 for r in repos])
        qcol = FEATURES.index("q_groups")
        starts = np.concatenate([[0], np.cumsum(groups)[:-1]]).astype(int)
        long_query = x[starts, qcol] >= learned.LONG_QUERY
        self.w = {}
        for regime in (False, True):
            chosen = np.flatnonzero(long_query == regime)
            rows = np.concatenate([np.arange(starts[i], starts[i] + groups[i])
                                   for i in chosen]) if len(chosen) else np.zeros(0, int)
            sizes = [groups[i] for i in chosen]
            self.w[regime] = self._tune(x[rows], y[rows], sizes, passes,
                                        qweight[chosen]) if sizes else \
                np.array([weights.FALLBACK.get(f, 0.0) for f in FEATURES])

    @staticmethod
    def _tune(x: np.ndarray, y: np.ndarray, groups: list[int], passes: int,
              qweight: np.ndarray) -> np.ndarray:
        """Coordinate ascent; every repository weighs the same in the objective."""
        qweight = qweight / qweight.sum()
        starts = np.concatenate([[0], np.cumsum(groups)[:-1]]).astype(int)
        qid = np.repeat(np.arange(len(groups)), groups)
        filler = x[:, FEATURES.index("other_role")] > 0
        gold = y > 0

        def objective(w: np.ndarray) -> float:
            s = x @ w - 1e6 * filler
            gmax = np.maximum.reduceat(np.where(gold, s, -np.inf), starts)
            above = np.add.reduceat((s > gmax[qid]).astype(np.int64), starts)
            rank = 1 + above
            return float(np.sum(qweight * (1.0 / rank + (rank <= 5))))

        w = np.array([weights.FALLBACK.get(f, 0.0) for f in FEATURES])
        unseen = ~np.any(x != 0, axis=0)  # no signal (semantic features in lexical rows)
        w[unseen] = 0.0
        best = objective(w)
        for _ in range(passes):
            for name in TUNED:
                j = FEATURES.index(name)
                if unseen[j]:
                    continue
                for value in [w[j] * m for m in _STEPS] + [w[j] + d for d in _NUDGES]:
                    old = w[j]
                    w[j] = value
                    got = objective(w)
                    if got > best + 1e-9:
                        best = got
                    else:
                        w[j] = old
        return w

    def predict(self, rows: Any) -> list[float]:
        x = np.asarray(rows, dtype=np.float64)
        qcol = FEATURES.index("q_groups")
        return [float(r @ self.w[bool(r[qcol] >= learned.LONG_QUERY)]) for r in x]

    def spec(self) -> dict[str, Any]:
        def named(w: np.ndarray) -> dict[str, float]:
            return {f: round(float(v), 4) for f, v in zip(FEATURES, w, strict=True) if v}

        return {"kind": "linear", "weights": named(self.w[False]),
                "long_weights": named(self.w[True])}


SWEEP: list[tuple[str, dict[str, Any], int]] = [
    ("lambdarank 15 leaves, 200 rounds", {}, 200),
    ("lambdarank 7 leaves, 300 rounds", {"num_leaves": 7}, 300),
    ("lambdarank 31 leaves, 100 rounds", {"num_leaves": 31, "min_data_in_leaf": 80}, 100),
    ("rank_xendcg 15 leaves, 200 rounds", {"objective": "rank_xendcg"}, 200),
    ("pairwise linear", {"linear": True}, 0),
    ("tuned fusion", {"tuned": True}, 0),
]
"""The configurations ``--sweep`` compares (by LORO scores only)."""


def ranking(row: dict[str, Any], scores: list[float]) -> list[str]:
    """What find_files would answer with these scores (its own ordering rule)."""
    cands = [Candidate(p, role) for p, role in zip(row["paths"], row["roles"], strict=True)]
    return [c.path for _s, c in find.order(cands, scores, set(row["asked"]))][:evalkit.DEPTH]


def fuse_semantic(candidates: list[Candidate], scores: list[float],
                  semantic: list[str]) -> list[float]:
    """A lexical model's scores fused with the semantic order by Reciprocal Rank Fusion
    (an alternative for hybrid mode, compared by LORO)."""
    lexical = [c.path for _s, c in sorted(zip(scores, candidates, strict=True),
                                          key=lambda sc: (-sc[0], sc[1].path))]
    fused = fusion.rrf([lexical, semantic], weights=[1.0, fusion.SEMANTIC_WEIGHT])
    return [float(fused.get(c.path, 0.0)) * 100 for c in candidates]


def semantic_order(row: dict[str, Any]) -> list[str]:
    """The row's semantic order, read back from its ``sem_rank`` feature."""
    col = row["features"].index("sem_rank")
    ranked = [(x[col], p) for p, x in zip(row["paths"], row["x"], strict=True) if x[col] > 0]
    return [p for _r, p in sorted(ranked, key=lambda rp: -rp[0])]


def score_loro(records: list[dict[str, Any]], rows: dict[tuple[str, str], dict[str, Any]],
               name: str, rounds: int,
               train_rows: dict[tuple[str, str], dict[str, Any]] | None = None,
               fuse: bool = False, params: dict[str, Any] | None = None,
               seeds: tuple[int, ...] = ()) -> dict[str, float]:
    """Adds ranks under ``name`` to every record: each repository ranked by a model
    trained without it (on ``train_rows``, default ``rows``); ``fuse``: the model's order
    fused with the semantic order (find_files' hybrid mode without a hybrid model);
    ``seeds``: the mean of one model per seed (``BAGGED``). Returns seconds spent per
    repository."""
    gold = {(r["repo"], r["id"]): set(r["gold"]["files"]) for r in records}
    source = train_rows if train_rows is not None else rows
    gold_all = {**gold, **{k: v for k, v in _GOLD.items() if k not in gold}}
    repos = sorted({r["repo"] for r in records})
    seconds = {}
    for held in repos:
        started = time.perf_counter()
        train_keys = [k for k in source if k[0] != held and k in gold_all]
        x, y, groups = dataset(train_keys, source, gold_all)
        model: Any
        if not groups:  # nothing to train on (a suite of one repository)
            model = None
        elif params and params.get("linear"):
            model = PairwiseLinear(x, y, groups)
        elif params and params.get("tuned"):
            model = TunedLinear(x, y, groups)
        elif seeds:
            model = learned.load_text(train_text(x, y, groups, rounds, params, seeds),
                                      f"loro-{held}")
        else:
            model = learned.Model(train(x, y, groups, rounds, params), f"loro-{held}")
        for r in records:
            if r["repo"] != held:
                continue
            row = rows.get((r["repo"], r["id"]))
            files: list[str] = []
            if row is not None and row["paths"]:
                vectors = [list(v) for v in matrix(row)]
                scores = model.predict(vectors) if model is not None else \
                    learned.fallback(vectors)
                if fuse:
                    cands = [Candidate(p, role) for p, role in zip(row["paths"], row["roles"],
                                                                   strict=True)]
                    scores = fuse_semantic(cands, scores, semantic_order(row))
                files = ranking(row, scores)
            r["ranks"][name] = evalkit.record_ranks(r["gold"], evalkit.Ranking(files))
        seconds[held] = time.perf_counter() - started
        print(f"  {name}: {held} scored ({seconds[held]:.0f}s)", file=sys.stderr)
    return seconds


def score_fixed(records: list[dict[str, Any]], rows: dict[tuple[str, str], dict[str, Any]],
                name: str, family: str = "lexical") -> None:
    """Ranks under ``name`` from the hand-set weights of ``family`` (no training at all)."""
    for r in records:
        row = rows.get((r["repo"], r["id"]))
        files: list[str] = []
        if row is not None and row["paths"]:
            files = ranking(row, learned.fallback([list(v) for v in matrix(row)], family))
        r["ranks"][name] = evalkit.record_ranks(r["gold"], evalkit.Ranking(files))


def report(records: list[dict[str, Any]], rankers: list[str], notes: list[str]) -> str:
    history = [r for r in records if r["suite"] == "history"]
    swe = [r for r in records if r["suite"] == "swebench"]
    present = [n for n in rankers if any(n in r["ranks"] for r in records)]
    parts = ["# find_files ranker: leave-one-repository-out", "", *notes, ""]
    if history:
        parts += ["## Commit history: hit@5 per language (at least one gold file in the top 5)",
                  "", evalkit.compact_language_table(history, present), "",
                  "## Commit history: hit@1/5/10 and MRR per language", "",
                  evalkit.language_table(history, present), ""]
    hybrid = [r for r in history if "find_files hybrid LORO" in r["ranks"] or
              "find_files hybrid" in r["ranks"]]
    if hybrid:
        parts += ["## Commit history, the repositories with embeddings: hit@5 per language",
                  "", evalkit.compact_language_table(hybrid, present), "",
                  "## The same: hit@1/5/10 and MRR", "", evalkit.language_table(hybrid, present),
                  ""]
    if swe:
        parts += ["## SWE-bench Verified: files (Acc@k: every gold file in the top k)", "",
                  evalkit.file_table(swe, present, {}), ""]
        symbols = evalkit.symbol_table(swe, present)
        if symbols:
            parts += ["## SWE-bench Verified: modules and functions (search)", "", symbols, ""]
    return "\n".join(parts) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=Path, default=OUT / "features")
    parser.add_argument("--hybrid-features", type=Path,
                        help="where the hybrid rows are, when a hybrid run logged them "
                        "elsewhere (default: --features)")
    parser.add_argument("--results", type=Path, nargs="*",
                        default=[OUT / "eval_history.json", OUT / "eval_swebench.json"])
    parser.add_argument("--hybrid-results", type=Path, nargs="*", default=[],
                        help="results of a hybrid run: they add its rankers (find_files "
                        "hybrid, search hybrid) to the queries of --results")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--baseline", type=Path, nargs="*", default=[],
                        help="results of a run before this ranker: its find_files, search "
                        "and bm25 appear as '<name> (before)' on the same queries")
    parser.add_argument("--kind", choices=["tuned", "lambdarank"], default="lambdarank",
                        help="the ranker trained, scored and shipped: LightGBM LambdaRank "
                        "(chosen on 2026-12-06: best leave-one-repository-out on both the "
                        "commit-history suite and SWE-bench Verified, see SWEEP) or tuned "
                        "linear fusion")
    parser.add_argument("--families", nargs="*", default=["lexical", "hybrid"],
                        choices=["lexical", "hybrid"], help="which model families to score")
    parser.add_argument("--sweep", action="store_true",
                        help="compare the SWEEP configurations by their LORO scores")
    parser.add_argument("--write-model", action="store_true",
                        help="train on every repository and write the shipped lexical model")
    parser.add_argument("--write-hybrid", action="store_true",
                        help="with --write-model, also ship a hybrid model (with "
                        "--history: find_files_hybrid_history.txt, for repositories with "
                        "history; else hybrid mode scores with the fallback weights)")
    parser.add_argument("--without", nargs="*", default=[], choices=FEATURES,
                        help="features read as 0 in training and scoring (an ablation: "
                        "what the model gains from them, leave-one-repository-out)")
    parser.add_argument("--history", action="store_true",
                        help="train and score with the recent-history features (churn, "
                        "churn_rel, recent): the models find_files uses where a "
                        "repository's git history was read (--write-model writes "
                        "find_files_lexical_history.txt); without it they are read as 0, "
                        "as for the lexical model")
    parser.add_argument("--out", type=Path, default=OUT / "ranker_loro")
    args = parser.parse_args()
    WITHOUT.update(args.without)
    if not args.history:
        WITHOUT.update(HISTORY)
    records, metas = load_records(args.results, args.hybrid_results)
    if not records:
        raise SystemExit("no evaluation results: run eval_history.py / eval_swebench.py first")
    if args.write_model and args.kind == "lambdarank" and "swebench" not in metas:
        # one set of trees scores short and long queries: without issue texts it would
        # learn the long ones from a few long commit subjects
        raise SystemExit("--write-model --kind lambdarank needs issue-text results too "
                         "(eval_swebench.py's .json in --results)")
    for path in args.baseline:
        add_baseline(records, path, ["find_files", "find_files hybrid", "search", "bm25"])
    rankers = ["find_files (before)", "find_files hybrid (before)", "search (before)",
               "bm25 (before)", "find_files", "find_files LORO", "find_files hybrid",
               "find_files hybrid LORO", "find_files hybrid LORO fusion",
               "find_files hybrid fallback",
               "find_files fallback", "search", "search hybrid", "bm25", "bm25 -tests",
               "bm25 source"]
    lexical_rows = load_rows(args.features, "lexical")
    attach_queries(lexical_rows, records)
    logged = {repo for repo, _id in lexical_rows}
    partial = sorted({r["repo"] for r in records} - logged)
    records = [r for r in records if r["repo"] in logged]
    runs = ", ".join(f"{k}: codenav {m.get('codenav_commit')}" for k, m in metas.items())
    notes = [f"{len(records)} queries from {len({r['repo'] for r in records})} repositories "
             f"({runs}).",
             ("tuned linear fusion (coordinate ascent from the fallback weights on MRR + "
              "hit@5)" if args.kind == "tuned" else
              f"LightGBM LambdaRank, {args.rounds} rounds, {PARAMS['num_leaves']} leaves") +
             "; `find_files LORO`: each repository ranked by a model trained without it; "
             "`find_files`: the model shipped when the run was made (trained on every "
             "repository, so in-sample); `find_files fallback`: the hand-set weights."]
    if WITHOUT:
        notes.append("Read as 0 in training and scoring (`--without`, and the history "
                     "features unless `--history`): " + ", ".join(sorted(WITHOUT)) + ".")
    if partial:  # a run stopped inside these: no complete feature log to score
        notes.append("Left out (their run was stopped before their features were complete): "
                     + ", ".join(partial) + ".")
    _GOLD.update({(r["repo"], r["id"]): set(r["gold"]["files"]) for r in records})
    if args.sweep:
        names = []
        for label, params, rounds in SWEEP:
            score_loro(records, lexical_rows, label, rounds, params=params)
            names.append(label)
        text = report(records, ["bm25 source", *names], notes)
        print(text)
        return 0
    for family in args.families:
        rows = lexical_rows if family == "lexical" else load_rows(
            args.hybrid_features or args.features, family)
        attach_queries(rows, records)
        if not rows:
            continue
        label = "find_files LORO" if family == "lexical" else "find_files hybrid LORO"
        mine = [r for r in records if (r["repo"], r["id"]) in rows or
                (family == "lexical")]
        params = {"tuned": True} if args.kind == "tuned" else None
        if family == "lexical":
            score_fixed(mine, rows, "find_files fallback")
        else:  # the hand-set weights (what hybrid mode ships: FALLBACK, and HYBRID_SHORT
            # for short queries), and the lexical model (trained on every other repository)
            # fused with k-NN
            score_fixed(mine, rows, "find_files hybrid fallback", "hybrid")
            score_loro(mine, rows, "find_files hybrid LORO fusion", args.rounds,
                       train_rows=lexical_rows, fuse=True, params=params)
        seeds = BAGGED.get(family, ()) if args.kind == "lambdarank" else ()
        if seeds:
            notes.append(f"`{label}`: the mean of {len(seeds)} LightGBM models, seeds "
                         f"{', '.join(map(str, seeds))} (`BAGGED`), as shipped.")
        score_loro(mine, rows, label, args.rounds, params=params, seeds=seeds)
        if args.write_model and (family == "lexical" or args.write_hybrid):
            gold = {(r["repo"], r["id"]): set(r["gold"]["files"]) for r in records}
            keys = [k for k in rows if k in gold]
            x, y, groups = dataset(keys, rows, gold)
            # with --history: the models of pools with history
            stem = MODELS / learned.MODEL_FILES[f"{family}_history" if args.history
                                                else family]
            shipped = stem.with_suffix(".json")
            previous = json.loads(shipped.read_text(encoding="utf-8")) \
                if shipped.exists() else {}
            for old in (stem.with_suffix(".json"), stem.with_suffix(".txt")):
                old.unlink(missing_ok=True)
            if args.kind == "tuned":
                tuned = TunedLinear(x, y, groups)
                spec = {**tuned.spec(), "family": family,
                        "trained_on": sorted({k[0] for k in keys}), "queries": len(groups),
                        "objective": "MRR + hit@5 on the training queries",
                        "trained": time.strftime("%Y-%m-%d")}
                issue_texts = any(r["suite"] == "swebench" for r in records)
                if not issue_texts and previous.get("long_weights"):
                    # no issue-text suite in this run (a commit subject is rarely long):
                    # the long-query weights of the shipped model stay, with where they
                    # were trained
                    spec["long_weights"] = previous["long_weights"]
                    spec["long_weights_from"] = previous.get("long_weights_from") or {
                        "trained": previous.get("trained"),
                        "trained_on": previous.get("trained_on", []),
                        "queries": previous.get("queries")}
                    notes.append("No issue-text suite (SWE-bench) in this run: the long-query "
                                 "weights of the shipped model were kept "
                                 "(`long_weights_from`).")
                target = stem.with_suffix(".json")
                target.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
            else:
                target = stem.with_suffix(".txt")
                target.write_text(train_text(x, y, groups, args.rounds, seeds=seeds),
                                  encoding="utf-8")
            notes.append(f"Wrote {target.relative_to(ROOT)} ({target.stat().st_size} bytes) "
                         f"from {len(groups)} queries of {len({k[0] for k in keys})} "
                         "repositories.")
    text = report(records, rankers, notes)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
