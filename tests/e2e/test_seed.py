"""Starting from a seed: `codenav up --seed FILE --repo PATH` on an empty home, as a user
starts it, answers a hybrid query from the snapshot before any index run (here with no
index worker at all); restarted with a worker, the first reconcile of a checkout whose
every mtime differs from the seed's re-reads the files and parses none of them."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from codenav import admin, repos
from codenav.access import Caller
from codenav.config import Settings
from codenav.embed import vectors
from codenav.embed.client import EmbedClient
from codenav.index import reconcile
from codenav_cli.stores import EmbeddedPostgres
from tests.conftest import ALLOWED_ROOTS, FIXTURES, TEMPLATE_DB
from tests.e2e.stackkit import ctrl_c, settled, start_stack, state_home
from tests.embedkit import start_embedder, stop
from tests.teamkit import database


@pytest.fixture
def seed(pg: EmbeddedPostgres, redis_url: str) -> Iterator[tuple[Path, Path]]:
    """(snapshot file, the checkout it was made from): the python fixture indexed with its
    graph and embedded by the real embedder, in a store of its own, then exported."""
    base = Path(tempfile.mkdtemp(prefix="codenav-seed-"))
    root = base / "made-here" / "shop"
    shutil.copytree(FIXTURES / "graph" / "python", root,
                    ignore=shutil.ignore_patterns("expected.json"))
    proc, embed_url = start_embedder()
    try:
        with database(pg, TEMPLATE_DB) as url:
            settings = Settings.load(env={"CODENAV_DATABASE_URL": url,
                                          "CODENAV_REDIS_URL": redis_url,
                                          "CODENAV_HOME": str(base / "home"),
                                          "CODENAV_EMBED_URL": embed_url,
                                          "CODENAV_ALLOWED_ROOTS": ALLOWED_ROOTS},
                                     dotenv=Path("/nonexistent"))
            with psycopg.connect(url, autocommit=True) as conn:
                repo = repos.register(conn, str(root), "shop")
                reconcile.reconcile(settings, repo.id)
                client = EmbedClient.from_settings(settings)
                assert client is not None
                try:
                    assert vectors.embed_backlog(conn, client, repo.id,
                                                    budget_s=300).remaining == 0
                finally:
                    client.close()
                admin.snapshot_export(conn, Caller.operator(), base / "shop.snap")
        yield base / "shop.snap", root
    finally:
        stop(proc)
        shutil.rmtree(base, ignore_errors=True)


def _post(home: Path, route: str, body: dict[str, Any]) -> dict[str, Any]:
    info = json.loads((home / "stack.json").read_text())
    response = httpx.post(f"{info['url']}{route}", json=body, timeout=30,
                          headers={"Authorization": f"Bearer {info['token']}"})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def _runs(home: Path) -> list[tuple[str, int, int]]:
    info = json.loads((home / "stack.json").read_text())
    with psycopg.connect(info["database_url"]) as conn:
        rows = conn.execute("SELECT state, files_total, files_parsed FROM index_runs "
                            "ORDER BY id").fetchall()
    return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]


def test_up_with_a_seed_answers_a_hybrid_query_before_any_index_run(
        seed: tuple[Path, Path], tmp_path: Path) -> None:
    snap, made_from = seed
    here = Path(tempfile.mkdtemp(prefix="codenav-checkout-")) / "shop"
    # another machine's checkout: the same files, every mtime different
    shutil.copytree(made_from, here, copy_function=shutil.copy)
    time.sleep(0.01)
    for path in here.rglob("*.py"):
        path.touch()
    try:
        with state_home() as home:
            stack = start_stack(["--seed", str(snap), "--repo", str(here), "--workers", "0",
                                 "--no-wait"], home, tmp_path / "up.log")
            try:
                log = stack.log.read_text(errors="replace")
                assert f"seeded default/shop at {here}" in log, log[-3000:]
                answer: dict[str, Any] = {}
                deadline = time.monotonic() + 60  # the first query vectors may be slow
                while time.monotonic() < deadline:
                    answer = _post(home, "/v1/search", {"query": "register a user and "
                                                        "notify it", "mode": "hybrid"})
                    if "note" not in answer:
                        break
                    time.sleep(0.5)
                assert "note" not in answer, answer.get("note")
                top = [(r["path"], r["symbol"]) for r in answer["results"][:3]]
                assert ("app/service.py", "register") in top, top
                semantic = _post(home, "/v1/search", {"query": "greeting someone by name",
                                                      "mode": "semantic"})
                assert semantic["results"] and "note" not in semantic
                refs = _post(home, "/v1/references", {"symbol": "User.greet"})
                assert refs["verified"], refs
                assert [r for r in _runs(home) if r[0] == "done"] == []  # nothing indexed
            finally:
                ctrl_c(stack)
            assert stack.proc.returncode == 0
            # with a worker: the seed is not imported again, and the first reconcile of
            # files whose mtimes all differ re-reads them but parses nothing
            again = start_stack(["--seed", str(snap), "--repo", str(here)], home,
                                tmp_path / "up2.log")
            try:
                log = again.log.read_text(errors="replace")
                assert "seed shop.snap skipped: the store already holds default/shop" in log
                done = [r for r in _runs(home) if r[0] == "done"]
                files = len(list(here.rglob("*.py")))
                assert done and done[-1][1] >= files and done[-1][2] == 0, done
                answer = _post(home, "/v1/search", {"query": "quick_register"})
                assert answer["results"][0]["symbol"] == "quick_register"
            finally:
                ctrl_c(again)
    finally:
        shutil.rmtree(here.parent, ignore_errors=True)


def _answers(home: Path) -> list[Any]:
    """What a set of queries across the tools answers (without the parts that name when)."""
    out: list[Any] = []
    for route, body in (("/v1/search", {"query": "register a user", "mode": "lexical"}),
                        ("/v1/search", {"query": "register a user and notify it",
                                        "mode": "hybrid"}),
                        ("/v1/find_files", {"query": "user service"}),
                        ("/v1/references", {"symbol": "User.greet"}),
                        ("/v1/outline", {"path": "app/service.py"})):
        data = _post(home, route, body)
        deadline = time.monotonic() + 60  # a hybrid answer waits for the query's vector
        while body.get("mode") == "hybrid" and "note" in data and time.monotonic() < deadline:
            time.sleep(0.5)
            data = _post(home, route, body)
        for key in ("ref", "_stats", "usage", "freshness"):
            data.pop(key, None)
        out.append(data)
    return out


def test_a_physical_seed_starts_an_empty_home_with_the_same_answers_and_no_credential(
        tmp_path: Path) -> None:
    """`codenav up` indexes and embeds a checkout; stopped, `codenav snapshot export
    --physical` copies its store; `codenav up --seed` on another home answers exactly as
    the first did, before any index run, and the first store's tokens do not work there.
    A truncated or corrupted seed is refused and leaves the home without a store."""
    import os
    import subprocess

    from tests.e2e.stackkit import CODENAV

    base = Path(tempfile.mkdtemp(prefix="codenav-pseed-"))
    made = base / "ci" / "shop"
    here = base / "dev" / "shop"
    for root in (made, here):
        shutil.copytree(FIXTURES / "graph" / "python", root,
                        ignore=shutil.ignore_patterns("expected.json"))
    seed = base / "shop.seed"
    try:
        with state_home() as home_a, state_home() as home_b, state_home() as home_c:
            first = start_stack(["--repo", str(made)], home_a, tmp_path / "a.log")
            try:
                info = json.loads((home_a / "stack.json").read_text())
                deadline = time.monotonic() + 300
                with psycopg.connect(info["database_url"]) as conn:
                    while conn.execute("SELECT count(*) FROM chunk_texts ct WHERE NOT "
                                       "EXISTS (SELECT 1 FROM embeddings e WHERE "
                                       "e.text_hash = ct.text_hash)").fetchone() != (0,) \
                            or conn.execute("SELECT count(*) FROM embeddings").fetchone() \
                            == (0,):
                        assert time.monotonic() < deadline, "embedding did not finish"
                        time.sleep(0.5)
                # the answers to compare with are a settled store's: the graph build can
                # still run once every chunk is embedded, and the watcher asks for a
                # reconcile once its watch is up (an answer says "updating" meanwhile)
                settled(home_a, max(deadline - time.monotonic(), 1.0))
                expected = _answers(home_a)
                assert not any("index_status" in a for a in expected), expected
            finally:
                ctrl_c(first)
            env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
            done = subprocess.run([CODENAV, "snapshot", "export", "--physical", str(seed)],
                                  env={**env, "CODENAV_HOME": str(home_a)},
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr
            assert "exported the store of" in done.stdout and "default/shop" in done.stdout
            # bad seeds: refused with the reason, and no store is made
            data = seed.read_bytes()
            truncated, flipped = base / "truncated.seed", base / "flipped.seed"
            truncated.write_bytes(data[:len(data) // 2])
            middle = len(data) // 2
            flipped.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) +
                                data[middle + 1:])
            for bad in (truncated, flipped):
                refused = subprocess.run([CODENAV, "up", "--seed", str(bad), "--repo",
                                          str(here), "--port", "0"],
                                         env={**env, "CODENAV_HOME": str(home_c)},
                                         capture_output=True, text=True, timeout=120)
                assert refused.returncode != 0
                assert "truncated" in refused.stderr or "corrupted" in refused.stderr, \
                    refused.stderr[-2000:]
                assert not (home_c / "pgdata" / "PG_VERSION").exists()
            merged = subprocess.run([CODENAV, "snapshot", "import", str(seed)],
                                    env={**env, "CODENAV_HOME": str(home_c)},
                                    capture_output=True, text=True, timeout=60)
            assert merged.returncode != 0 and "is a physical seed" in merged.stderr
            # the seed: the same answers on another home, before any index run
            second = start_stack(["--seed", str(seed), "--repo", str(here), "--workers", "0",
                                  "--no-wait"], home_b, tmp_path / "b.log")
            try:
                log = second.log.read_text(errors="replace")
                assert "seeded the store from shop.seed (default/shop;" in log, log[-3000:]
                for got, want in zip(_answers(home_b), expected, strict=True):
                    assert got == want, {k: (got.get(k), want.get(k)) for k in {*got, *want}
                                         if got.get(k) != want.get(k)}
                assert [r for r in _runs(home_b) if r[0] == "done"] == _runs(home_b)
                stale = httpx.post(f"{json.loads((home_b / 'stack.json').read_text())['url']}"
                                   "/v1/search", json={"query": "register"}, timeout=30,
                                   headers={"Authorization": f"Bearer {info['token']}"})
                assert stale.status_code == 401  # the seed's own stack token is revoked
                hba = (home_b / "pgdata" / "pg_hba.conf").read_text()
                rules = [line for line in hba.splitlines() if line.split("#")[0].strip()]
                assert rules and not any("trust" in line for line in rules), rules
                assert not (home_b / "pgdata" / "codenav_seeded").exists()
            finally:
                ctrl_c(second)
            assert second.proc.returncode == 0
            again = start_stack(["--seed", str(seed), "--repo", str(here), "--workers", "0",
                                 "--no-wait"], home_b, tmp_path / "b2.log")
            try:
                assert "skipped: this home has a store already" in \
                    again.log.read_text(errors="replace")
            finally:
                ctrl_c(again)
    finally:
        shutil.rmtree(base, ignore_errors=True)
