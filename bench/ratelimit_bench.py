"""One token floods the API; what do the others see? (the reliability plan's G10: above its
quota a token gets 429 with Retry-After, and one token flooding at 10x its quota raises
another token's p99 by at most 20 %).

On the store of a running stack (``--home``: its ``stack.json``), this starts the API as
its image does (``python -m codenav_api``) in the variants ``--apis`` names: ``limited``
(the per-token rate limit and slots as configured: ``--rate``, ``--burst``,
``--concurrency``, the defaults by default), ``uncapped`` (the rate limit, no slots) and
``unlimited`` (neither). Against each, a patient token searches at ``--pace`` calls a
second (under its quota), first alone, then while a flooding token, in a process of its
own, sends ``--flood`` times the quota, or (``--bursts``) its whole burst at once every
burst / rate seconds, within its quota on average. Each pair of phases is run
``--rounds`` times, the variants alternated. Every figure printed is measured in this run;
the flooding client shares the machine's cores with the API.

    python bench/ratelimit_bench.py --home /tmp/gh1
    python bench/ratelimit_bench.py --home /tmp/gh1 --bursts --apis limited,uncapped
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psycopg

from benchkit import service, stop_services, wait_ready
from codenav import repos
from codenav.auth import create_token, revoke_token
from codenav.config import Settings
from codenav_cli.stores import free_port
from index_bench import make_queries


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _flood(url: str, token: str, repo: str, queries: list[str], rate: float, threads: int,
           stop: Any, out: Any) -> None:
    """In a process of its own: ``threads`` clients, each sending ``rate / threads`` calls
    a second, until ``stop``; the status codes counted into ``out``."""
    counts: Counter[int] = Counter()
    lock = threading.Lock()

    def client(k: int) -> None:
        gap = threads / rate
        nxt = time.monotonic()
        with httpx.Client(base_url=url, timeout=30,
                          headers={"Authorization": f"Bearer {token}"}) as http:
            i = k
            while not stop.is_set():
                try:
                    code = http.post("/v1/search", json={
                        "query": queries[i % len(queries)], "repo": repo, "limit": 10,
                        "mode": "lexical"}).status_code
                except httpx.HTTPError:
                    code = 0
                with lock:
                    counts[code] += 1
                i += threads
                nxt += gap
                time.sleep(max(0.0, nxt - time.monotonic()))

    workers = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
    started = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out.put({"codes": dict(counts), "seconds": time.monotonic() - started})


def _burst_flood(url: str, token: str, repo: str, queries: list[str], burst: int,
                 period: float, stop: Any, out: Any) -> None:
    """In a process of its own: ``burst`` calls at the same moment every ``period`` s (on
    average within the quota when ``period`` is ``burst / quota``), until ``stop``."""
    from concurrent.futures import ThreadPoolExecutor

    counts: Counter[int] = Counter()
    started = time.monotonic()
    with httpx.Client(base_url=url, timeout=120,
                      limits=httpx.Limits(max_connections=burst),
                      headers={"Authorization": f"Bearer {token}"}) as http, \
            ThreadPoolExecutor(burst) as pool:
        def one(i: int) -> int:
            try:
                return http.post("/v1/search", json={
                    "query": queries[i % len(queries)], "repo": repo, "limit": 10,
                    "mode": "lexical"}).status_code
            except httpx.HTTPError:
                return 0

        n = 0
        while not stop.is_set():
            nxt = time.monotonic() + period
            for code in pool.map(one, range(n, n + burst)):
                counts[code] += 1
            n += burst
            stop.wait(max(0.0, nxt - time.monotonic()))
    out.put({"codes": dict(counts), "seconds": time.monotonic() - started})


def patient(http: httpx.Client, repo: str, queries: list[str], samples: int,
            pace: float) -> tuple[list[float], Counter[int]]:
    """``samples`` searches, one every ``1 / pace`` s (or as soon as the last answered)."""
    ms: list[float] = []
    codes: Counter[int] = Counter()
    nxt = time.monotonic()
    for i in range(samples):
        t = time.perf_counter()
        r = http.post("/v1/search", json={"query": queries[i % len(queries)], "repo": repo,
                                          "limit": 10, "mode": "lexical"})
        ms.append((time.perf_counter() - t) * 1000)
        codes[r.status_code] += 1
        nxt += 1 / pace
        time.sleep(max(0.0, nxt - time.monotonic()))
    return ms, codes


def run_api(env: dict[str, str], logs: Path, label: str, args: argparse.Namespace,
            tokens: tuple[str, str], repo: str, queries: list[str], quota: float
            ) -> list[dict[str, Any]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    api = service(f"api-{label}", ["codenav_api", "--no-migrate", "--port", str(port)], env,
                  logs)
    rows = []
    try:
        wait_ready(url)
        with httpx.Client(base_url=url, timeout=60,
                          headers={"Authorization": f"Bearer {tokens[0]}"}) as http:
            patient(http, repo, queries, 20, args.pace)  # warm the API's pool and caches
            for rnd in range(args.rounds):
                alone, codes_alone = patient(http, repo, queries, args.samples, args.pace)
                ctx = multiprocessing.get_context("fork")
                stop, out = ctx.Event(), ctx.Queue()
                if args.bursts:  # bursts of the whole burst, within the quota on average
                    flooder = ctx.Process(target=_burst_flood, args=(
                        url, tokens[1], repo, queries, args.burst, args.burst / quota, stop,
                        out))
                    flooder.start()
                else:
                    flooder = ctx.Process(target=_flood, args=(
                        url, tokens[1], repo, queries, args.flood * quota, args.threads, stop,
                        out))
                    flooder.start()
                    # the flood under way, and its burst spent, before the timing starts
                    excess = args.flood * quota - quota
                    time.sleep(1.0 + (args.burst / excess if excess > 0 and quota > 0
                                      else 0.0))
                flooded, codes_flooded = patient(http, repo, queries, args.samples, args.pace)
                stop.set()
                result = out.get(timeout=60)
                flooder.join(30)
                sent = sum(result["codes"].values())
                rows.append({
                    "api": label, "round": rnd + 1,
                    "alone_p50": statistics.median(alone), "alone_p99": _pct(alone, 99),
                    "flooded_p50": statistics.median(flooded),
                    "flooded_p99": _pct(flooded, 99),
                    "patient_refused": codes_alone[429] + codes_flooded[429],
                    "patient_other": {k: v for k, v in (codes_alone + codes_flooded).items()
                                      if k not in (200, 429)},
                    "flood_rate": sent / result["seconds"],
                    "flood_served": result["codes"].get(200, 0) / result["seconds"],
                    "flood_refused_share": result["codes"].get(429, 0) / max(sent, 1),
                })
                print(json.dumps({k: round(v, 2) if isinstance(v, float) else v
                                  for k, v in rows[-1].items()}), flush=True)
    finally:
        stop_services([api])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True,
                        help="home of a running stack (its stack.json names the store)")
    parser.add_argument("--repo", default="", help="repository to search (default: the first)")
    defaults = Settings()
    parser.add_argument("--rate", type=float, default=defaults.rate_limit_per_s,
                        help="the limit under test, calls a second per token")
    parser.add_argument("--burst", type=int, default=defaults.rate_limit_burst)
    parser.add_argument("--pace", type=float, default=5.0,
                        help="the patient token's calls a second")
    parser.add_argument("--flood", type=float, default=10.0,
                        help="the flooding token's rate, in multiples of the quota")
    parser.add_argument("--threads", type=int, default=8, help="the flooding client's threads")
    parser.add_argument("--samples", type=int, default=150, help="patient calls per phase")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--apis", default="limited,unlimited",
                        help="which APIs to run: limited (as configured), unlimited (no "
                             "rate limit, no slots), uncapped (the rate limit, no slots)")
    parser.add_argument("--concurrency", type=int, default=defaults.concurrent_calls,
                        help="calls of one token served at once (the limited API)")
    parser.add_argument("--bursts", action="store_true",
                        help="the flooding token sends its whole burst at once, every "
                             "burst / rate seconds (within its quota on average)")
    args = parser.parse_args()

    info = json.loads((args.home / "stack.json").read_text())
    with psycopg.connect(info["database_url"], autocommit=True) as conn:
        found = [r for r in repos.list_repos(conn) if not args.repo or r.name == args.repo]
        if not found:
            print(f"no repository {args.repo!r} in the store", file=sys.stderr)
            return 1
        repo = found[0]
        queries = make_queries(conn, repo.id, 200)
        patient_token, patient_id = create_token(conn, "bench-patient", "read")
        flood_token, flood_id = create_token(conn, "bench-flood", "read")
    base = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    base.update({"CODENAV_DATABASE_URL": info["database_url"],
                 "CODENAV_REDIS_URL": info["redis_url"], "CODENAV_HOME": str(args.home),
                 "CODENAV_LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1"})
    logs = args.home / "logs"
    flood = (f"bursts of {args.burst} every {args.burst / args.rate:g} s" if args.bursts
             else f"flood {args.flood:g}x the quota ({args.flood * args.rate:g}/s, "
                  f"{args.threads} threads)")
    print(f"repository {repo.name}; quota {args.rate:g}/s, burst {args.burst}, "
          f"{args.concurrency} in flight per token; patient {args.pace:g}/s, {args.samples} "
          f"calls per phase; {flood}; {args.rounds} rounds; {os.cpu_count()} cores",
          flush=True)
    rows: list[dict[str, Any]] = []
    try:
        for rnd in range(args.rounds):  # the two APIs alternated
            for label, rate, slots in (("limited", args.rate, args.concurrency),
                                       ("uncapped", args.rate, 0), ("unlimited", 0.0, 0)):
                if label not in args.apis.split(","):
                    continue
                env = {**base, "CODENAV_RATE_LIMIT_PER_S": str(rate),
                       "CODENAV_RATE_LIMIT_BURST": str(args.burst),
                       "CODENAV_CONCURRENT_CALLS": str(slots)}
                one = argparse.Namespace(**{**vars(args), "rounds": 1})
                for row in run_api(env, logs, label, one, (patient_token, flood_token),
                                   repo.name, queries, args.rate):
                    rows.append({**row, "round": rnd + 1})
    finally:
        with psycopg.connect(info["database_url"], autocommit=True) as conn:
            revoke_token(conn, patient_id)
            revoke_token(conn, flood_id)

    print("\n| API | round | patient p50 / p99 alone | with the flood | p99 ratio | flood sent / "
          "served a second | flood refused | patient refused |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['api']} | {r['round']} | {r['alone_p50']:.1f} / {r['alone_p99']:.1f} ms | "
              f"{r['flooded_p50']:.1f} / {r['flooded_p99']:.1f} ms | "
              f"{r['flooded_p99'] / r['alone_p99']:.2f} | {r['flood_rate']:.0f} / "
              f"{r['flood_served']:.0f} | {100 * r['flood_refused_share']:.0f}% | "
              f"{r['patient_refused']} |")
    for label in ("limited", "uncapped", "unlimited"):
        mine = [r for r in rows if r["api"] == label]
        if not mine:
            continue
        ratio = statistics.median(r["flooded_p99"] / r["alone_p99"] for r in mine)
        print(f"{label}: median p99 ratio (flooded / alone) {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
