"""Access control over a real server: two teams, one repository each, read, write and admin
tokens in each; visibility compiled into the queries, roles, allowed roots.

The API runs on a real uvicorn server over the test Postgres and Redis; REST is called
with httpx and MCP with the official client over streamable HTTP.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
import redis
from mcp import Client

from codenav import repos
from codenav.config import Settings
from codenav.index import reconcile
from codenav.jobs import coordination
from codenav_cli.stores import EmbeddedPostgres, EmbeddedRedis
from tests.conftest import TEMPLATE_DB
from tests.teamkit import ALPHA_FILE_COUNT, ALPHA_FILES, ALPHA_MARKERS, Teams, two_teams

BETA = ("beta-read", "beta-write", "beta-admin")


@pytest.fixture(scope="module")
def teams(pg: EmbeddedPostgres, redis_server: EmbeddedRedis) -> Iterator[Teams]:
    redis.Redis.from_url(redis_server.url).flushdb()
    with two_teams(pg, TEMPLATE_DB, redis_server.url) as t:
        yield t


def _scrub(answer: Any, request: dict[str, Any]) -> str:
    """The answer as text, without what the request itself said (echoed queries, names)."""
    text = json.dumps(answer, ensure_ascii=False)
    inputs = sorted((v for v in _strings(request) if len(v) >= 3), key=len, reverse=True)
    for value in inputs:
        text = text.replace(json.dumps(value, ensure_ascii=False)[1:-1], "")
    return text


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _leaks(text: str) -> list[str]:
    found = [m for m in ALPHA_MARKERS if m in text]
    found += re.findall(rf'"(?:files|files_total|total)": {ALPHA_FILE_COUNT}\b', text)
    return found


A_PATHS = sorted(ALPHA_FILES)
A_SYMBOLS = ["AlphaLedgerReconciler", "AlphaLedgerReconciler.alpha_settle_invoice",
             "alpha_exchange_rate", "AlphaQuarterReport", "AlphaLedgerBase", "alpha_batch_job_07"]
WORDS = ["reconcile invoice ledger", "settle invoice", "exchange rate currency",
         "cart checkout", "AlphaLedgerReconciler", "alpha_settle_invoice", "quarter report",
         "runbook nightly", "ledger_alpha core", "ShopCart beta_checkout", "alpha ledger",
         "AlphaQuarterSummary alphaAddLine", "alpha batch job", "post entry amount",
         "where are invoices settled against the ledger with an exchange rate"]
REPOS: list[str | None] = [None, "alpha-ledger", "alpha/alpha-ledger", "beta-shop",
                           "default/alpha-ledger", "beta/beta-shop"]


def _requests() -> list[tuple[str, dict[str, Any]]]:
    """Tool calls across every query tool, with team alpha's names, paths and words."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for repo, words, mode in itertools.product(REPOS, WORDS, ("lexical", "hybrid", "semantic")):
        calls.append(("search", {"query": words, "repo": repo, "mode": mode}))
        calls.append(("find_files", {"query": words, "repo": repo, "mode": mode}))
    for repo, path in itertools.product(REPOS, A_PATHS[:8] + ["shop/cart.py"]):
        calls.append(("outline", {"path": path, "repo": repo}))
        calls.append(("read", {"path": path, "repo": repo}))
        calls.append(("dependencies", {"path": path, "repo": repo}))
        calls.append(("impact", {"symbol_or_path": path, "repo": repo}))
        calls.append(("skeleton", {"path": path.rsplit("/", 1)[0], "repo": repo}))
    for repo, symbol in itertools.product(REPOS, A_SYMBOLS + ["ShopCart"]):
        calls.append(("read", {"symbol": symbol, "repo": repo}))
        calls.append(("definition", {"symbol": symbol, "repo": repo}))
        calls.append(("references", {"symbol": symbol, "repo": repo}))
        calls.append(("implementations", {"symbol": symbol, "repo": repo}))
        calls.append(("impact", {"symbol_or_path": symbol, "repo": repo}))
        calls.append(("search", {"query": symbol, "repo": repo, "path": "ledger_alpha/**"}))
    for repo in REPOS:
        calls.append(("status", {"repo": repo}))
        calls.append(("skeleton", {"repo": repo}))
        # grep: alpha's own strings, regexes over them, and patterns both teams' code holds
        for marker in ALPHA_MARKERS:
            calls.append(("grep", {"pattern": marker, "repo": repo}))
        for pattern in (r"alpha\w*", r"def \w+\(", r"class \w+", "invoice", "return"):
            calls.append(("grep", {"pattern": pattern, "regex": True, "repo": repo,
                                   "context": 2}))
        calls.append(("grep", {"pattern": "ledger", "path": "ledger_alpha/**", "repo": repo}))
    return calls


def test_team_b_tokens_see_no_row_path_or_count_of_team_a_in_over_1000_queries(
        teams: Teams) -> None:
    calls = _requests()
    leaks: list[str] = []
    answered = 0
    with httpx.Client(base_url=teams.url, timeout=60) as http:
        for i, (tool, args) in enumerate(calls):
            who = BETA[i % len(BETA)]
            body = {k: v for k, v in args.items() if v is not None}
            r = http.post(f"/v1/{tool}", json=body, headers=teams.headers(who))
            assert r.status_code in (200, 400, 404), (tool, body, r.status_code, r.text)
            answered += r.status_code == 200
            found = _leaks(_scrub(r.json(), body))
            if found:
                leaks.append(f"{who} {tool} {body}: {found}")
        for who in BETA:  # the lists: repositories, one status for everything
            listed = http.get("/v1/repos", headers=teams.headers(who)).json()
            assert [r["name"] for r in listed["repos"]] == ["beta-shop"]
            status = http.post("/v1/status", json={}, headers=teams.headers(who)).json()
            assert [r["name"] for r in status["repos"]] == ["beta-shop"]
            leaks += [f"{who} status: {f}" for f in _leaks(json.dumps(status))]
    assert len(calls) >= 1000
    assert answered > 300  # most calls are about beta's own repository, and answer
    assert not leaks, "\n".join(leaks[:20])
    # the same tokens do see their own team's repository
    with httpx.Client(base_url=teams.url) as http:
        own = http.post("/v1/search", json={"query": "beta_checkout"},
                        headers=teams.headers("beta-read")).json()
        assert own["results"][0]["path"] == "shop/cart.py"
        theirs = http.post("/v1/search", json={"query": "alpha_settle_invoice"},
                           headers=teams.headers("alpha-read")).json()
        assert theirs["results"][0]["path"] == "ledger_alpha/core.py"
        # (the leak check is not vacuous: team alpha's own answer is full of its markers)
        assert _leaks(_scrub(theirs, {"query": "alpha_settle_invoice"}))


def test_team_b_tokens_over_mcp_see_nothing_of_team_a(teams: Teams) -> None:
    calls = _requests()[::7]
    leaks: list[str] = []

    async def go(who: str, batch: list[tuple[str, dict[str, Any]]]) -> None:
        from mcp.client.streamable_http import streamable_http_client

        http = httpx.AsyncClient(headers=teams.headers(who), timeout=60)
        async with Client(streamable_http_client(f"{teams.url}/mcp", http_client=http)) as c:
            for tool, args in batch:
                body = {k: v for k, v in args.items() if v is not None}
                result = await c.call_tool(tool, body)
                payload = result.structured_content if not result.is_error else \
                    [getattr(part, "text", "") for part in result.content]
                found = _leaks(_scrub(payload, body))
                if found:
                    leaks.append(f"{who} {tool} {body}: {found}")
        await http.aclose()

    for i, who in enumerate(BETA):
        anyio.run(go, who, calls[i::3])
    assert len(calls) > 100
    assert not leaks, "\n".join(leaks[:20])


def test_another_teams_repository_is_answered_like_one_that_does_not_exist(
        teams: Teams) -> None:
    with httpx.Client(base_url=teams.url) as http:
        for tool, args in (("search", {"query": "ledger"}), ("outline", {"path": "a.py"}),
                           ("status", {}), ("references", {"symbol": "x"})):
            theirs = http.post(f"/v1/{tool}", json={**args, "repo": "alpha-ledger"},
                               headers=teams.headers("beta-read"))
            nothing = http.post(f"/v1/{tool}", json={**args, "repo": "no-such-ledger"},
                                headers=teams.headers("beta-read"))
            assert theirs.status_code == nothing.status_code == 404
            assert theirs.json() == json.loads(nothing.text.replace("no-such-ledger",
                                                                    "alpha-ledger"))
            assert theirs.json()["hint"] == "registered repositories: beta-shop"
        gone = http.delete("/v1/repos/alpha-ledger", headers=teams.headers("beta-admin"))
        missing = http.delete("/v1/repos/no-such-ledger", headers=teams.headers("beta-admin"))
        assert gone.status_code == missing.status_code == 404
        assert gone.json() == json.loads(missing.text.replace("no-such-ledger", "alpha-ledger"))
        # a job of team alpha's repository is a job that does not exist
        job = f"full-{teams.alpha_id}-0123456789ab"
        fake = f"full-{teams.beta_id + 1000}-0123456789ab"
        r1 = http.get(f"/v1/jobs/{job}", headers=teams.headers("beta-admin"))
        r2 = http.get(f"/v1/jobs/{fake}", headers=teams.headers("beta-admin"))
        assert r1.status_code == r2.status_code == 404
        assert r1.json() == json.loads(r2.text.replace(fake, job))
        # another team's refs are refs of a repository that does not exist
        for method, tail, body in (("GET", "/refs", None), ("POST", "/refs", {"refs": ["main"]}),
                                   ("DELETE", "/refs/main", None)):
            theirs = http.request(method, f"/v1/repos/alpha-ledger{tail}", json=body,
                                  headers=teams.headers("beta-write"))
            nothing = http.request(method, f"/v1/repos/no-such-ledger{tail}", json=body,
                                   headers=teams.headers("beta-write"))
            assert theirs.status_code == nothing.status_code == 404, (method, theirs.text)
            assert theirs.json() == json.loads(nothing.text.replace("no-such-ledger",
                                                                    "alpha-ledger"))
        # publishing under another team's repository name is about this team's own name
        state = http.post("/v1/publish/state", json={"repo": "alpha-ledger", "ref": "main",
                                                    "commit": "0" * 40},
                          headers=teams.headers("beta-write"))
        assert state.status_code == 200 and state.json()["exists"] is False
        # and another team's token id is a token that does not exist
        other = http.delete(f"/v1/tokens/{teams.token_ids['alpha-read']}",
                            headers=teams.headers("beta-admin"))
        none = http.delete("/v1/tokens/999999", headers=teams.headers("beta-admin"))
        assert other.status_code == none.status_code == 404
        assert other.json() == json.loads(none.text.replace(
            "999999", str(teams.token_ids["alpha-read"])))


def test_a_token_limited_to_repositories_sees_only_those(teams: Teams) -> None:
    with httpx.Client(base_url=teams.url) as http:
        listed = http.get("/v1/repos", headers=teams.headers("alpha-limited")).json()
        assert [r["name"] for r in listed["repos"]] == ["alpha-ledger"]
        hit = http.post("/v1/search", json={"query": "alpha_exchange_rate"},
                        headers=teams.headers("alpha-limited")).json()
        assert hit["results"][0]["path"] == "ledger_alpha/rates.py"


def test_a_read_token_cannot_register_reindex_delete_or_administer(teams: Teams) -> None:
    new_root = teams.allowed / "read-attempt"
    new_root.mkdir(exist_ok=True)
    with httpx.Client(base_url=teams.url) as http:
        for method, path, body in (
                ("POST", "/v1/repos", {"root": str(new_root)}),
                ("POST", "/v1/reindex", {}),
                ("POST", "/v1/reindex", {"paths": ["shop/cart.py"]}),
                ("DELETE", "/v1/repos/beta-shop", None),
                ("POST", "/v1/tokens", {"name": "x", "role": "read"}),
                ("GET", "/v1/tokens", None), ("DELETE", "/v1/tokens/1", None),
                ("GET", "/v1/teams", None), ("GET", "/v1/audit", None),
                ("POST", "/v1/repos/beta-shop/refs", {"refs": ["main"]}),
                ("DELETE", "/v1/repos/beta-shop/refs/main", None),
                ("POST", "/v1/publish/state", {"repo": "beta-shop", "ref": "main",
                                               "commit": "0" * 40}),
                ("POST", "/v1/publish/missing", {"repo": "beta-shop", "contents": []}),
                ("POST", "/v1/publish/commit", {"repo": "beta-shop"})):
            r = http.request(method, path, json=body, headers=teams.headers("beta-read"))
            assert r.status_code == 403, (method, path, r.text)
            assert r.json()["error"] == "forbidden"
            assert "this one is read" in r.json()["message"]
        r = http.request("DELETE", "/v1/repos/beta-shop", headers=teams.headers("beta-write"))
        assert r.status_code == 403 and "needs an admin token" in r.json()["message"]
        r = http.post("/v1/tokens", json={"name": "x", "role": "read"},
                      headers=teams.headers("beta-write"))
        assert r.status_code == 403
        # the write token can reindex its own team's repository
        r = http.post("/v1/reindex", json={}, headers=teams.headers("beta-write"))
        assert r.status_code == 200 and r.json()["job_id"].startswith(f"full-{teams.beta_id}-")
    with psycopg.connect(teams.database_url) as conn:
        assert conn.execute("SELECT count(*) FROM repos WHERE root = %s",
                            (str(new_root),)).fetchone() == (0,)

    async def over_mcp() -> None:
        from mcp.client.streamable_http import streamable_http_client

        http = httpx.AsyncClient(headers=teams.headers("beta-read"))
        async with Client(streamable_http_client(f"{teams.url}/mcp", http_client=http)) as c:
            result = await c.call_tool("reindex", {})
            assert result.is_error
            assert "reindex needs a write token" in result.content[0].text  # type: ignore[union-attr]
            ok = await c.call_tool("status", {})
            assert not ok.is_error
        await http.aclose()

    anyio.run(over_mcp)


def test_a_write_token_cannot_register_system_dirs_the_stack_home_or_links_out(
        teams: Teams) -> None:
    inside = teams.allowed / "links"
    inside.mkdir(exist_ok=True)
    (inside / "to-etc").unlink(missing_ok=True)
    (inside / "to-etc").symlink_to("/etc")
    (inside / "to-outside").unlink(missing_ok=True)
    (inside / "to-outside").symlink_to(teams.outside)
    home = teams.settings.home_path
    home.mkdir(parents=True, exist_ok=True)
    refused = {
        "/etc": "system directory", "/": "file system root", "/etc/../etc/ssl": "system",
        "/proc/self": "system directory", "/var/lib": "system directory",
        str(home): "own state", str(home / "pgdata"): "own state",
        str(inside / "to-etc"): "system directory",
        str(inside / "to-outside"): "CODENAV_ALLOWED_ROOTS",
        str(teams.allowed / ".." / "outside"): "CODENAV_ALLOWED_ROOTS",
        str(teams.outside): "CODENAV_ALLOWED_ROOTS",
        "relative/path": "absolute",
    }
    with httpx.Client(base_url=teams.url) as http:
        for root, why in refused.items():
            r = http.post("/v1/repos", json={"root": root, "name": "attempt"},
                          headers=teams.headers("beta-write"))
            assert r.status_code in (400, 403), (root, r.text)
            assert why in r.json()["message"], (root, r.json())
        allowed = teams.allowed / "fine-repo"
        allowed.mkdir(exist_ok=True)
        ok = http.post("/v1/repos", json={"root": str(allowed), "index": False},
                       headers=teams.headers("beta-write"))
        assert ok.status_code == 200, ok.text
        assert ok.json()["repo"]["team"] == "beta" and "job_id" not in ok.json()
    with psycopg.connect(teams.database_url) as conn:
        roots = {r[0] for r in conn.execute("SELECT root FROM repos").fetchall()}
    assert roots == {str(teams.alpha_root), str(teams.beta_root), str(allowed)}


def test_the_worker_refuses_a_root_that_is_not_allowed_on_its_own_disk(
        teams: Teams, tmp_path: Path) -> None:
    """A root registered around the API, or a directory swapped for a link since, is
    never walked: the run is recorded as refused, nothing is indexed."""
    swap = teams.allowed / "swapped"
    swap.mkdir(exist_ok=True)
    (swap / "ok.py").write_text("def fine():\n    return 1\n")
    with psycopg.connect(teams.database_url, autocommit=True) as conn:
        beta = repos.team_id(conn, "beta")
        etc = repos.register(conn, "/etc", "etc-direct", beta)
        swapped = repos.register(conn, str(swap), "swapped", beta)
        assert reconcile.reconcile(teams.settings, swapped.id).files_total == 1
        (swap / "ok.py").unlink()
        swap.rmdir()
        swap.symlink_to("/etc")
        for repo in (etc, swapped):
            summary = reconcile.reconcile(teams.settings, repo.id)
            assert "system directory" in summary.refused
            run = conn.execute("SELECT state, phase, error FROM index_runs WHERE repo_id = %s "
                               "ORDER BY id DESC LIMIT 1", (repo.id,)).fetchone()
            assert run is not None and run[:2] == ("failed", "refused")
            assert "system directory" in run[2]
        files = conn.execute("SELECT count(*) FROM files WHERE repo_id = %s",
                             (etc.id,)).fetchone()
        assert files == (0,)
        conn.execute("DELETE FROM repos WHERE id = ANY(%s)", ([etc.id, swapped.id],))
    swap.unlink()


def test_a_repository_registered_without_indexing_is_indexed_by_nothing_until_asked(
        teams: Teams) -> None:
    root = teams.allowed / "later"
    root.mkdir(exist_ok=True)
    (root / "later.py").write_text("def later_function():\n    return 2\n")
    with httpx.Client(base_url=teams.url) as http:
        made = http.post("/v1/repos", json={"root": str(root), "index": False},
                         headers=teams.headers("beta-write")).json()
        repo_id = made["repo"]["id"]
        assert made["repo"]["indexing"] is False
        # the watcher leaves it alone, and a job that reaches a worker does nothing
        from codenav_watcher.__main__ import Sidecar

        sidecar = Sidecar(teams.settings)
        anyio.run(sidecar.tick)
        assert repo_id not in sidecar.watches and teams.beta_id in sidecar.watches
        for repo_id_watched in list(sidecar.watches):
            sidecar._stop_watch(repo_id_watched)
            coordination.release_leadership(sidecar.redis, repo_id_watched, sidecar.me)
        assert "indexing is off" in reconcile.reconcile(teams.settings, repo_id).refused
        status = http.post("/v1/status", json={"repo": "later"},
                           headers=teams.headers("beta-read")).json()["repos"][0]
        assert status["files"] == 0 and status["index_status"] == "not_indexed"
        # asking for it turns indexing on
        asked = http.post("/v1/reindex", json={"repo": "later"},
                          headers=teams.headers("beta-write"))
        assert asked.status_code == 200
    assert reconcile.reconcile(teams.settings, repo_id).files_total == 1


def test_admin_actions_are_audited_and_the_cli_administers_a_remote_server(
        teams: Teams, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_URL": teams.url, "CODENAV_TOKEN": teams.tokens["beta-admin"],
                "CODENAV_HOME": str(tmp_path / "no-stack")})
    codenav = str(Path(sys.executable).with_name("codenav"))

    def cli(*args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        run_env = dict(env, CODENAV_TOKEN=token) if token else env
        return subprocess.run([codenav, *args], env=run_env, capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)

    made = cli("token", "create", "--name", "ci-bot", "--role", "write",
               "--repos", "beta-shop", "--expires", "30d")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("cnv_") and "write in team beta" in made.stderr
    with httpx.Client(base_url=teams.url) as http:
        r = http.post("/v1/search", json={"query": "beta_checkout"},
                      headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200
    listed = cli("token", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "\tci-bot\t" in line)
    token_id = row.split("\t")[0]
    assert "\twrite\tbeta\tbeta-shop\tactive\t" in row
    assert "alpha" not in listed.stdout
    new_team = cli("token", "create", "--name", "gamma-first", "--role", "admin",
                   "--team", "gamma")
    assert new_team.returncode == 0 and "(new team)" in new_team.stderr
    taken = cli("token", "create", "--name", "into-alpha", "--role", "read", "--team", "alpha")
    assert taken.returncode == 1 and "already exists" in taken.stderr
    teams_out = cli("team", "list")
    assert teams_out.returncode == 0 and "beta (yours)" in teams_out.stdout
    assert "gamma" in teams_out.stdout and "alpha" not in teams_out.stdout
    revoked = cli("token", "revoke", token_id)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    denied = cli("token", "list", token=teams.tokens["beta-read"])
    assert denied.returncode == 1 and "needs an admin token" in denied.stderr
    assert "Traceback" not in denied.stderr
    audit = cli("audit")
    assert audit.returncode == 0, audit.stderr
    actions = [line.split("\t")[3:5] for line in audit.stdout.splitlines()]
    assert ["token.revoke", f"token {token_id} (ci-bot)"] in actions
    assert ["token.create", f"token {token_id} (ci-bot)"] in actions
    assert ["team.create", "gamma"] in actions
    assert all("beta-admin (token" in line for line in audit.stdout.splitlines()
               if "token." in line or "team." in line)
    assert "alpha" not in audit.stdout  # another team's trail is its own
    gone = cli("repo", "rm", "beta-shop", token=teams.tokens["beta-write"])
    assert gone.returncode == 1 and "needs an admin token" in gone.stderr
    with psycopg.connect(teams.database_url) as conn:
        row2 = conn.execute("SELECT actor, action FROM audit_log WHERE action = 'repo.register' "
                            "ORDER BY id LIMIT 1").fetchone()
    assert row2 is not None and row2[0].startswith("beta-write (token ")


def test_settings_name_the_allowed_roots_and_the_docs_switch(tmp_path: Path) -> None:
    s = Settings.load(env={"CODENAV_ALLOWED_ROOTS": "/srv/a, /srv/b", "CODENAV_OPEN_DOCS": "no"},
                      dotenv=Path("/nonexistent"))
    assert s.allowed_roots == ("/srv/a", "/srv/b") and s.open_docs is False
    from codenav.errors import ConfigError

    with pytest.raises(ConfigError):
        Settings.load(env={"CODENAV_OPEN_DOCS": "maybe"}, dotenv=Path("/nonexistent"))


def test_every_route_and_tool_names_its_action_in_the_one_role_table() -> None:
    from fastapi.routing import APIRoute

    from codenav.roles import REQUIRED
    from codenav.tools import TOOL_NAMES
    from codenav_api.routes import admin, publish, repos, tools, usage

    actions = {}
    for module in (tools, repos, admin, publish):
        for route in module.router.routes:
            assert isinstance(route, APIRoute)
            named = [getattr(d.call, "action", None) for d in route.dependant.dependencies]
            named = [a for a in named if a]
            assert len(named) == 1, f"{route.methods} {route.path} declares {named}"
            actions[f"{sorted(route.methods)[0]} {route.path}"] = named[0]
    # repos: 3, refs: 3, jobs: 1, tokens: 3, teams, audit, snapshot: export and import,
    # publish: state, missing, contents, commit
    assert len(actions) == len(TOOL_NAMES) + 18
    assert {a for r, a in actions.items() if "/publish/" in r} == {"publish"}
    assert REQUIRED["publish"] == REQUIRED["ref.index"] == REQUIRED["ref.delete"] == "write"
    assert actions["GET /v1/snapshot"] == "snapshot.export"
    assert actions["POST /v1/snapshot"] == "snapshot.import"
    assert REQUIRED["snapshot.export"] == REQUIRED["snapshot.import"] == "admin"
    # usage figures need a token of any role; /metrics an admin's (or CODENAV_METRICS_OPEN)
    stats_route = next(r for r in usage.router.routes
                       if isinstance(r, APIRoute) and r.path == "/v1/stats")
    assert [getattr(d.call, "action", None) for d in stats_route.dependant.dependencies] == \
        [None, "stats"]
    assert REQUIRED["stats"] == "read" and REQUIRED["metrics"] == "admin"
    assert set(actions.values()) <= set(REQUIRED)
    assert set(TOOL_NAMES) <= set(REQUIRED)
    assert actions["DELETE /v1/repos/{name}"] == "repo.delete"
    assert REQUIRED["repo.delete"] == REQUIRED["token.create"] == "admin"
    assert REQUIRED["reindex"] == REQUIRED["repo.register"] == "write"
    assert {REQUIRED[t] for t in TOOL_NAMES if t != "reindex"} == {"read"}
