"""Seed benchmark (``make bench`` runs it): what a snapshot costs and what starting from one
saves, measured in one run with real processes started as a user starts them.

1. Cold: ``codenav up --repo CORPUS`` on an empty home: time until it is searchable (its
   first index and code graph), then until every chunk is embedded (hybrid at full
   strength). With ``--from-home H`` the corpus was built earlier by a stack at ``H``
   (Kafka's embedding takes 20+ minutes on 2 cores): its cold figures are then the ones
   that stack recorded (its first index run, and the embedding rate over the vectors it
   stored), labelled as such, and what it has not embedded yet is said.
2. ``codenav snapshot export``: time and size.
3. Seeded: ``codenav up --seed FILE --repo COPY --no-wait`` on another empty home, where
   COPY is the corpus copied elsewhere with every mtime new (another machine's checkout):
   time from the process start to the first correct hybrid answer (the same top results as
   the source stack, semantic ranking included, for each query), the import time inside
   it, and the first reconcile after it (files re-read, files parsed).

Not a test: it prints what it measured in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from benchkit import NO_RATE_LIMIT
from codenav_cli.stores import free_port

CODENAV = str(Path(sys.executable).with_name("codenav"))
STDLIB_SLICE = ("json", "http", "urllib", "logging", "concurrent", "email")
"""The default corpus: these packages of this interpreter's standard library (quick)."""
QUERIES = ("parse a document and report the position of an error",
           "send a request with headers and read the response",
           "retry when the connection is closed by the other side")


@dataclass
class Stack:
    proc: subprocess.Popen[bytes]
    home: Path
    log: Path
    started: float

    def info(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.home / "stack.json").read_text())
        return data

    def post(self, route: str, body: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        info = self.info()
        response = httpx.post(f"{info['url']}{route}", json=body, timeout=timeout,
                              headers={"Authorization": f"Bearer {info['token']}"})
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def logged(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


def _env(home: Path, allowed: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_HOME": str(home), "PYTHONUNBUFFERED": "1",
                "CODENAV_ALLOWED_ROOTS": str(allowed), **NO_RATE_LIMIT})
    return env


def _up(args: list[str], home: Path, allowed: Path) -> Stack:
    home.parent.mkdir(parents=True, exist_ok=True)
    log = home.parent / f"{home.name}-up.log"
    with log.open("wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen([CODENAV, "up", *args, "--port", str(free_port())],
                                env=_env(home, allowed), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=str(home.parent))
    return Stack(proc, home, log, started)


def _wait(stack: Stack, text: str, timeout: float) -> float:
    """Seconds from the stack's start until its output holds ``text``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in stack.logged():
            return time.monotonic() - stack.started
        if stack.proc.poll() is not None:
            raise SystemExit(f"codenav up exited:\n{stack.logged()[-3000:]}")
        time.sleep(0.1)
    raise SystemExit(f"no {text!r} after {timeout:.0f}s:\n{stack.logged()[-3000:]}")


def _embedded(stack: Stack, repo: str) -> dict[str, Any]:
    status = stack.post("/v1/status", {"repo": repo})
    emb: dict[str, Any] = (status.get("repos") or [{}])[0].get("embeddings") or {}
    return emb


def _top(answer: dict[str, Any], k: int = 5) -> list[tuple[str, int]]:
    return [(r["path"], r["start_line"]) for r in answer.get("results", [])[:k]]


def _copy_corpus(src: Path, dest: Path, only_py: bool) -> Path:
    if only_py:
        for package in STDLIB_SLICE:
            shutil.copytree(src / package, dest / package, copy_function=shutil.copy,
                            ignore=lambda _d, names: [n for n in names if n == "__pycache__"])
    else:
        shutil.copytree(src, dest, symlinks=True, copy_function=shutil.copy,
                        ignore=shutil.ignore_patterns(".git"))
    now = time.time()
    for path in dest.rglob("*"):  # another machine's checkout: no mtime is the same
        if path.is_file() and not path.is_symlink():
            os.utime(path, (now, now))
    return dest


def _recorded_cold(database_url: str, repo: str) -> dict[str, Any]:
    """What the stack that built the corpus recorded: its first full index run, and the
    embedding rate over the vectors it stored (first to last)."""
    with psycopg.connect(database_url) as conn:
        run = conn.execute(
            "SELECT extract(epoch FROM finished_at - started_at), files_total, files_parsed "
            "FROM index_runs r JOIN repos p ON p.id = r.repo_id WHERE p.name = %s "
            "AND r.state = 'done' AND r.scope = 'full' ORDER BY r.id LIMIT 1",
            (repo,)).fetchone()
        vec = conn.execute(
            "SELECT count(*), extract(epoch FROM max(created_at) - min(created_at)) "
            "FROM embeddings").fetchone()
        chunks = conn.execute(
            "SELECT count(*) FROM files f JOIN chunks c ON c.content_id = f.content_id "
            "JOIN repos p ON p.id = f.repo_id WHERE p.name = %s", (repo,)).fetchone()
    assert run and vec and chunks
    vectors, span = int(vec[0]), float(vec[1] or 0)
    rate = vectors / span if span > 0 else 0.0
    return {"source": "recorded by the stack that built the corpus (not this run)",
            "index_s": round(float(run[0]), 1), "files": int(run[1]),
            "vectors": vectors, "chunks": int(chunks[0]),
            "embedding_rate_chunks_per_s": round(rate, 1),
            "embedding_s_for_all_chunks_at_that_rate":
                round(int(chunks[0]) / rate, 0) if rate else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None,
                        help="a checkout (default: a slice of the standard library)")
    parser.add_argument("--from-home", type=Path, default=None,
                        help="a running `codenav up` home that already indexed --corpus")
    parser.add_argument("--stop-source", action="store_true",
                        help="with --from-home: stop that stack after the export, so the "
                        "seeded start is measured without its embedding backlog running")
    parser.add_argument("--physical", action="store_true",
                        help="also export a physical seed of the stopped source store and "
                        "measure `up --seed` from it beside the logical snapshot")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--embed-timeout", type=float, default=3600)
    parser.add_argument("--out", default="bench/out/seed_bench.json")
    args = parser.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="codenav-seedbench-"))
    work.mkdir(parents=True, exist_ok=True)
    allowed = work / "checkouts"
    stdlib = args.corpus is None
    corpus = Path(sysconfig.get_paths()["stdlib"]) if stdlib else args.corpus.resolve()
    report: dict[str, Any] = {"corpus": str(corpus) + (f" {STDLIB_SLICE}" if stdlib else "")}
    source_stack: Stack | None = None
    try:
        if args.from_home:
            info = json.loads((args.from_home / "stack.json").read_text())
            database_url = info["database_url"]
            with psycopg.connect(database_url) as conn:
                name = conn.execute("SELECT name FROM repos WHERE root = %s",
                                    (str(corpus),)).fetchone()
            if name is None:
                raise SystemExit(f"{args.from_home} has no repository at {corpus}")
            repo = str(name[0])
            report["cold"] = _recorded_cold(database_url, repo)
            source = Stack(subprocess.Popen(["true"]), args.from_home, Path("/dev/null"), 0)
        else:
            src = _copy_corpus(corpus, allowed / "source" / "corpus", stdlib)
            repo = "corpus"
            source_stack = _up(["--repo", str(src)], work / "cold-home", allowed)
            searchable = _wait(source_stack, "Press Ctrl-C", 3600)
            deadline = time.monotonic() + args.embed_timeout
            emb: dict[str, Any] = {}
            while time.monotonic() < deadline:
                emb = _embedded(source_stack, repo)
                if emb.get("total") and emb.get("embedded") == emb.get("total"):
                    break
                time.sleep(1.0)
            embedded_at = time.monotonic() - source_stack.started
            if args.physical and emb.get("embedded") != emb.get("total"):
                # the physical copy is of the stopped store: the answers it is compared
                # with come from the same store with its embedding stopped
                source_stack.stop()
                source_stack = _up(["--repo", str(src), "--workers", "0", "--embed-workers",
                                    "0", "--no-wait"], work / "cold-home", allowed)
                _wait(source_stack, "Press Ctrl-C", 600)
            report["cold"] = {"source": "measured in this run",
                              "searchable_s": round(searchable, 1),
                              "embedded_s": round(embedded_at, 1),
                              "embedding_s": round(embedded_at - searchable, 1),
                              "chunks": emb.get("total"), "vectors": emb.get("embedded")}
            source = source_stack
            database_url = source.info()["database_url"]
        deadline = time.monotonic() + 300  # the source's embedder may still be loading
        while "total" not in (emb := _embedded(source, repo)) and time.monotonic() < deadline:
            time.sleep(0.5)
        report["source_coverage"] = {"embedded": emb.get("embedded"), "total": emb.get("total")}
        reference: dict[str, tuple[list[tuple[str, int]], Any]] = {}
        for q in QUERIES:  # the source's answer, and what it says about semantic coverage
            answer = source.post("/v1/search", {"query": q, "repo": repo})
            reference[q] = (_top(answer), answer.get("note"))

        snap = work / "corpus.snap"
        exported, wall = _export(["--repo", repo, str(snap)], source.home, allowed)
        report["export"] = {"wall_s": wall, "size_mb": round(snap.stat().st_size / 1e6, 1),
                            "rows": exported["rows"]}
        if source_stack is not None:
            source_stack.stop()
            source_stack = None
        elif args.stop_source or args.physical:
            os.kill(int(source.info()["pid"]), signal.SIGINT)
            deadline = time.monotonic() + 120
            while (source.home / "stack.json").exists() and time.monotonic() < deadline:
                time.sleep(0.5)
            report["source_stopped"] = True

        physical = work / "corpus.seed"
        if args.physical:
            made, wall = _export(["--physical", str(physical)], source.home, allowed)
            report["export_physical"] = {"wall_s": wall,
                                         "size_mb": round(made["bytes"] / 1e6, 1),
                                         "store_mb": round(made["store_bytes"] / 1e6, 1)}
        here = _copy_corpus(corpus, allowed / "elsewhere" / "corpus", stdlib) \
            if stdlib else _copy_corpus(corpus, allowed / "elsewhere" / corpus.name, False)
        extra: list[str] = []
        if emb.get("total") and emb.get("embedded") != emb.get("total"):
            # a partial seed leaves a backlog whose vectors would change the answers while
            # they are compared with the source's: the seeded stack embeds nothing here
            extra = ["--embed-workers", "0"]
            report["seeded_embed_workers"] = 0
        report["seeded"], report["first_reconcile"] = _seeded(
            snap, here, work / "seeded-home", allowed, repo, reference, extra)
        if args.physical:
            report["seeded_physical"], report["first_reconcile_physical"] = _seeded(
                physical, here, work / "seeded-physical-home", allowed, repo, reference,
                extra)
    finally:
        if source_stack is not None:
            source_stack.stop()
    _print(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _export(args: list[str], home: Path, allowed: Path) -> tuple[dict[str, Any], float]:
    """``codenav snapshot export ARGS --json`` on ``home``: its answer, and the seconds."""
    started = time.monotonic()
    done = subprocess.run([CODENAV, "snapshot", "export", *args, "--json"],
                          capture_output=True, text=True, env=_env(home, allowed), check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    data: dict[str, Any] = json.loads(done.stdout)
    return data, round(time.monotonic() - started, 1)


def _seeded(snap: Path, here: Path, home: Path, allowed: Path, repo: str,
            reference: dict[str, tuple[list[tuple[str, int]], Any]], extra: list[str]
            ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``codenav up --seed SNAP`` on the empty ``home``: seconds to the first answer and to
    the first correct hybrid answer, and the first reconcile after it."""
    began = time.time()
    seeded = _up(["--seed", str(snap), "--repo", str(here), "--no-wait", *extra], home,
                 allowed)
    reconcile: dict[str, Any] | None = None
    try:
        first_answer = None
        pending = dict(reference)
        correct: dict[str, float] = {}
        deadline = time.monotonic() + 600
        while pending and time.monotonic() < deadline:
            if seeded.proc.poll() is not None:
                raise SystemExit(f"codenav up exited:\n{seeded.logged()[-3000:]}")
            if not (seeded.home / "stack.json").exists():
                time.sleep(0.05)
                continue
            for query, (want, note) in list(pending.items()):
                try:
                    answer = seeded.post("/v1/search", {"query": query, "repo": repo})
                except httpx.HTTPError:
                    break
                if first_answer is None:
                    first_answer = time.monotonic() - seeded.started
                if answer.get("note") == note and _top(answer) == want:
                    correct[query] = round(time.monotonic() - seeded.started, 2)
                    del pending[query]
            time.sleep(0.05)
        log = seeded.logged()
        line = next((ln for ln in log.splitlines() if "seeded " in ln), "")
        out = {"first_answer_s": round(first_answer, 2) if first_answer else None,
               "first_correct_hybrid_s": min(correct.values()) if correct else None,
               "all_queries_correct_s": max(correct.values()) if not pending else None,
               "queries_never_correct": list(pending), "import_line": line.strip()}
        # the first reconcile after the seed: files re-read by content, none re-parsed
        deadline = time.monotonic() + 1800
        run = None
        while time.monotonic() < deadline:
            with psycopg.connect(seeded.info()["database_url"]) as conn:
                run = conn.execute(
                    "SELECT extract(epoch FROM finished_at - started_at), files_total, "
                    "files_parsed FROM index_runs WHERE state = 'done' AND scope = 'full' "
                    "AND started_at >= to_timestamp(%s) ORDER BY id LIMIT 1", (began,)
                ).fetchone()
            if run:
                break
            time.sleep(0.5)
        if run:
            reconcile = {"seconds": round(float(run[0]), 1), "files": int(run[1]),
                         "parsed": int(run[2])}
    finally:
        seeded.stop()
    return out, reconcile


def _print(report: dict[str, Any]) -> None:
    print(f"seed benchmark: {report['corpus']}")
    cold = report["cold"]
    print(f"  cold ({cold['source']}): " + ", ".join(
        f"{k} {v}" for k, v in cold.items() if k != "source"))
    print(f"  source embeddings: {report['source_coverage']}")
    exp = report["export"]
    print(f"  export: {exp['size_mb']} MB in {exp['wall_s']} s "
          f"({exp['rows']['files']} files, {exp['rows']['chunks']} chunks, "
          f"{exp['rows']['embeddings']} vectors)")
    if "export_physical" in report:
        phys = report["export_physical"]
        print(f"  export --physical (the stopped store): {phys['size_mb']} MB "
              f"({phys['store_mb']} MB of data files) in {phys['wall_s']} s")
    for kind, key, first_key in (("snapshot", "seeded", "first_reconcile"),
                                 ("physical seed", "seeded_physical",
                                  "first_reconcile_physical")):
        if key not in report:
            continue
        seeded = report[key]
        print(f"  up --seed ({kind}) on an empty home: first answer "
              f"{seeded.get('first_answer_s')} s, first correct hybrid answer "
              f"{seeded.get('first_correct_hybrid_s')} s, all {len(QUERIES)} queries "
              f"correct {seeded.get('all_queries_correct_s')} s")
        print(f"    {seeded.get('import_line')}")
        if seeded.get("queries_never_correct"):
            print(f"    never matched the source: {seeded['queries_never_correct']}")
        first = report.get(first_key)
        if first:
            print(f"    first reconcile after the seed: {first['files']} files re-read in "
                  f"{first['seconds']} s, {first['parsed']} parsed")


if __name__ == "__main__":
    sys.exit(main())
