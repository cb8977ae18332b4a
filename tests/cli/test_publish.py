"""``codenav publish`` as a CI job runs it: a real ``codenav`` process indexes the checkout in
its own embedded store, sends a real API server only what it lacks, and a real worker builds
the tree and moves the ref. A publish killed half-way leaves the ref where it was; run
again, it sends only the rest. Another team's uploads never stand in for this team's."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from codenav.auth import create_token
from codenav.config import Settings
from tests.gitkit import MODULES, History, commit, make_history
from tests.teamkit import serve

SENT = re.compile(r"^(\d+) blobs sent, (\d+) bytes$", re.M)


@pytest.fixture
def server(settings: Settings, service_env: dict[str, str]) -> Iterator[str]:
    """The API on a loopback port and an index worker, as a team runs them."""
    worker = subprocess.Popen([sys.executable, "-P", "-m", "codenav_worker", "--lane", "index"],
                              env=service_env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with serve(settings) as url:
            yield url
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)


@pytest.fixture
def history(tmp_path: Path) -> History:
    return make_history(tmp_path / "store")


def _publish(url: str, token: str, h: History, ref: str, *extra: str,
             cache: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "codenav_cli.cli", "publish", str(h.root), "--url", url,
         "--token", token, "--repo", "store", "--ref", ref,
         "--cache", str(cache or h.root.parent / "cache"), *extra],
        env=env, capture_output=True, text=True, timeout=300)
    if check:
        assert done.returncode == 0, done.stderr + done.stdout
    return done


def _sent(done: subprocess.CompletedProcess[str]) -> tuple[int, int]:
    found = SENT.search(done.stdout)
    assert found, done.stdout
    return int(found.group(1)), int(found.group(2))


def _api(url: str, token: str, tool: str, **args: Any) -> dict[str, Any]:
    answer = httpx.post(f"{url}/v1/{tool}", json={"repo": "store", **args},
                        headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data


def _settled_count(conn: psycopg.Connection) -> int:
    """Contents once no upload has landed for half a second (at most 30 s of waiting)."""
    seen, steady, deadline = -1, 0, time.monotonic() + 30
    while steady < 5 and time.monotonic() < deadline:
        count: int = conn.execute("SELECT count(*) FROM contents").fetchone()[0]  # type: ignore[index]
        steady = steady + 1 if count == seen else 0
        seen = count
        time.sleep(0.1)
    return seen


def _ref_commit(conn: psycopg.Connection, ref: str) -> str | None:
    row = conn.execute("SELECT commit FROM repo_refs WHERE name = %s", (ref,)).fetchone()
    return row[0] if row else None


def test_publish_sends_only_what_the_server_lacks_and_moves_the_ref(
        server: str, conn: psycopg.Connection, history: History) -> None:
    token, _ = create_token(conn, "ci", "write")
    reader, _ = create_token(conn, "agent", "read")
    first = _publish(server, token, history, "main", "--commit", history.main[0], "--default")
    files = 5 + MODULES
    assert _sent(first)[0] == files  # a new repository: every content
    assert _ref_commit(conn, "main") == history.main[0]
    found = _api(server, reader, "search", query="base_fn", mode="lexical")
    assert found["ref"]["name"] == "main" and found["results"][0]["path"] == "app/core.py"
    # the same commit again: nothing is sent
    again = _publish(server, token, history, "main", "--commit", history.main[0])
    assert _sent(again) == (0, 0) and "already" in again.stdout
    # the next commit changes one file: one content is sent, and few bytes
    step = _publish(server, token, history, "main", "--commit", history.main[1])
    blobs, sent = _sent(step)
    assert blobs == 1 and sent < 64 * 1024, step.stdout
    assert _ref_commit(conn, "main") == history.main[1]
    assert "app/util.py" in {r["path"] for r in _api(
        server, reader, "search", query="main_only_fn", ref="main", mode="lexical")["results"]}
    # a branch off the first commit: its own content only; the graph answers for it
    feature = _publish(server, token, history, "feature", "--commit", history.feature)
    assert _sent(feature)[0] == 2  # app/feature.py and the app/core.py calling it
    used = _api(server, reader, "references", symbol="feature_only_fn", ref="feature")
    assert {v["path"] for v in used["verified"]} == {"app/core.py"}
    assert _api(server, reader, "references", symbol="feature_only_fn",
                ref="main")["verified"] == []
    # a commit the server holds already (as another ref): only the ref moves
    moved = _publish(server, token, history, "release-candidate", "--commit", history.main[1])
    assert _sent(moved)[0] == 0
    assert _ref_commit(conn, "release-candidate") == history.main[1]
    # the local cache made the later runs parse only what changed
    status = _api(server, reader, "status")["repos"][0]
    assert status["source"] == "remote" and status["default_ref"] == "main"
    assert {r["name"] for r in status["refs"]} == {"main", "feature", "release-candidate"}


def test_a_publish_needs_a_write_token_and_valid_names(
        server: str, conn: psycopg.Connection, history: History) -> None:
    reader, _ = create_token(conn, "agent", "read")
    refused = _publish(server, reader, history, "main", check=False)
    assert refused.returncode == 1 and "needs a write token" in refused.stderr
    writer, _ = create_token(conn, "ci", "write")
    bad = _publish(server, writer, history, "a..b", check=False)
    assert bad.returncode == 1 and "invalid ref name" in bad.stderr
    for body in ({"repo": "store", "ref": "main", "commit": "x" * 40},
                 {"repo": "store", "ref": "main", "commit": history.main[0], "files": [
                     ["../etc/passwd", "a" * 40, "python", 1]]}):
        answer = httpx.post(f"{server}/v1/publish/commit", content=json.dumps(body),
                            headers={"Authorization": f"Bearer {writer}"})
        assert answer.status_code == 400, answer.text
    assert _ref_commit(conn, "main") is None


def test_a_publish_killed_half_way_leaves_the_ref_and_a_rerun_sends_only_the_rest(
        server: str, conn: psycopg.Connection, history: History) -> None:
    token, _ = create_token(conn, "ci", "write")
    _publish(server, token, history, "main", "--commit", history.main[-1])
    big = commit(history.root, {f"lib/part_{i:02d}.py": f"def part_{i:02d}():\n    return {i}\n"
                                for i in range(40)}, "forty new files")
    before = conn.execute("SELECT count(*) FROM contents").fetchone()[0]  # type: ignore[index]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "codenav_cli.cli", "publish", str(history.root), "--url",
         server, "--token", token, "--repo", "store", "--ref", "main", "--cache",
         str(history.root.parent / "cache"), "--part-bytes", "1"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    while True:  # one content per request: kill it once some have arrived, before the rest
        count = conn.execute("SELECT count(*) FROM contents").fetchone()[0]  # type: ignore[index]
        if count >= before + 5:
            break
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    arrived = _settled_count(conn)  # the server finishes a request the client died during
    assert before + 5 <= arrived < before + 40
    assert _ref_commit(conn, "main") == history.main[-1]  # the ref did not move
    assert (history.root.parent / "cache" / "parts").is_dir()  # the killed run's parts
    rerun = _publish(server, token, history, "main")
    assert not (history.root.parent / "cache" / "parts").exists()  # cleared by the rerun
    blobs, _bytes = _sent(rerun)
    assert blobs == before + 40 - arrived  # only what had not arrived
    assert _ref_commit(conn, "main") == big
    assert conn.execute("SELECT count(*) FROM files f JOIN repo_refs r ON r.tree_id = f.tree_id "
                        "WHERE r.name = 'main' AND f.path LIKE 'lib/%%'").fetchone() == (40,)


def test_another_teams_upload_never_stands_in_for_this_teams_contents(
        server: str, conn: psycopg.Connection, history: History, tmp_path: Path) -> None:
    alpha, _ = create_token(conn, "ci-alpha", "write", team="alpha")
    beta, _ = create_token(conn, "ci-beta", "write", team="beta")
    one = _publish(server, alpha, history, "main", "--commit", history.main[0])
    two = _publish(server, beta, history, "main", "--commit", history.main[0],
                   cache=tmp_path / "beta-cache")
    assert _sent(one)[0] == _sent(two)[0] == 5 + MODULES  # beta sends its own
    owners = conn.execute("SELECT t.name, count(*) FROM contents c JOIN teams t "
                          "ON t.id = c.origin_team GROUP BY t.name ORDER BY 1").fetchall()
    assert owners == [("alpha", 5 + MODULES), ("beta", 5 + MODULES)]
    for token in (alpha, beta):  # each team's tree points at its own rows
        rows = conn.execute(
            "SELECT DISTINCT t.name FROM files f JOIN contents c ON c.id = f.content_id "
            "JOIN teams t ON t.id = c.origin_team JOIN repos r ON r.id = f.repo_id "
            "WHERE r.team_id = c.origin_team").fetchall()
        assert {r[0] for r in rows} == {"alpha", "beta"}
        assert _api(server, token, "search", query="base_fn", ref="main",
                    mode="lexical")["results"]


@pytest.fixture(scope="module")
def embedder() -> Iterator[str]:
    from tests.embedkit import start_embedder, stop

    proc, url = start_embedder()
    try:
        yield url
    finally:
        stop(proc)


def test_a_job_that_embeds_sends_the_vectors_the_server_lacks_and_forged_ones_are_refused(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        history: History, embedder: str, tmp_path: Path) -> None:
    import dataclasses

    served = dataclasses.replace(settings, embed_url=embedder)
    worker = subprocess.Popen([sys.executable, "-P", "-m", "codenav_worker", "--lane", "index"],
                              env=service_env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with serve(served) as url:
            token, _ = create_token(conn, "ci", "write")
            cache = tmp_path / "cache"
            first = _publish(url, token, history, "main", "--commit", history.main[0],
                             "--embed-url", embedder, cache=cache)
            texts = int(re.search(r"^(\d+) vectors sent$", first.stdout, re.M).group(1))  # type: ignore[union-attr]
            assert texts >= MODULES  # each module's six-line job (shorter chunks get none)
            held = conn.execute("SELECT count(*) FROM embeddings").fetchone()
            assert held == (texts,)
            # the next commit: only the texts of its changed file
            step = _publish(url, token, history, "main", "--commit", history.main[1],
                            "--embed-url", embedder, cache=cache)
            more = re.search(r"^(\d+) vectors sent$", step.stdout, re.M)
            assert more is not None and 0 < int(more.group(1)) <= 4, step.stdout
            # vectors that are not their texts' (a forged or foreign model) are refused whole
            from codenav.index import gitread
            from codenav_cli.publish import LocalStore

            with LocalStore(tmp_path / "forged", history.root) as store:
                gdir = gitread.git_dir(history.root)
                assert gdir is not None and store.settings is not None
                tree = store.index("store", gdir, history.feature, "feature")
                store.embed(tree, embedder)
                with psycopg.connect(store.settings.database_url, autocommit=True) as local:
                    local.execute(
                        "UPDATE embeddings SET vec = (SELECT array_agg(CASE WHEN i = 1 THEN 1.0 "
                        "ELSE 0.0 END)::vector FROM generate_series(1, vector_dims(vec)) i)")
                lacking = httpx.post(f"{url}/v1/publish/missing", headers={
                    "Authorization": f"Bearer {token}"}, json={
                    "repo": "store", "contents": [], "vectors": {
                        "model": tree.model.name, "dim": tree.model.dim,
                        "hashes": [h.hex() for h in tree.vector_keys]}}).json()
                hashes = [tree.vector_keys[i] for i in lacking["vectors_missing"]]
                assert hashes  # the feature branch's new texts
                bundle = tmp_path / "forged.tar"
                store.bundle([], bundle, (tree.model, hashes))
            before = conn.execute("SELECT count(*) FROM embeddings").fetchone()
            refused = httpx.post(f"{url}/v1/publish/contents", params={"repo": "store"},
                                 content=bundle.read_bytes(),
                                 headers={"Authorization": f"Bearer {token}"})
            assert refused.status_code == 400 and "cosine" in refused.text, refused.text
            assert conn.execute("SELECT count(*) FROM embeddings").fetchone() == before
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)



def test_the_cli_indexes_lists_queries_and_drops_refs_of_a_checkout(
        server: str, conn: psycopg.Connection, history: History) -> None:
    """``codenav index --ref/--follow``, ``codenav ref list|add|rm`` and a tool with --ref,
    as a user runs them against a server with a real worker."""
    token, _ = create_token(conn, "dev", "write")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update(CODENAV_URL=server, CODENAV_TOKEN=token)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-P", "-m", "codenav_cli.cli", *args], env=env,
                              capture_output=True, text=True, timeout=300)

    done = cli("index", str(history.root), "--name", "store", "--ref", "feature",
               "--follow", "main", "--keep", "2", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "ref main -> " + history.main[-1][:12] in done.stdout
    assert "ref feature -> " + history.feature[:12] in done.stdout
    listed = cli("ref", "list", "--repo", "store")
    assert listed.returncode == 0 and "follows main (keeps 2)" in listed.stdout
    assert {line.split("\t")[0] for line in listed.stdout.splitlines() if "\t" in line} == \
        {"main", "feature"}
    found = cli("search", "feature_only_fn", "--ref", "feature", "--mode", "lexical")
    assert found.returncode == 0 and "app/feature.py" in found.stdout
    assert "[ref feature @ " + history.feature[:12] in found.stdout
    missing = cli("search", "feature_only_fn", "--ref", "nope")
    assert missing.returncode == 1 and "no ref 'nope'" in missing.stderr
    unknown = cli("ref", "add", "no-such-branch", "--repo", "store")
    assert unknown.returncode == 1 and "no-such-branch" in unknown.stderr
    dropped = cli("ref", "rm", "feature", "--repo", "store")
    assert dropped.returncode == 0 and "dropped ref feature" in dropped.stdout
    assert _ref_commit(conn, "feature") is None
