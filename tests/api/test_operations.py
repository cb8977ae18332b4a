"""The operator's view and the token economy: /metrics (Prometheus text, protected, moving
with queries), usage figures recorded per tool and day and scoped to the caller's team,
JSON logs from a real service process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
import redis
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from codenav import repos, usage
from codenav.access import Caller, resolve
from codenav.auth import create_token
from codenav.config import Settings
from codenav.index import reconcile
from codenav.jobs import enqueue
from codenav_cli.stores import EmbeddedPostgres, EmbeddedRedis
from tests.conftest import NO_RATE_LIMIT, TEMPLATE_DB
from tests.polyglot import make_polyglot
from tests.teamkit import Teams, two_teams


@pytest.fixture
def indexed(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> repos.Repo:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    return repo


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition, by name and labels."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_need_an_admin_token_parse_and_move_after_a_query(
        client: TestClient, conn: psycopg.Connection, indexed: repos.Repo,
        settings: Settings) -> None:
    read_token, _ = create_token(conn, "reader", "read")
    assert client.get("/metrics", headers={"Authorization": ""}).status_code == 401
    refused = client.get("/metrics", headers={"Authorization": f"Bearer {read_token}"})
    assert refused.status_code == 403 and "admin" in refused.json()["message"]
    before = _samples(client.get("/metrics").text)
    assert client.post("/v1/grep", json={"pattern": "TokenStore"}).status_code == 200
    assert client.post("/v1/grep", json={"pattern": "zyzzyva-nowhere"}).status_code == 200
    assert client.post("/v1/read", json={"path": "../etc/passwd"}).status_code == 400
    enqueue.request_paths(redis.Redis.from_url(settings.redis_url), settings, indexed.id,
                        {"src/auth/tokens.py": "changed"})
    page = client.get("/metrics")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    after = _samples(page.text)
    grew = [_value(after, name, **labels) - _value(before, name, **labels)
            for name, labels in [
                ("codenav_tool_calls_total", {"tool": "grep", "outcome": "ok"}),
                ("codenav_tool_calls_total", {"tool": "grep", "outcome": "empty"}),
                ("codenav_tool_calls_total", {"tool": "read", "outcome": "invalid_request"}),
                ("codenav_tool_duration_seconds_count", {"tool": "grep"}),
                ("codenav_http_request_duration_seconds_count",
                 {"route": "/v1/grep", "method": "POST"}),
                ("codenav_http_responses_total",
                 {"route": "/v1/read", "method": "POST", "status": "400"})]]
    assert grew == [1, 1, 1, 2, 2, 1], grew
    repo = {"team": "default", "repo": "polyglot"}
    assert _value(after, "codenav_index_files", **repo) > 5
    assert _value(after, "codenav_index_pending_paths", **repo) == 1
    assert _value(after, "codenav_index_lag_seconds", **repo) >= 0
    assert ("codenav_queue_jobs", (("lane", "index"), ("state", "queued"))) in after
    assert _value(after, "codenav_scrape_errors", source="store") == 0
    assert _value(after, "codenav_scrape_errors", source="queue") == 0


def test_metrics_are_open_without_a_token_only_when_the_setting_says_so(
        settings: Settings) -> None:
    from codenav_api.app import create_app

    open_settings = Settings.load(env={"CODENAV_DATABASE_URL": settings.database_url,
                                       "CODENAV_REDIS_URL": settings.redis_url,
                                       "CODENAV_HOME": settings.home,
                                       "CODENAV_METRICS_OPEN": "true",
                                       "CODENAV_RATE_LIMIT_PER_S": NO_RATE_LIMIT},
                                  dotenv=Path("/nonexistent"))
    with TestClient(create_app(open_settings)) as c:
        page = c.get("/metrics")
        assert page.status_code == 200
        assert "codenav_queue_jobs" in page.text
        assert c.post("/v1/grep", json={"pattern": "x"}).status_code == 401  # tools still not


@pytest.fixture(scope="module")
def teams(pg: EmbeddedPostgres, redis_server: EmbeddedRedis) -> Iterator[Teams]:
    redis.Redis.from_url(redis_server.url).flushdb()
    with two_teams(pg, TEMPLATE_DB, redis_server.url) as t:
        yield t


def test_usage_is_recorded_per_tool_and_day_and_each_team_sees_its_own(teams: Teams) -> None:
    returned = {"grep": 0, "search": 0}
    with httpx.Client(base_url=teams.url, timeout=60) as http:
        for pattern in ("alpha_settle_invoice", "AlphaLedger", "nothing-like-this"):
            body = http.post("/v1/grep", json={"pattern": pattern},
                             headers=teams.headers("alpha-read")).json()
            returned["grep"] += body["_stats"]["tokens_returned"]
        for query in ("settle invoice", "exchange rate"):
            body = http.post("/v1/search", json={"query": query},
                             headers=teams.headers("alpha-write")).json()
            returned["search"] += body["_stats"]["tokens_returned"]
        assert http.post("/v1/grep", json={"pattern": "ShopCart"},
                         headers=teams.headers("beta-read")).status_code == 200
        alpha = http.get("/v1/stats", params={"days": 1},
                         headers=teams.headers("alpha-read")).json()
        beta = http.get("/v1/stats", headers=teams.headers("beta-admin")).json()
        status = http.post("/v1/status", json={}, headers=teams.headers("alpha-admin")).json()
        bad = http.get("/v1/stats", params={"days": 0}, headers=teams.headers("alpha-read"))
    tools = {t["tool"]: t for t in alpha["by_tool"]}
    assert tools["grep"]["calls"] == 3 and tools["grep"]["empty"] == 1
    assert tools["grep"]["tokens_returned"] == returned["grep"]
    assert tools["search"]["calls"] == 2
    assert tools["search"]["tokens_returned"] == returned["search"]
    assert tools["grep"]["tokens_full_files"] > 0
    assert alpha["by_day"][0]["day"] == alpha["since"]
    assert {t["tool"]: t["calls"] for t in beta["by_tool"]} == {"grep": 1}  # only beta's own
    assert "alpha" not in json.dumps(beta)
    assert status["usage"]["by_tool"]["grep"]["calls"] == 3  # the summary in status
    assert status["usage"]["calls"] >= 5
    assert bad.status_code == 400
    # the operator (the CLI on the database) sees every team's figures
    with psycopg.connect(teams.database_url, autocommit=True) as conn:
        everyone = usage.summary(conn, Caller.operator(), 1)
    assert {t["tool"]: t["calls"] for t in everyone["by_tool"]}["grep"] == 4
    # and the CLI prints them as the API gives them
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_URL": teams.url, "CODENAV_TOKEN": teams.tokens["beta-read"],
                "CODENAV_HOME": str(teams.allowed.parent / "cli-home")})
    done = subprocess.run([sys.executable, "-m", "codenav_cli.cli", "stats", "--json"],
                          capture_output=True, text=True, env=env, timeout=60,
                          cwd=teams.allowed.parent)
    assert done.returncode == 0, done.stderr
    assert {t["tool"]: t["calls"] for t in json.loads(done.stdout)["by_tool"]} == {"grep": 1}
    text = subprocess.run([sys.executable, "-m", "codenav_cli.cli", "stats"], capture_output=True,
                          text=True, env=env, timeout=60, cwd=teams.allowed.parent)
    assert "grep: 1 calls" in text.stdout


def test_figures_from_several_processes_add_up_and_a_deleted_repository_takes_its_own(
        conn: psycopg.Connection, indexed: repos.Repo) -> None:
    caller = Caller(1, "t", "read", repos.team_id(conn, "default"), "default")
    answer = {"_stats": {"tokens_returned": 10, "tokens_full_files": 100, "duration_ms": 2.0}}
    first, second = usage.UsageBuffer(), usage.UsageBuffer()
    first.record(caller, indexed.id, "grep", answer)
    second.record(caller, indexed.id, "grep", answer)
    second.record(caller, None, "status", answer)
    assert first.flush(conn) == 1 and second.flush(conn) == 2
    assert first.flush(conn) == 0  # nothing twice
    operator = usage.summary(conn, Caller.operator(), 1)
    grep_row = next(t for t in operator["by_tool"] if t["tool"] == "grep")
    assert (grep_row["calls"], grep_row["tokens_returned"], grep_row["saved"]) == (2, 20, 0.9)
    late = usage.UsageBuffer()
    late.record(caller, indexed.id, "grep", answer)
    repos.delete(conn, resolve(conn, Caller.operator(), "polyglot"))
    assert late.flush(conn) == 0  # written for no repository: dropped, never an error
    left = {t["tool"] for t in usage.summary(conn, Caller.operator(), 1)["by_tool"]}
    assert left == {"status"}


def test_services_log_one_json_object_per_line_when_asked(service_env: dict[str, str],
                                                          tmp_path: Path) -> None:
    env = {**service_env, "CODENAV_LOG_FORMAT": "json"}
    done = subprocess.run([sys.executable, "-m", "codenav_worker", "--burst", "--lane", "index"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert records, "the worker logged nothing"
    assert all({"time", "level", "logger", "message", "service"} <= set(r) for r in records)
    assert {r["service"] for r in records} == {"worker-index"}
    bad = subprocess.run([sys.executable, "-m", "codenav_worker", "--burst"], capture_output=True,
                         text=True, env={**env, "CODENAV_LOG_FORMAT": "xml"}, timeout=60,
                         cwd=tmp_path)
    assert bad.returncode == 1 and "CODENAV_LOG_FORMAT" in bad.stderr


def test_the_dashboard_and_the_documented_queries_use_only_metrics_the_api_exports(
        client: TestClient, indexed: repos.Repo) -> None:
    import re

    client.post("/v1/grep", json={"pattern": "TokenStore"})  # every request metric has a series
    families = {f.name for f in text_string_to_metric_families(client.get("/metrics").text)}
    root = Path(__file__).resolve().parents[2]
    dashboard = json.loads((root / "deploy/grafana/codenav.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    readme = (root / "deploy/README.md").read_text()
    used = set()
    for text in [*exprs, readme]:
        for name in re.findall(r"\bcodenav_[a-z_]+", text):
            used.add(re.sub(r"_(bucket|count|sum|total)$", "", name))
    packages = {"codenav_api", "codenav_worker", "codenav_watcher", "codenav_embedder",
                "codenav_adapter"}  # module names the text mentions, not metrics
    used -= packages
    assert len(exprs) >= 12 and used
    assert used <= families, used - families


SETTLED = """
import gc, json
from fastapi.testclient import TestClient
from codenav import proc
from codenav_api.app import create_app, server_app
before = gc.get_threshold()
with TestClient(create_app()) as c:
    plain = (gc.get_freeze_count(), gc.get_threshold(), c.get("/healthz").status_code)
with TestClient(server_app()) as c:
    served = (gc.get_freeze_count(), gc.get_threshold(), c.get("/healthz").status_code)
print(json.dumps({"before": before, "plain": plain, "served": served,
                  "expected": proc.GC_THRESHOLD}))
"""


def test_the_served_app_settles_its_heap_once_started_and_an_embedded_one_does_not(
        service_env: dict[str, str], tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", SETTLED], env=service_env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["plain"] == [0, got["before"], 200]
    frozen, threshold, status = got["served"]
    assert frozen > 10_000 and threshold == got["expected"] and status == 200
