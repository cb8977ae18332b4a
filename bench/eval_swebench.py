"""File and function retrieval on SWE-bench Verified issues (``make eval``).

The protocol of /work/shared/eval/README.md: each of the 407 instances is answered from an
index of its repository at ``base_commit``, the query is the raw problem statement, and an
instance counts at k only if all its gold items are in the top k. Per repository: one
working copy, commits in date order, ``git checkout --force`` + ``git clean -fdx``, then an
incremental ``reconcile`` and every ranker of ``evalkit.RANKERS`` (codenav's find_files and
search, and a whole-file BM25 baseline computed here over the same files). Only ``.py`` files
are indexed. Writes bench/out/eval_swebench.md and .json (per-instance ranks).

    make eval EVAL_ARGS="--repos psf/requests --limit 5"     a quick run
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import evalkit
from evalkit import Checkout, Query, RepoTiming, Runner

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "eval" / "swebench-verified-dev.jsonl"
OUT = ROOT / "bench" / "out"


def mirror_for(mirrors: Path, repo: str) -> Path:
    """The SWE-bench mirror (``swe-bench+owner__name``) if there is one, else ``owner+name``."""
    owner, name = repo.split("/")
    for candidate in (f"swe-bench+{owner}__{name}", f"{owner}+{name}"):
        path = mirrors / candidate / "repo"
        if path.is_dir():
            return path
    raise SystemExit(f"no mirror of {repo} under {mirrors} (looked for swe-bench+{owner}__"
                     f"{name}/repo and {owner}+{name}/repo)")


def load(path: Path, only: list[str], limit: int | None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if only:
        wanted = set(only)
        rows = [r for r in rows if r["repo"] in wanted or r["repo"].split("/")[1] in wanted]
        if not rows:
            raise SystemExit(f"no instances for {', '.join(only)}")
    return rows[:limit] if limit else rows


def steps_for(mirror: Path, instances: list[dict[str, Any]]) -> list[tuple[str, list[Query]]]:
    """Base commits in commit-date order, each with the instances it answers."""
    by_commit: dict[str, list[Query]] = defaultdict(list)
    for inst in instances:
        gold = {level: inst[f"gold_{level}"] for level in evalkit.LEVELS}
        by_commit[inst["base_commit"]].append(Query(inst["instance_id"],
                                                    inst["problem_statement"], gold))
    dates = {sha: evalkit.commit_time(mirror, sha) for sha in by_commit}
    return [(sha, by_commit[sha]) for sha in sorted(by_commit, key=lambda s: (dates[s], s))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                        help="directory of git mirrors, <owner>+<name>/repo")
    parser.add_argument("--workdir", type=Path, default=Path("/work/eval-work"),
                        help="working copies and stores (never inside this repository)")
    parser.add_argument("--repos", nargs="*", default=[], help="owner/name or name")
    parser.add_argument("--limit", type=int, help="only the first N instances of the file")
    parser.add_argument("--rankers", nargs="*", help="subset of: " +
                        ", ".join(r.name for r in evalkit.RANKERS))
    parser.add_argument("--processes", type=int, default=0, help="parser processes")
    parser.add_argument("--exclude-tests", action="store_true",
                        help="leave test files out of the index (gold never contains them); "
                        "halves the embedding work of the semantic modes")
    parser.add_argument("--reuse-index", action="store_true",
                        help="keep each repository's store from a previous run")
    parser.add_argument("--merge", type=Path,
                        help="a previous run's .json: its repositories' results are kept "
                        "and those repositories are not run again (a run in parts)")
    parser.add_argument("--out", type=Path, default=OUT / "eval_swebench")
    parser.add_argument("--features", type=Path, default=OUT / "features",
                        help="directory for the ranker's features per repository "
                        "(bench/train_ranker.py reads them)")
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    if workdir == ROOT or ROOT in workdir.parents:
        raise SystemExit(f"--workdir must be outside {ROOT}: the repositories' code stays "
                         "out of this checkout")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s",
                        datefmt="%H:%M:%S")
    evalkit.log.setLevel(logging.INFO)

    instances = load(args.data, args.repos, args.limit)
    rankers, skipped = evalkit.select_rankers(args.rankers)
    runner = Runner(rankers, skipped)
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for inst in instances:
        by_repo[inst["repo"]].append(inst)
    records: list[dict[str, Any]] = []
    timing: dict[str, RepoTiming] = {}
    started = time.perf_counter()
    meta = {"data": str(args.data), "instances": len(instances), "repos": sorted(by_repo),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), **evalkit.code_version()}
    if args.merge:
        previous = json.loads(args.merge.read_text(encoding="utf-8"))
        done = set(previous["timing"])
        records += [r for r in previous["instances"] if r["repo"] in done]
        timing.update({repo: RepoTiming(**t) for repo, t in previous["timing"].items()})
        meta["merged"] = {"from": str(args.merge), "codenav_commit":
                          previous["meta"]["codenav_commit"], "repos": sorted(done)}
        for repo in done:
            by_repo.pop(repo, None)
        meta["instances"] = len(records) + sum(len(g) for g in by_repo.values())
        meta["repos"] = sorted(done | set(by_repo))
    meta["planned"] = {repo: len(group) for repo, group in by_repo.items()}
    # Smallest first, or in the order --repos names them.
    order = {name: i for i, name in enumerate(args.repos)}
    for repo, group in sorted(by_repo.items(), key=lambda kv: (
            order.get(kv[0], order.get(kv[0].split("/")[-1], len(order))), len(kv[1]))):
        mirror = mirror_for(args.mirrors, repo)
        slug = repo.replace("/", "+")
        checkout = Checkout.prepare(mirror, workdir / "repos" / slug, [".py"],
                                    exclude_tests=args.exclude_tests)
        steps = steps_for(mirror, group)
        evalkit.log.info("%s: %d instances at %d commits", repo, len(group), len(steps))

        def progress(partial: list[dict[str, Any]], t: RepoTiming, repo: str = repo,
                     done: list[dict[str, Any]] = records) -> None:
            write(args.out, meta, done + partial, runner, {**timing, repo: t},
                  time.perf_counter() - started)

        got, timing[repo] = evalkit.evaluate_repository(
            repo, checkout, steps, workdir / "stores" / slug, runner,
            fresh=not args.reuse_index, processes=args.processes, on_step=progress,
            features_path=args.features / f"swebench-{slug}.jsonl.gz" if args.features
            else None, info={"language": "python"})
        records += got
        write(args.out, meta, records, runner, timing, time.perf_counter() - started)
    print(write(args.out, meta, records, runner, timing, time.perf_counter() - started))
    return 0


def write(out: Path, meta: dict[str, Any], records: list[dict[str, Any]], runner: Runner,
          timing: dict[str, RepoTiming], seconds: float) -> str:
    merged = meta.get("merged")
    notes = [f"{len(records)} instances, {len(timing)} repositories; codenav "
             f"{meta['codenav_commit']}" + (" (uncommitted changes in "
                                            f"{', '.join(meta['codenav_dirty'])})"
                                            if meta["codenav_dirty"] else "") +
             f", chunker v{meta['chunker_version']}; run took {seconds / 60:.1f} min."]
    counts: dict[str, int] = defaultdict(int)
    for record in records:
        counts[record["repo"]] += 1
    for repo, planned in sorted(meta.get("planned", {}).items()):
        if repo in timing and counts[repo] < planned:
            notes.append(f"{repo}: {counts[repo]} of its {planned} instances so far (the run "
                         "was stopped or is still going; its rows cover these only).")
    if merged:
        notes.append(f"Run in parts: {', '.join(merged['repos'])} come from "
                     f"{merged['from']} (codenav {merged['codenav_commit']}); their p50 ms "
                     "are not in the latency column.")
    text = evalkit.report("SWE-bench Verified retrieval (407-instance dev split)", records,
                          runner, timing, notes)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text, encoding="utf-8")
    body = evalkit.results_json({**meta, "seconds": round(seconds, 1)}, records, runner, timing)
    out.with_suffix(".json").write_text(json.dumps(body, indent=1), encoding="utf-8")
    return text


if __name__ == "__main__":
    sys.exit(main())
