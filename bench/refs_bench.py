"""Refs benchmark: a branch's consecutive commits indexed from git as one followed ref.

    python bench/refs_bench.py [--corpus GIT_REPO] [--commits 20] [--json out.json]

Indexes the last ``--commits`` commits of the corpus's default branch (first parent, oldest
first) into one ref that keeps every earlier commit (``keep = commits - 1``), straight from
git (no checkout; a bare mirror works). Reports, all measured in this run:

- the time of each commit after the first (index from git, files, graph, ref move), median
  and max, with the files each one parsed; target: 2 s per commit of typical size;
- what the extra trees add to the store: the size of every table after the first commit
  and after the last (target: +10 % for 19 extra refs);
- the graph tools on the newest commit (a tree layered on the ones before it) beside the
  first (a tree holding all its rows): ``references`` and ``impact`` of the declarations
  referenced most in the newest tree and of an evenly spaced sample of its declarations
  (alphabetical order), p50 and max per tree, answers
  compared (they may differ only where the commits changed the code);
- ``codenav publish`` against a second store served by a real API and index worker: a
  first publish of the last commit, the same again, and a commit changing 10 files on top
  of it (made in a temporary clone); what each sent (target: 1 MB for 10 files, without
  embeddings).

Without ``--corpus`` the history is synthetic: a slice of the Python standard library
committed into a temporary repository, then ``--commits - 1`` commits each editing three
files. Its figures say so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

import benchkit
from codenav import refs, repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.db import queries as q
from codenav.index import commits, gitread
from codenav_cli.stores import free_port

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@codenav",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@codenav",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
TABLES = ("contents", "chunks", "symbols", "refs", "file_terms", "files", "skipped", "trees",
          "repo_refs", "ref_history", "graph_imports", "graph_edges", "graph_links",
          "graph_layer", "graph_files", "graph_state", "chunk_texts", "embeddings")
SENT = re.compile(r"^(\d+) blobs sent, (\d+) bytes$", re.M)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(root), *args],
                          check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    return done.stdout.decode().strip()


def synthetic_history(work: Path, n: int) -> Path:
    """A slice of the standard library committed, then n - 1 commits editing 3 files."""
    root = work / "stdlib-history"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("json", "email", "http", "asyncio", "logging", "unittest", "importlib",
                 "xml", "urllib", "concurrent"):
        shutil.copytree(stdlib / name, root / name,
                        ignore=shutil.ignore_patterns("__pycache__", "test*"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "stdlib slice")
    files = sorted(p for p in root.rglob("*.py") if ".git" not in p.parts)
    for i in range(1, n):
        for path in files[i * 7 % len(files):][:3]:
            with path.open("a") as handle:
                handle.write(f"\n\ndef bench_edit_{i}_{path.stem}(value):\n    return value\n")
        git(root, "commit", "-q", "-am", f"edit {i}")
    return root


def table_sizes(conn: psycopg.Connection) -> dict[str, int]:
    return {t: int(conn.execute("SELECT pg_total_relation_size(%s::regclass)",
                                (t,)).fetchone()[0]) for t in TABLES}  # type: ignore[index]


def index_history(settings: Settings, conn: psycopg.Connection, root: Path,
                  history: list[str], branch: str) -> dict[str, Any]:
    gdir = gitread.git_dir(root)
    assert gdir is not None, f"{root} is not a git repository"
    repo = repos.register(conn, str(root), "bench")
    conn.execute(q.REPO_SET_FOLLOW, {"follow": [], "keep": len(history) - 1, "repo": repo.id,
                                     "visible": [repo.id]})
    repo = repos.get(conn, repo.id)
    assert repo is not None
    runs = []
    sizes_first: dict[str, int] = {}
    for i, commit in enumerate(history):
        started = time.monotonic()
        conn.execute(q.REPO_LOCK, (repo.id,))
        summary = commits.index_commit(settings, conn, repo, gdir, commit, branch, main=branch)
        refs.move(conn, repo.id, branch, summary.tree_id, commit, repo.keep, "bench")
        conn.execute(q.REPO_UNLOCK, (repo.id,))
        seconds = time.monotonic() - started
        runs.append({"commit": commit[:12], "seconds": round(seconds, 3), "files": summary.files,
                     "changed": summary.changed, "parsed": summary.parsed,
                     "phases": summary.phases})
        print(f"  commit {i + 1:2d} {commit[:12]}: {seconds:6.2f}s, {summary.changed:4d} "
              f"changed, {summary.parsed:4d} parsed {summary.phases}", flush=True)
        if i == 0:
            conn.execute("VACUUM ANALYZE")
            sizes_first = table_sizes(conn)
    conn.execute("VACUUM ANALYZE")
    sizes_last = table_sizes(conn)
    later = [r["seconds"] for r in runs[1:]]
    total_first, total_last = sum(sizes_first.values()), sum(sizes_last.values())
    trees = conn.execute("SELECT count(*), count(base_id) FROM trees WHERE kind = 'commit'"
                         ).fetchone()
    return {"commits": len(history), "first_seconds": runs[0]["seconds"],
            "later_median_s": round(statistics.median(later), 3) if later else None,
            "later_max_s": round(max(later), 3) if later else None,
            "runs": runs, "bytes_after_first": total_first, "bytes_after_last": total_last,
            "growth": round(total_last / total_first - 1, 4) if total_first else None,
            "growth_by_table": {t: sizes_last[t] - sizes_first[t] for t in TABLES
                                if sizes_last[t] != sizes_first[t]},
            "commit_trees": trees[0] if trees else 0,
            "layered_trees": trees[1] if trees else 0}


def graph_tools(settings: Settings, conn: psycopg.Connection, history: list[str],
                branch: str, n: int = 20) -> dict[str, Any]:
    """``references`` and ``impact`` on the newest commit (layered) and on the first (its
    tree holds all its rows), in this process through the API's own service object."""
    from codenav.access import Caller
    from codenav_api.service import Services

    newest = conn.execute("SELECT t.id, t.base_id IS NOT NULL FROM repo_refs rr "
                          "JOIN trees t ON t.id = rr.tree_id WHERE rr.name = %s",
                          (branch,)).fetchone()
    assert newest is not None
    hubs = conn.execute("SELECT e.dst_qual, count(*) FROM tree_edges(%s) e WHERE e.verified "
                        "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %s", (newest[0], n // 2)).fetchall()
    names = [str(r[0]).rpartition(".")[2] for r in hubs]
    names += [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT s.name FROM tree_files(%s) f JOIN symbols s ON s.content_id = "
        "f.content_id WHERE s.depth = 1 AND length(s.name) > 5 ORDER BY 1",
        (newest[0],)).fetchall()][:: max(1, 1000 // n)][: n - len(names)]
    services = Services(settings)
    services.open()
    caller = Caller.operator()
    out: dict[str, Any] = {"newest_layered": bool(newest[1]), "names": len(names)}
    answers: dict[str, list[str]] = {}
    try:
        services.pool.wait()
        for label, ref in (("first", history[0]), ("newest", branch)):
            for tool in ("references", "impact"):
                times, got = [], []
                for name in names:
                    args = {"symbol": name} if tool == "references" else \
                        {"symbol_or_path": name, "depth": 2}
                    started = time.perf_counter()
                    answer = services.run(caller, tool, {**args, "ref": ref})
                    times.append((time.perf_counter() - started) * 1000)
                    answer.pop("_stats", None)
                    answer.pop("ref", None)
                    got.append(json.dumps(answer, sort_keys=True, default=str))
                out[f"{tool}_{label}_p50_ms"] = round(statistics.median(times), 1)
                out[f"{tool}_{label}_max_ms"] = round(max(times), 1)
                answers[f"{tool}_{label}"] = got
    finally:
        services.close()
    for tool in ("references", "impact"):
        out[f"{tool}_same_answers"] = sum(a == b for a, b in zip(
            answers[f"{tool}_first"], answers[f"{tool}_newest"], strict=True))
    return out


def ten_file_commit(root: Path, base: str, work: Path) -> tuple[Path, str]:
    """A clone at ``base`` with one more commit changing 10 source files."""
    clone = work / "publish-clone"
    subprocess.run(["git", "-c", "safe.directory=*", "clone", "-q", "--shared", "--no-checkout",
                    str(root), str(clone)], check=True, env={**os.environ, **GIT_ENV})
    git(clone, "checkout", "-q", base)
    sources = [p for p in git(clone, "ls-files").splitlines()
               if p.endswith((".java", ".py", ".scala", ".go", ".ts"))]
    picked = sources[::max(1, len(sources) // 10)][:10]
    for rel in picked:
        with (clone / rel).open("a") as handle:
            handle.write("\n// edited by refs_bench\n" if not rel.endswith(".py") else
                         "\n# edited by refs_bench\n")
    git(clone, "commit", "-q", "-am", "ten files")
    return clone, git(clone, "rev-parse", "HEAD")


def publish_round(home: Path, root: Path, head: str, work: Path) -> dict[str, Any]:
    """A second store behind a real API and index worker; three publishes to it."""
    out: dict[str, Any] = {}
    with benchkit.stores(home / "server") as st:
        assert st.rd is not None
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")},
               "CODENAV_DATABASE_URL": st.pg.url, "CODENAV_REDIS_URL": st.rd.url,
               "CODENAV_HOME": str(home / "server"), "CODENAV_ALLOWED_ROOTS": str(work),
               **benchkit.NO_RATE_LIMIT}
        port = free_port()
        procs = [benchkit.service("api", ["codenav_api", "--port", str(port)], env,
                                  home / "logs"),
                 benchkit.service("worker", ["codenav_worker", "--lane", "index"], env,
                                  home / "logs")]
        try:
            url = f"http://127.0.0.1:{port}"
            benchkit.wait_ready(url)
            with psycopg.connect(st.pg.url, autocommit=True) as conn:
                token, _ = create_token(conn, "bench-ci", "write")
            clone, edited = ten_file_commit(root, head, work)
            cache = home / "publish-cache"
            for label, commit in (("first publish", head), ("same commit again", head),
                                  ("10-file commit", edited)):
                started = time.monotonic()
                done = subprocess.run(
                    [sys.executable, "-P", "-m", "codenav_cli.cli", "publish", str(clone),
                     "--url", url, "--token", token, "--repo", "bench", "--ref", "main",
                     "--commit", commit, "--cache", str(cache)],
                    capture_output=True, text=True, env=env, timeout=3600)
                seconds = time.monotonic() - started
                if done.returncode != 0:
                    raise SystemExit(f"publish failed: {done.stderr}")
                found = SENT.search(done.stdout)
                assert found, done.stdout
                out[label] = {"blobs": int(found.group(1)), "bytes": int(found.group(2)),
                              "seconds": round(seconds, 2)}
                print(f"  publish, {label}: {found.group(0)} in {seconds:.1f}s", flush=True)
        finally:
            benchkit.stop_services(procs)
    return out



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", help="a git repository (checkout or bare mirror)")
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--no-publish", action="store_true")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="codenav-refs-bench-"))
    try:
        root = Path(args.corpus).resolve() if args.corpus else work
        if args.corpus and gitread.git_dir(root) is not None:
            label = f"{root} (its own history)"
        else:
            if args.corpus:
                print(f"refs_bench: {root} is not a git repository; a synthetic history "
                      "stands in", flush=True)
            root = synthetic_history(work, args.commits)
            label = "synthetic history over a standard-library slice"
        gdir = gitread.git_dir(root)
        assert gdir is not None, f"{root} is not a git repository"
        branch = gitread.head_branch(gdir) or "main"
        history = git(root, "rev-list", "--first-parent", f"--max-count={args.commits}",
                      "HEAD").split()[::-1]
        print(f"refs_bench: {len(history)} commits of {branch}, {label}", flush=True)
        home = work / "home"
        result: dict[str, Any] = {"corpus": label, "branch": branch}
        with benchkit.stores(home / "index") as st:  # Redis: the API's service object
            assert st.rd is not None
            settings = Settings.load(env={"CODENAV_DATABASE_URL": st.pg.url,
                                          "CODENAV_REDIS_URL": st.rd.url,
                                          "CODENAV_HOME": str(home / "index"),
                                          "CODENAV_ALLOWED_ROOTS": str(root)},
                                     dotenv=Path("/nonexistent"))
            with psycopg.connect(st.pg.url, autocommit=True) as conn:
                result["index"] = index_history(settings, conn, root, history, branch)
                result["tools"] = graph_tools(settings, conn, history, branch)
        idx = result["index"]
        print(f"\nfirst commit: {idx['first_seconds']:.1f}s; each later commit: median "
              f"{idx['later_median_s']}s, max {idx['later_max_s']}s (target 2 s)")
        print(f"store after the first commit {idx['bytes_after_first'] / 1e6:.1f} MB, after "
              f"{idx['commits']}: {idx['bytes_after_last'] / 1e6:.1f} MB: growth "
              f"{idx['growth']:.1%} for {idx['commits'] - 1} extra refs (target 10 %); "
              f"{idx['layered_trees']} of {idx['commit_trees']} trees layered")
        print("  growth by table (bytes): " + ", ".join(
            f"{t} +{b / 1e6:.2f} MB" for t, b in sorted(idx["growth_by_table"].items(),
                                                        key=lambda kv: -kv[1])))
        tools = result["tools"]
        print(f"graph tools on {tools['names']} names, the newest commit ("
              f"{'layered' if tools['newest_layered'] else 'not layered'}) against the first:")
        for tool in ("references", "impact"):
            print(f"  {tool}: p50 {tools[f'{tool}_newest_p50_ms']} ms (max "
                  f"{tools[f'{tool}_newest_max_ms']}) against {tools[f'{tool}_first_p50_ms']} "
                  f"ms (max {tools[f'{tool}_first_max_ms']}); {tools[f'{tool}_same_answers']} "
                  f"of {tools['names']} answers the same")
        if not args.no_publish:
            result["publish"] = publish_round(home, root, history[-1], work)
            ten = result["publish"]["10-file commit"]
            print(f"publish of a 10-file commit: {ten['blobs']} blobs, {ten['bytes']} bytes "
                  f"(target 1 MB)")
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
