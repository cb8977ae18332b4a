"""Embedding pipeline vs the bare model (``make bench`` runs it). Not a test: it prints numbers.

The same chunk texts are embedded twice in one run: through the whole pipeline (the embed
job's backlog query, HTTP to the embedder service with its cross-request batching, vectors
written to Postgres with COPY) and by calling the model's encode() directly in this process
with the same backend. The ratio pipeline / bare is the pipeline's efficiency (target 90 %).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

from benchkit import stores
from codenav import repos
from codenav.config import Settings
from codenav.db import queries as q
from codenav.embed import vectors
from codenav.embed.client import EmbedClient
from codenav.index import reconcile
from codenav_cli.stores import free_port

PACKAGES = ("json", "http", "email", "logging", "urllib", "xml/dom", "concurrent")


def corpus(dest: Path) -> Path:
    """A slice of this interpreter's standard library (a few thousand chunks)."""
    src = Path(sysconfig.get_paths()["stdlib"])
    root = dest / "stdlib-slice"
    for package in PACKAGES:
        shutil.copytree(src / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__", "test*"))
    return root


def start_embedder(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "codenav_embedder", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("embedder did not become ready")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="bare-encode repetitions")
    parser.add_argument("--out", default="bench/out/embed_pipeline_bench.json")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    with tempfile.TemporaryDirectory(prefix="codenav-embed-bench-") as tmp:
        base = Path(tmp)
        root = corpus(base)
        stack = contextlib.ExitStack()
        pg = stack.enter_context(stores(base / "home", queue=False)).pg
        # Bulk embedding runs at a lower CPU priority (CODENAV_EMBED_BULK_NICE): that only
        # matters against other work, and the bare encode() it is compared with runs at the
        # normal one, so both do here.
        embedder, url = start_embedder({**env, "CODENAV_EMBED_BULK_NICE": "0"})
        try:
            settings = Settings.load(env={"CODENAV_DATABASE_URL": pg.url,
                                          "CODENAV_HOME": str(base / "home"),
                                          "CODENAV_EMBED_URL": url,
                                          "CODENAV_ALLOWED_ROOTS": str(root)},
                                     dotenv=Path("/nonexistent"))
            with psycopg.connect(pg.url, autocommit=True) as conn:
                repo = repos.register(conn, str(root), "slice")
                reconcile.reconcile(settings, repo.id)
                client = EmbedClient(url)
                started = time.perf_counter()
                run = vectors.embed_backlog(conn, client, repo.id, budget_s=3600)
                pipeline_s = time.perf_counter() - started
                model = vectors.find_model(conn, client.info().name)
                assert model is not None
                texts = [t for _, t in conn.execute(
                    q.EMBED_BACKLOG, {"tree": repo.default_tree, "model": -1,
                                      "k": 10**9, "later": [], "after": b""}).fetchall()]
                client.close()
        finally:
            os.killpg(embedder.pid, signal.SIGTERM)
            embedder.wait(30)
            stack.close()
    from codenav_embedder import encoder
    from codenav_embedder.settings import EmbedderSettings

    es = EmbedderSettings.load(env={})
    enc = encoder.load(es.model_name(), backend=es.backend, threads=es.threads,
                       cache_dir=es.cache_path())
    enc.encode(texts[:64])  # warm up
    bare = []
    for _ in range(args.runs):
        started = time.perf_counter()
        enc.encode(texts, batch_size=es.batch_size)
        bare.append(time.perf_counter() - started)
    bare_s = statistics.median(bare)
    result = {
        "chunks": run.embedded, "texts": len(texts), "backend": es.backend,
        "pipeline_s": round(pipeline_s, 2),
        "pipeline_chunks_per_s": round(run.embedded / pipeline_s, 1),
        "bare_encode_s_median": round(bare_s, 2),
        "bare_chunks_per_s": round(len(texts) / bare_s, 1),
        "pipeline_over_bare": round((run.embedded / pipeline_s) / (len(texts) / bare_s), 3),
    }
    for key, value in result.items():
        print(f"{key:<24} {value}")
    print(f"\npipeline throughput is {result['pipeline_over_bare']:.0%} of the bare model "
          "(target >= 90%)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
