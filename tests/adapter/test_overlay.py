"""Each developer sees their own edits on top of the shared index: two stdio adapters (the
official MCP client, real processes) on two clones of one published commit; A's added,
edited and deleted files are in A's answers only, marked local, and once A's commit is
published A's overlay is empty and the answers stay the same."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from codenav.auth import create_token
from codenav.config import Settings
from tests.gitkit import ENV, History, commit, git, make_history, write
from tests.teamkit import serve

GIT_ENV = {**os.environ, **ENV}
NEW_MODULE = '''from app.util import helper


def brand_new_overlay_fn(value):
    """Added by developer A, not committed."""
    return helper("new", value)
'''
UTIL_EDIT = '''def helper(key, value):
    return (key, value)


def edited_in_overlay_fn(key):
    """Developer A's edit of util.py."""
    return helper(key, 2)
'''


@pytest.fixture
def server(settings: Settings, service_env: dict[str, str]) -> Iterator[str]:
    """The API, an index worker and an overlay worker, as a team runs them."""
    workers = [subprocess.Popen([sys.executable, "-P", "-m", "codenav_worker", "--lane", lane],
                                env=service_env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for lane in ("index", "overlay")]
    try:
        with serve(settings) as url:
            yield url
    finally:
        for worker in workers:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(30)


def _publish(url: str, token: str, root: Path, cache: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "codenav_cli.cli", "publish", str(root), "--url", url,
         "--token", token, "--repo", "store", "--ref", "main", "--default", "--cache",
         str(cache)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout


def _clone(origin: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True,
                   capture_output=True)
    return dest


class Dev:
    """One developer's adapter session: calls return the structured answer."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def __call__(self, tool: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, result.content
        data: dict[str, Any] = result.structured_content or {}
        data["_text"] = result.content[0].text if result.content else ""
        return data


def _params(url: str, token: str, root: Path, **extra: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_URL": url, "CODENAV_TOKEN": token, "CODENAV_HOME": "/nonexistent",
                **extra})
    return StdioServerParameters(command=sys.executable, args=["-m", "codenav_adapter"],
                                 env=env, cwd=str(root))


def _paths(answer: dict[str, Any]) -> set[str]:
    return {r["path"] for r in answer.get("results") or answer.get("files") or []}


def _refs(answer: dict[str, Any]) -> set[str]:
    return {r["path"] for r in answer.get("verified", []) + answer.get("potential", [])}


def _local(answer: dict[str, Any]) -> set[str]:
    return {r["path"] for r in answer.get("results") or answer.get("files") or []
            if r.get("source") == "local"}


def test_each_developer_sees_their_own_edits_and_a_published_commit_empties_the_overlay(
        server: str, conn: psycopg.Connection, tmp_path: Path) -> None:
    ci, _ = create_token(conn, "ci", "write")
    alice, _ = create_token(conn, "alice", "read")
    bob, _ = create_token(conn, "bob", "read")
    origin: History = make_history(tmp_path / "origin")
    _publish(server, ci, origin.root, tmp_path / "ci-cache")
    a_root = _clone(origin.root, tmp_path / "alice")
    b_root = _clone(origin.root, tmp_path / "bob")
    write(a_root, {"app/new_mod.py": NEW_MODULE, "app/util.py": UTIL_EDIT,
                   "app/legacy.py": None, ".env": "API_TOKEN=sk_live_abcdefghijklmnop1234\n"})
    seen: dict[str, Any] = {}

    async def session() -> None:
        async with Client(_params(server, alice, a_root)) as ca, \
                Client(_params(server, bob, b_root, CODENAV_REPO="store")) as cb:
            a, b = Dev(ca), Dev(cb)
            seen["a_search"] = await a("search", query="brand_new_overlay_fn", mode="lexical")
            seen["a_edit"] = await a("search", query="edited_in_overlay_fn", mode="lexical")
            seen["a_files"] = await a("find_files", query="app", limit=50)
            seen["a_legacy"] = await a("find_files", query="legacy reporting", limit=50)
            seen["a_read"] = await a("read", path="app/new_mod.py")
            seen["a_outline"] = await a("outline", path="app/util.py")
            seen["a_def"] = await a("definition", symbol="brand_new_overlay_fn")
            seen["a_refs"] = await a("references", symbol="helper")
            seen["a_grep"] = await a("grep", pattern="brand_new_overlay_fn|legacy_reporting",
                                     regex=True)
            seen["b_search"] = await b("search", query="brand_new_overlay_fn", mode="lexical")
            seen["b_legacy"] = await b("find_files", query="legacy reporting", limit=50)
            seen["b_outline"] = await b("outline", path="app/util.py")
            seen["b_refs"] = await b("references", symbol="helper")
            seen["b_read_new"] = await cb.call_tool("read", {"path": "app/new_mod.py"})
            seen["a_main"] = await a("search", query="brand_new_overlay_fn", mode="lexical",
                                     ref="main")
            # A commits; CI publishes it: A's overlay empties, the answers stay the same
            (a_root / ".env").unlink()
            commit(a_root, {}, "alice's change")
            _publish(server, ci, a_root, tmp_path / "ci-cache")
            seen["a_after"] = await a("search", query="brand_new_overlay_fn", mode="lexical")
            seen["a_after_refs"] = await a("references", symbol="helper")
            # B, still at the old commit, still answers for it; once B pulls A's commit too
            seen["b_before_pull"] = await b("search", query="brand_new_overlay_fn",
                                            mode="lexical")
            subprocess.run(["git", "-C", str(b_root), "pull", "-q", "--ff-only", str(a_root),
                            "HEAD"], check=True, capture_output=True, env=GIT_ENV)
            seen["b_after"] = await b("search", query="brand_new_overlay_fn", mode="lexical")

    anyio.run(session)
    # A sees all three changes, marked local
    hit = seen["a_search"]["results"][0]
    assert hit["symbol"] == "brand_new_overlay_fn" and hit["source"] == "local"
    assert seen["a_edit"]["results"][0]["path"] == "app/util.py"
    assert seen["a_edit"]["results"][0]["source"] == "local"
    assert "app/new_mod.py" in _paths(seen["a_files"])
    assert "app/new_mod.py" in _local(seen["a_files"])
    assert "app/legacy.py" not in _paths(seen["a_files"]) | _paths(seen["a_legacy"])
    assert "brand_new_overlay_fn" in seen["a_read"]["content"]
    assert seen["a_read"]["source"] == "local"
    outline = str(seen["a_outline"])
    assert "edited_in_overlay_fn" in outline and seen["a_outline"]["source"] == "local"
    assert seen["a_def"]["results"][0]["path"] == "app/new_mod.py"
    assert seen["a_def"]["results"][0]["source"] == "local"
    assert "app/new_mod.py" in _refs(seen["a_refs"])
    grep_paths = {r["path"] for r in seen["a_grep"]["results"]}
    assert "app/new_mod.py" in grep_paths and "app/legacy.py" not in grep_paths
    overlay = seen["a_search"]["ref"]["overlay"]
    assert (overlay["files"], overlay["deleted"]) == (2, 1)  # added and edited; deleted
    assert "local files" in seen["a_search"]["_text"]
    # the secret never left A's machine
    assert conn.execute("SELECT count(*) FROM overlay_files WHERE path = '.env'"
                        ).fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM contents WHERE body LIKE '%%sk_live_%%'"
                        ).fetchone() == (0,)
    # B sees the published commit only
    assert "app/new_mod.py" not in _paths(seen["b_search"])
    assert "app/legacy.py" in _paths(seen["b_legacy"])
    assert "edited_in_overlay_fn" not in str(seen["b_outline"])
    assert "app/new_mod.py" not in _refs(seen["b_refs"])
    assert seen["b_read_new"].is_error
    assert "overlay" not in seen["b_search"]["ref"]
    # a ref named explicitly is answered without the overlay
    assert "app/new_mod.py" not in _paths(seen["a_main"])
    # after the publish: nothing local any more, the same answer
    after = seen["a_after"]
    assert after["results"][0]["symbol"] == "brand_new_overlay_fn"
    assert after["results"][0].get("source") != "local"
    assert after["ref"].get("overlay", {"files": 0})["files"] == 0
    assert "app/new_mod.py" in _refs(seen["a_after_refs"])
    assert "app/new_mod.py" not in _paths(seen["b_before_pull"])
    b_after = seen["b_after"]["results"][0]
    assert b_after["symbol"] == "brand_new_overlay_fn" and b_after.get("source") != "local"
    assert seen["b_after"]["ref"]["commit"] == git(a_root, "rev-parse", "HEAD")


def _rest(url: str, token: str, method: str, path: str, **kw: Any) -> httpx.Response:
    return httpx.request(method, f"{url}{path}", headers={"Authorization": f"Bearer {token}"},
                         timeout=60, **kw)


def test_an_overlay_is_its_tokens_alone_and_checks_what_it_is_sent(
        server: str, conn: psycopg.Connection, tmp_path: Path) -> None:
    ci, _ = create_token(conn, "ci", "write")
    alice, _ = create_token(conn, "alice", "read")
    mallory, _ = create_token(conn, "mallory", "read")
    origin = make_history(tmp_path / "origin")
    _publish(server, ci, origin.root, tmp_path / "ci-cache")
    head = origin.main[-1]
    opened = _rest(server, alice, "POST", "/v1/overlays", json={"commits": [head]})
    assert opened.status_code == 200, opened.text
    oid = opened.json()["overlay"]
    assert opened.json()["base"]["commit"] == head
    data = b"def forged():\n    return 1\n"
    import io
    import tarfile

    from codenav.index.blob import git_blob_sha

    def tar_of(name: str, payload: bytes) -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w:") as tar:
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
        return out.getvalue()

    sha = git_blob_sha(data)
    # a blob must hash to its name
    bad = _rest(server, alice, "POST", f"/v1/overlays/{oid}/blobs",
                content=tar_of("0" * 40, data))
    assert bad.status_code == 400 and "does not hash" in bad.json()["message"]
    # traversal, absolute paths, NUL bytes: refused, nothing recorded
    for path in ("../outside.py", "/etc/passwd", "app/\u0000x.py", "app//x.py"):
        sent = _rest(server, alice, "PUT", f"/v1/overlays/{oid}",
                     json={"files": [[path, sha, len(data)]]})
        assert sent.status_code in (400, 422), (path, sent.text)
    # a blob the server lacks is asked for, then the state is stored
    first = _rest(server, alice, "PUT", f"/v1/overlays/{oid}",
                  json={"files": [["app/forged.py", sha, len(data)]]})
    assert first.json()["missing"] == [sha]
    assert _rest(server, alice, "POST", f"/v1/overlays/{oid}/blobs",
                 content=tar_of(sha, data)).status_code == 200
    stored = _rest(server, alice, "PUT", f"/v1/overlays/{oid}",
                   json={"files": [["app/forged.py", sha, len(data)]]})
    assert stored.status_code == 200 and stored.json()["stored"], stored.text
    found = httpx.post(f"{server}/v1/search", json={"query": "forged", "mode": "lexical"},
                       headers={"X-Codenav-Overlay": oid, "Authorization": f"Bearer {alice}"})
    assert found.json()["results"][0]["source"] == "local"
    # another token: as if it did not exist, and its answers never include it
    for method, path in (("GET", f"/v1/overlays/{oid}/base"), ("DELETE", f"/v1/overlays/{oid}"),
                         ("PUT", f"/v1/overlays/{oid}")):
        other = _rest(server, mallory, method, path, json={"files": []})
        assert other.status_code == 410, (method, other.text)
    peek = httpx.post(f"{server}/v1/search", json={"query": "forged", "mode": "lexical"},
                      headers={"X-Codenav-Overlay": oid, "Authorization": f"Bearer {mallory}"})
    assert peek.status_code == 410
    plain = _rest(server, mallory, "POST", "/v1/search", json={"query": "forged",
                                                               "mode": "lexical"})
    assert not plain.json()["results"]


def test_an_overlay_over_its_limits_answers_from_the_base_and_says_why(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        tmp_path: Path) -> None:
    from dataclasses import replace

    small = replace(settings, overlay_max_files=2)
    worker = subprocess.Popen([sys.executable, "-P", "-m", "codenav_worker", "--lane", "index"],
                              env=service_env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with serve(small) as url:
            ci, _ = create_token(conn, "ci", "write")
            alice, _ = create_token(conn, "alice", "read")
            origin = make_history(tmp_path / "origin")
            _publish(url, ci, origin.root, tmp_path / "ci-cache")
            root = _clone(origin.root, tmp_path / "alice")
            write(root, {f"app/many_{i}.py": f"def overlay_many_{i}():\n    return {i}\n"
                         for i in range(3)})

            async def session() -> dict[str, Any]:
                async with Client(_params(url, alice, root)) as client:
                    return await Dev(client)("search", query="overlay_many_1",
                                             mode="lexical")

            answer = anyio.run(session)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
    assert not {p for p in _paths(answer) if p.startswith("app/many_")}
    assert "more than the 2" in answer["ref"]["overlay"]["over_limit"]
    assert "answers come from the base" in answer["_text"]


def test_a_clone_of_a_checkout_the_local_stack_indexes_gets_its_own_overlay(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        tmp_path: Path) -> None:
    """No CODENAV_URL: the adapter finds the local stack through stack.json. In the checkout
    the stack indexes it sends nothing (the watcher sees those edits); in a clone of it, its
    edits are an overlay on the indexed working tree; a checkout of another project sends
nothing."""
    import json

    from codenav import repos
    from codenav.index.reconcile import reconcile

    origin = make_history(tmp_path / "origin")
    repo = repos.register(conn, str(origin.root), "store")
    reconcile(settings, repo.id)
    mine = _clone(origin.root, tmp_path / "mine")
    write(mine, {"app/local_only.py": "def clone_only_overlay_fn():\n    return 1\n"})
    write(origin.root, {"app/origin_only.py": "def origin_unindexed_fn():\n    return 2\n"})
    other = tmp_path / "other"  # another project altogether: no commit, no path in common
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit(other, {f"lib/part_{i}.py": f"def unrelated_part_{i}():\n    return {i}\n"
                   for i in range(5)}, "another project")
    home = tmp_path / "home"
    home.mkdir()
    worker = subprocess.Popen([sys.executable, "-P", "-m", "codenav_worker", "--lane",
                               "overlay"], env=service_env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with serve(settings) as url:
            token, token_id = create_token(conn, "stack", "admin")
            (home / "stack.json").write_text(json.dumps({"url": url, "token": token,
                                                         "token_id": token_id}))
            env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
            env["CODENAV_HOME"] = str(home)

            async def ask(root: Path, query: str) -> dict[str, Any]:
                params = StdioServerParameters(command=sys.executable,
                                               args=["-m", "codenav_adapter"], env=env,
                                               cwd=str(root))
                async with Client(params) as client:
                    return await Dev(client)("search", query=query, mode="lexical")

            in_clone = anyio.run(ask, mine, "clone_only_overlay_fn")
            in_origin = anyio.run(ask, origin.root, "origin_unindexed_fn")
            unrelated = anyio.run(ask, other, "unrelated_part_1")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
    hit = in_clone["results"][0]
    assert hit["path"] == "app/local_only.py" and hit["source"] == "local"
    assert in_clone["ref"]["worktree"] and in_clone["ref"]["overlay"]["files"] == 1
    # the stack's own checkout: no overlay (its watcher indexes those edits; none runs here)
    assert "app/origin_only.py" not in _paths(in_origin)
    assert "overlay" not in in_origin["ref"]
    # an unrelated checkout is not sent as edits of the indexed tree
    assert not _paths(unrelated) and "overlay" not in unrelated["ref"]
    assert conn.execute("SELECT count(*) FROM overlays").fetchone() == (1,)


def test_an_overlay_job_whose_worker_is_killed_runs_again_and_converges(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        tmp_path: Path) -> None:
    """The overlay lane under a fault: its worker SIGKILLed while it builds a state (its job
    and the job's processes die with it); the job goes back to its queue, a new worker
    builds the state, and the overlay holds each sent file once."""
    import io
    import tarfile
    from dataclasses import replace

    import psutil
    import redis
    from rq.job import Job, JobStatus
    from rq.registry import StartedJobRegistry
    from rq.serializers import JSONSerializer

    from codenav.index.blob import git_blob_sha
    from codenav.jobs import coordination, enqueue
    from codenav.proc import kill_group
    from tests.worker.test_recovery import wait_until

    def worker(*args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-P", "-m", "codenav_worker", *args],
                                env=service_env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    files = {f"app/gen/mod_{i}.py": f"from app.util import helper\n\n\n"
             f"def killed_overlay_fn_{i}(value):\n    return helper({i}, value)\n"
             for i in range(2000)}  # long enough to be killed in the middle
    blobs = {path: text.encode() for path, text in files.items()}
    listed = [[p, git_blob_sha(b), len(b)] for p, b in sorted(blobs.items())]
    started: list[subprocess.Popen[bytes]] = [worker("--lane", "index")]
    r = redis.Redis.from_url(settings.redis_url)
    try:
        with serve(replace(settings, overlay_wait_s=0.5)) as url:
            ci, _ = create_token(conn, "ci", "write")
            alice, _ = create_token(conn, "alice", "read")
            origin = make_history(tmp_path / "origin")
            _publish(url, ci, origin.root, tmp_path / "ci-cache")
            indexer = started.pop()  # it would take overlays too: only the victim runs now
            os.killpg(indexer.pid, signal.SIGTERM)
            indexer.wait(30)
            oid = _rest(url, alice, "POST", "/v1/overlays",
                        json={"commits": [origin.main[-1]]}).json()["overlay"]
            assert len(_rest(url, alice, "PUT", f"/v1/overlays/{oid}",
                             json={"files": listed}).json()["missing"]) == len(listed)
            out = io.BytesIO()
            with tarfile.open(fileobj=out, mode="w:") as tar:
                for path, sha, _size in listed:
                    data = blobs[path]
                    info = tarfile.TarInfo(sha)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
            assert _rest(url, alice, "POST", f"/v1/overlays/{oid}/blobs",
                         content=out.getvalue()).status_code == 200
            sent = _rest(url, alice, "PUT", f"/v1/overlays/{oid}", json={"files": listed})
            version = sent.json()["version"]
            assert not sent.json()["stored"]  # no overlay worker yet: it waits in its queue
            victim = worker("--lane", "overlay", "--name", "victim")
            registry = StartedJobRegistry(enqueue.OVERLAY_QUEUE, connection=r,
                                          serializer=JSONSerializer)
            job_id = wait_until(lambda: registry.get_job_ids() and registry.get_job_ids()[0],
                                60, "the overlay job starting")
            time.sleep(0.3)
            tree = psutil.Process(victim.pid).children(recursive=True)
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            kill_group(victim.pid)
            psutil.wait_procs(tree, timeout=20)
            stored, graphed = conn.execute("SELECT stored, graph FROM overlays WHERE id = %s",
                                           (oid,)).fetchone()
            assert graphed < version, "the job ended before the kill: nothing was tested"
            assert Job.fetch(job_id, connection=r, serializer=JSONSerializer
                             ).get_status() == JobStatus.STARTED
            assert coordination.requeue_abandoned(r, settings, dead=["victim"]) == [job_id]
            started.append(worker("--lane", "overlay"))
            wait_until(lambda: conn.execute(
                "SELECT stored >= %(v)s AND graph >= %(v)s FROM overlays WHERE id = %(id)s",
                {"v": version, "id": oid}).fetchone()[0], 120, "the overlay converging")
            hit = httpx.post(f"{url}/v1/search", timeout=60,
                             json={"query": "killed_overlay_fn_417", "mode": "lexical"},
                             headers={"X-Codenav-Overlay": oid,
                                      "Authorization": f"Bearer {alice}"}).json()["results"][0]
            assert hit["path"] == "app/gen/mod_417.py" and hit["source"] == "local"
            found = httpx.post(f"{url}/v1/definition", timeout=60,
                               json={"symbol": "killed_overlay_fn_417"},
                               headers={"X-Codenav-Overlay": oid,
                                        "Authorization": f"Bearer {alice}"}).json()
            assert [d["path"] for d in found["results"]] == ["app/gen/mod_417.py"]
    finally:
        for proc in started:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
    tree_id = conn.execute("SELECT tree_id FROM overlays WHERE id = %s", (oid,)).fetchone()[0]
    assert conn.execute("SELECT count(*) FROM overlay_files WHERE overlay_id = %s",
                        (oid,)).fetchone() == (len(files),)
    assert conn.execute("SELECT count(*) FROM files WHERE tree_id = %s AND path LIKE "
                        "'app/gen/%%'", (tree_id,)).fetchone() == (len(files),)
    assert stored <= version
