"""Memory of the whole stack but Postgres (issue 18's RSS target). Not a test: it prints
numbers, each measured in this run.

``codenav up`` starts the stack as a user starts it, on a fresh home, with the default
embedder; then ``codenav index CORPUS`` (returns once the code graph is built), then the
stack keeps running until every chunk to embed has its vector (``codenav status``), or
``--embed-timeout`` seconds. Every 0.25 s each process of the stack except Postgres is
sampled; printed per phase (idle; index with the graph; embedding; after: the ``--settle``
seconds of idling after the last vector; settled: 5 s sampled after those):

- the peak of the summed RSS (resident pages; forked workers share pages with their
  parent, which RSS counts in each), and the peak of the summed PSS (each shared page
  divided among its sharers: what the stack really holds);
- each process's own peak RSS.

    python bench/stack_memory_bench.py /path/to/kafka [--embed-timeout 900] [--runs 3]

``--runs N`` measures it all N times, each on a fresh home, and prints each phase's median
peaks beside every run's (issue 18's targets are medians of 3).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from benchkit import NO_RATE_LIMIT, medians, wait_ready
from codenav_cli.stores import free_port

MB = 2**20


class StackSampler:
    """Samples a process tree's RSS and PSS (Postgres left out) in a thread."""

    def __init__(self, root: int, interval: float = 0.25) -> None:
        self.root = root
        self.interval = interval
        self.phase = "idle"
        self.peaks: dict[str, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StackSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        try:
            root = psutil.Process(self.root)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        rss = pss = 0
        each: dict[str, int] = {}
        for proc in procs:
            try:
                if "postgres" in proc.name():
                    continue
                mem = proc.memory_full_info()
                role = _role(proc.cmdline())
            except psutil.Error:
                continue
            rss += mem.rss
            pss += mem.pss
            each[f"{role} [{proc.pid}]"] = mem.rss
        peak = self.peaks.setdefault(self.phase, {"rss": 0, "pss": 0, "each": {}})
        peak["pss"] = max(peak["pss"], pss)
        if rss > peak["rss"]:
            peak["rss"] = rss
            peak["at_peak"] = each
        for name, value in each.items():
            peak["each"][name] = max(peak["each"].get(name, 0), value)


def _role(cmdline: list[str]) -> str:
    """A short name: the package run with -m and its lane, or the program."""
    if "-m" in cmdline:
        at = cmdline.index("-m")
        role = cmdline[at + 1] if at + 1 < len(cmdline) else "python"
        if "--lane" in cmdline:
            role += " " + cmdline[cmdline.index("--lane") + 1]
        return role
    return " ".join(Path(part).name for part in cmdline[:2])


def status(env: dict[str, str], exe: str) -> dict[str, Any]:
    done = subprocess.run([exe, "status", "--json"], env=env, cwd=tempfile.gettempdir(),
                          capture_output=True, text=True, check=False)
    try:
        return json.loads(done.stdout)["repos"][0]  # type: ignore[no-any-return]
    except (ValueError, KeyError, IndexError):
        return {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--embed-timeout", type=float, default=900,
                        help="seconds to wait for every vector after the index (0: skip)")
    parser.add_argument("--settle", type=float, default=90,
                        help="seconds the stack idles after the last vector before the "
                             "'settled' phase (5 s) is sampled (0: skip)")
    parser.add_argument("--runs", type=int, default=1,
                        help="measure this many times, each on a fresh home; print medians")
    parser.add_argument("--out", type=Path, default=None, help="also write the result as JSON")
    args = parser.parse_args()
    runs = []
    for run in range(args.runs):
        print(f"run {run + 1} of {args.runs} ...", file=sys.stderr, flush=True)
        runs.append(measure(args))
        show(runs[-1], f"run {run + 1}")
    result = runs[0] if len(runs) == 1 else combine(runs)
    if len(runs) > 1:
        show(result, f"medians of {len(runs)} runs")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each phase's median peaks, every run's beside them; the processes at the peak are
    the median run's (the one whose peak RSS is the median)."""
    result = medians(runs, ("index_with_graph_s", "embedding_s"))
    result["phases"] = {}
    for phase in runs[0]["phases"]:
        each = [r["phases"][phase] for r in runs if phase in r["phases"]]
        middle = sorted(each, key=lambda p: p["peak_rss_mb"])[(len(each) - 1) // 2]
        result["phases"][phase] = {**medians(each, ("peak_rss_mb", "peak_pss_mb")),
                                   "at_peak_rss_mb": middle["at_peak_rss_mb"]}
    return result


def show(result: dict[str, Any], label: str) -> None:
    print(f"{result['corpus']} ({label}): index with graph {result['index_with_graph_s']} s; "
          f"embedded {result['embedded']} in {result['embedding_s']} s after it")
    for phase, p in result["phases"].items():
        top = ", ".join(f"{name} {mb}" for name, mb in list(p["at_peak_rss_mb"].items())[:6])
        runs = (f" (runs: RSS {', '.join(map(str, p['peak_rss_mb_runs']))}; PSS "
                f"{', '.join(map(str, p['peak_pss_mb_runs']))})" if "peak_rss_mb_runs" in p
                else "")
        print(f"  {phase:9s} peak RSS {p['peak_rss_mb']:5d} MB, PSS {p['peak_pss_mb']:5d} MB "
              f"(all but Postgres){runs}; at the RSS peak: {top}", flush=True)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One run: a fresh home, ``codenav up``, the index, the embedding, the settling."""
    corpus = args.corpus.resolve()
    exe = str(Path(sys.executable).with_name("codenav"))
    home = Path(tempfile.mkdtemp(prefix="codenav-stackmem-"))
    port = free_port()
    env = dict(os.environ, CODENAV_HOME=str(home), CODENAV_ALLOWED_ROOTS=str(corpus.parent),
               **NO_RATE_LIMIT)
    up = subprocess.Popen([exe, "up", "--port", str(port)], env=env, cwd=tempfile.gettempdir(),
                          stdout=(home / "up.log").open("wb"), stderr=subprocess.STDOUT,
                          start_new_session=True)
    result: dict[str, Any] = {"corpus": corpus.name}
    try:
        wait_ready(f"http://127.0.0.1:{port}", timeout=300)
        with StackSampler(up.pid) as sampler:
            time.sleep(10)  # the embedder loads its model in the background
            sampler.phase = "index"
            started = time.perf_counter()
            done = subprocess.run([exe, "index", str(corpus), "--quiet"], env=env,
                                  cwd=tempfile.gettempdir(), capture_output=True, text=True,
                                  check=False)
            result["index_with_graph_s"] = round(time.perf_counter() - started, 1)
            if done.returncode != 0:
                raise SystemExit(f"codenav index failed: {done.stderr[-500:]}")
            sampler.phase = "embedding"
            deadline = time.monotonic() + args.embed_timeout
            vectors: dict[str, Any] = {}
            while time.monotonic() < deadline:
                vectors = status(env, exe).get("embeddings") or {}
                if vectors.get("total") and vectors.get("embedded", 0) >= vectors["total"]:
                    break
                time.sleep(5)
            result["embedded"] = f"{vectors.get('embedded', 0)}/{vectors.get('total', 0)}"
            result["embedding_s"] = round(time.perf_counter() - started
                                          - result["index_with_graph_s"], 1)
            if args.settle > 0:  # what a server holds once its backlog is done
                sampler.phase = "after"
                time.sleep(args.settle)
                sampler.phase = "settled"
                time.sleep(5)
        result["phases"] = {
            phase: {"peak_rss_mb": round(p["rss"] / MB), "peak_pss_mb": round(p["pss"] / MB),
                    "process_peaks_mb": {name: round(v / MB) for name, v in sorted(
                        p["each"].items(), key=lambda kv: -kv[1])},
                    "at_peak_rss_mb": {name: round(v / MB) for name, v in sorted(
                        p.get("at_peak", {}).items(), key=lambda kv: -kv[1])}}
            for phase, p in sampler.peaks.items()}
    finally:
        os.killpg(up.pid, signal.SIGINT)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
        shutil.rmtree(home, ignore_errors=True)
    return result


if __name__ == "__main__":
    sys.exit(main())
