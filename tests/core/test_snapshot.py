"""Snapshots with real stores: export from one embedded Postgres database, import into
another (a fresh store, or one that already holds data), answers compared tool by tool over
REST with the real embedder; corrupted, truncated, foreign and incompatible archives refused
with the store unchanged; the CLI as a user runs it."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from codenav import admin, repos, snapshot
from codenav.access import Caller
from codenav.auth import create_token
from codenav.config import Settings
from codenav.embed import vectors
from codenav.embed.client import EmbedClient
from codenav.errors import Forbidden, InvalidRequest
from codenav.index import reconcile
from codenav.versions import CHUNKER_VERSION, SCHEMA_ROWS_SINCE, SCHEMA_VERSION
from codenav_cli.stores import EmbeddedPostgres
from tests.conftest import ALLOWED_ROOTS, NO_RATE_LIMIT, TEMPLATE_DB
from tests.core.graph.test_fixture_graphs import index_fixture
from tests.embedkit import start_embedder, stop
from tests.polyglot import make_polyglot
from tests.teamkit import database

CODENAV = str(Path(sys.executable).with_name("codenav"))
OPERATOR = Caller.operator()


@pytest.fixture(scope="module")
def embedder() -> Iterator[str]:
    proc, url = start_embedder()
    yield url
    stop(proc)


def _settings(url: str, redis_url: str, home: Path, embed_url: str = "") -> Settings:
    env = {"CODENAV_DATABASE_URL": url, "CODENAV_REDIS_URL": redis_url,
           "CODENAV_HOME": str(home), "CODENAV_PARSE_PROCESSES": "2",
           "CODENAV_ALLOWED_ROOTS": ALLOWED_ROOTS, "CODENAV_RATE_LIMIT_PER_S": NO_RATE_LIMIT}
    if embed_url:
        env["CODENAV_EMBED_URL"] = embed_url
    return Settings.load(env=env, dotenv=Path("/nonexistent"))


@pytest.fixture
def second(pg: EmbeddedPostgres, redis_url: str, tmp_path: Path) -> Iterator[Settings]:
    """Another store: a fresh, migrated database of its own."""
    with database(pg, TEMPLATE_DB) as url:
        yield _settings(url, redis_url, tmp_path / "home2")


def _embed(settings: Settings, conn: psycopg.Connection, repo_id: int) -> None:
    client = EmbedClient.from_settings(settings)
    assert client is not None
    try:
        run = vectors.embed_backlog(conn, client, repo_id, budget_s=600)
    finally:
        client.close()
    assert run.remaining == 0


@pytest.fixture(scope="module")
def source(pg: EmbeddedPostgres, redis_server: Any, embedder: str,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """The first store, built once for the module: three repositories indexed with their
    graph, all embedded (tests only read it, or add tokens and teams)."""
    base = tmp_path_factory.mktemp("source")
    with database(pg, TEMPLATE_DB) as url:
        semantic = _settings(url, redis_server.url, base / "home", embedder)
        with psycopg.connect(url, autocommit=True) as conn:
            for family in ("python", "java"):
                repo = index_fixture(semantic, conn, family, base)
                _embed(semantic, conn, repo.id)
            root = make_polyglot(base)
            (root / "src" / "auth" / "settings.py").write_text(
                'AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"\n'
                "def timeout():\n    return 30\n")
            repo = repos.register(conn, str(root), "poly")
            reconcile.reconcile(semantic, repo.id)
            _embed(semantic, conn, repo.id)
            # corpus statistics are refreshed after large runs only; an import refreshes
            # them, so the first store's must be current for its scores to be comparable
            reconcile.refresh_stats(conn)
        yield semantic


@pytest.fixture
def indexed(source: Settings) -> Settings:
    return source


@pytest.fixture
def conn(source: Settings) -> Iterator[psycopg.Connection]:
    """A connection to the first store (this module's ``conn``)."""
    with psycopg.connect(source.database_url, autocommit=True) as c:
        yield c


def _export(conn: psycopg.Connection, out: Path, names: list[str] | None = None,
            ref: str | None = None) -> dict[str, Any]:
    return admin.snapshot_export(conn, OPERATOR, out, names, ref)


def _import(settings: Settings, path: Path, **kw: Any) -> dict[str, Any]:
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        return admin.snapshot_import(conn, settings, OPERATOR, path, **kw)


def _counts(settings: Settings) -> dict[str, int]:
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        return snapshot.counts(conn)


QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("search", {"query": "register user", "repo": "python", "mode": "lexical"}),
    ("search", {"query": "register user", "repo": "python", "mode": "hybrid"}),
    ("search", {"query": "how are invoices totalled", "repo": "poly", "mode": "hybrid"}),
    ("search", {"query": "ledger entity", "repo": "java", "mode": "semantic"}),
    ("search", {"query": "timeout", "repo": "poly", "mode": "lexical"}),
    ("find_files", {"query": "verify the token signature", "repo": "poly"}),
    ("find_files", {"query": "user service", "repo": "python", "mode": "lexical"}),
    ("outline", {"path": "app/service.py", "repo": "python"}),
    ("outline", {"path": "src/auth/settings.py", "repo": "poly"}),
    ("read", {"symbol": "Service.register", "repo": "python"}),
    ("read", {"path": "src/auth/settings.py", "repo": "poly"}),
    ("read", {"path": "app/models.py", "start_line": 1, "end_line": 8, "repo": "python"}),
    ("definition", {"symbol": "Service.register", "repo": "python"}),
    ("references", {"symbol": "User.greet", "repo": "python"}),
    ("dependencies", {"path": "app/service.py", "repo": "python"}),
    ("impact", {"symbol_or_path": "User", "repo": "python"}),
    ("implementations", {"symbol": "Entity", "repo": "java"}),
    ("skeleton", {"path": "app", "repo": "python"}),
    ("skeleton", {"repo": "java"}),
]
VOLATILE = {"_stats", "duration_ms", "indexed_at", "job_id", "started_at", "updated_at",
            "finished_at", "created_at", "id", "took_ms"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _answers(settings: Settings) -> list[Any]:
    from codenav_api.app import create_app

    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        token, _ = create_token(conn, "compare", "read")
    out = []
    with TestClient(create_app(settings)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        for tool, body in QUERIES:
            response = client.post(f"/v1/{tool}", json=body)
            assert response.status_code == 200, (tool, body, response.text)
            out.append(_stable(response.json()))
    return out


def test_a_snapshot_imported_into_a_fresh_store_answers_every_tool_identically(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path,
        embedder: str) -> None:
    before = _answers(indexed)
    assert any(r["path"] == "app/service.py" for r in before[1]["results"])
    assert before[3]["results"], "semantic search found nothing in the first store"
    exported = _export(conn, tmp_path / "all.snap")
    assert exported["repos"] == ["python", "java", "poly"]
    assert exported["rows"]["embeddings"] > 20 and exported["rows"]["graph_edges"] > 0
    result = _import(second, tmp_path / "all.snap")
    assert {r["name"] for r in result["repos"]} == {"python", "java", "poly"}
    target = _settings(second.database_url, second.redis_url, Path(second.home), embedder)
    after = _answers(target)
    for (tool, body), one, two in zip(QUERIES, before, after, strict=True):
        if one != two:
            Path("/tmp/h13s_one.json").write_text(json.dumps(one, indent=1, sort_keys=True))
            Path("/tmp/h13s_two.json").write_text(json.dumps(two, indent=1, sort_keys=True))
        assert one == two, (tool, body)
    source, copy = _counts(indexed), _counts(second)
    for table in ("contents", "chunks", "symbols", "refs", "file_terms", "files", "skipped",
                  "graph_imports", "graph_edges", "graph_links", "graph_files", "graph_state",
                  "embeddings", "chunk_texts"):
        assert copy[table] == source[table], table


def test_secrets_stay_redacted_through_a_snapshot(indexed: Settings, conn: psycopg.Connection,
                                                   second: Settings, tmp_path: Path) -> None:
    path = tmp_path / "poly.snap"
    _export(conn, path, ["poly"])
    raw = path.read_bytes()
    with tarfile.open(path) as tar:
        everything = b"".join(__import__("zlib").decompress(tar.extractfile(m).read(), 31)
                              for m in tar.getmembers() if m.name.endswith(".gz"))
    assert b"wJalrXUtnFEMI" not in raw and b"wJalrXUtnFEMI" not in everything
    assert b"[REDACTED]" in everything
    _import(second, path)
    with psycopg.connect(second.database_url) as c2:
        bodies = [r[0] for r in c2.execute("SELECT body FROM contents").fetchall()]
    assert not any("wJalrXUtnFEMI" in b for b in bodies)


def test_importing_a_snapshot_twice_changes_nothing_the_second_time(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path) -> None:
    path = tmp_path / "all.snap"
    _export(conn, path)
    _import(second, path)
    once = _counts(second)
    again = _import(second, path)
    assert _counts(second) == once
    assert again["inserted"]["contents"] == 0 and again["inserted"]["chunks"] == 0
    assert all(r["replaced"] for r in again["repos"])


def test_an_import_merges_by_content_with_what_the_store_already_holds(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path) -> None:
    """The same files under another name are stored once: no content, chunk or vector of
    the snapshot that the store has is written again, and its ids are remapped."""
    path = tmp_path / "python.snap"
    _export(conn, path, ["python"])
    with psycopg.connect(second.database_url, autocommit=True) as c2:
        repo = index_fixture(second, c2, "python", tmp_path / "here")
        repos.register(c2, str(tmp_path / "here" / "python"), "python-here")
        before = snapshot.counts(c2)
        assert repo.name == "python"
    result = _import(second, path, team="other")
    after = _counts(second)
    assert result["inserted"]["contents"] == 0
    assert after["contents"] == before["contents"] and after["chunks"] == before["chunks"]
    assert after["files"] == before["files"] * 2  # the same files, now also in team other
    assert after["repos"] == before["repos"] + 1


def test_a_repository_of_the_same_name_gets_the_snapshots_file_list_and_keeps_its_id(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path) -> None:
    path = tmp_path / "python.snap"
    _export(conn, path, ["python"])
    other = tmp_path / "elsewhere" / "python"
    other.mkdir(parents=True)
    (other / "only_here.py").write_text("def only_here():\n    return 1\n")
    with psycopg.connect(second.database_url, autocommit=True) as c2:
        repo = repos.register(c2, str(other), "python")
        reconcile.reconcile(second, repo.id)
    result = _import(second, path)
    (imported,) = result["repos"]
    assert imported["replaced"] and imported["id"] == repo.id
    assert imported["root"] == str(other)  # the local root stays (none was mapped)
    with psycopg.connect(second.database_url) as c2:
        paths = {r[0] for r in c2.execute("SELECT path FROM files WHERE repo_id = %s",
                                          (repo.id,)).fetchall()}
    assert "only_here.py" not in paths and "app/service.py" in paths


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x40
    path.write_bytes(bytes(data))


def _member_offset(path: Path, name: str) -> int:
    with tarfile.open(path) as tar:
        return tar.getmember(name).offset_data


@pytest.mark.parametrize("damage", ["flip_section", "flip_manifest", "truncate", "truncate_end",
                                    "zip", "tar", "gzip", "empty"])
def test_a_damaged_or_foreign_file_is_refused_and_the_store_is_unchanged(
        damage: str, indexed: Settings, conn: psycopg.Connection, second: Settings,
        tmp_path: Path) -> None:
    good = tmp_path / "good.snap"
    _export(conn, good, ["python"])
    _import(second, good)
    with psycopg.connect(second.database_url, autocommit=True) as c2:
        other = index_fixture(second, c2, "java", tmp_path / "second")
    before = _counts(second)
    bad = tmp_path / "bad.snap"
    shutil.copy(good, bad)
    if damage == "flip_section":
        _flip(bad, _member_offset(bad, "chunks.copy.gz") + 40)
    elif damage == "flip_manifest":
        at = _member_offset(bad, snapshot.MANIFEST)
        text = bad.read_bytes()
        where = text.index(b'"python"', at)
        _flip(bad, where + 2)
    elif damage == "truncate":
        bad.write_bytes(good.read_bytes()[:_member_offset(bad, "files.copy.gz") + 100])
    elif damage == "truncate_end":
        bad.write_bytes(good.read_bytes()[:-2048])
    elif damage == "zip":
        with zipfile.ZipFile(bad, "w") as zf:
            zf.writestr("codenav-snapshot.json", "{}")
    elif damage == "tar":
        with tarfile.open(bad, "w") as tar:
            info = tarfile.TarInfo("README")
            info.size = 5
            tar.addfile(info, io.BytesIO(b"hello"))
    elif damage == "gzip":
        import gzip

        bad.write_bytes(gzip.compress(good.read_bytes()))
    elif damage == "empty":
        bad.write_bytes(b"")
    with pytest.raises(InvalidRequest) as refused:
        _import(second, bad)
    assert refused.value.message
    assert _counts(second) == before
    with psycopg.connect(second.database_url) as c2:
        assert c2.execute("SELECT count(*) FROM files WHERE repo_id = %s",
                          (other.id,)).fetchone() == (before["files"] - _files_of(good),)


def _files_of(path: Path) -> int:
    manifest = snapshot.read_manifest(path)
    return next(int(s["rows"]) for s in manifest.sections if s["name"] == "files")


def _rewrite_manifest(src: Path, dst: Path, **changes: Any) -> None:
    """A well-formed archive whose manifest says something else (checksums recomputed)."""
    with tarfile.open(src) as tar, tarfile.open(dst, "w") as out:
        for member in tar.getmembers():
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            if member.name == snapshot.MANIFEST:
                manifest = json.loads(data)
                manifest.update(changes)
                data = json.dumps(manifest).encode()
                digest = hashlib.sha256(data).hexdigest().encode() + b"\n"
            if member.name == snapshot.TRAILER:
                data = digest
            member.size = len(data)
            out.addfile(member, io.BytesIO(data))


@pytest.mark.parametrize(("field", "value", "words"), [
    ("schema_version", SCHEMA_ROWS_SINCE - 1, [f"schema version {SCHEMA_ROWS_SINCE - 1}",
                                               f"schema version {SCHEMA_VERSION}"]),
    ("schema_version", SCHEMA_VERSION + 1, [f"schema version {SCHEMA_VERSION + 1}",
                                            f"schema version {SCHEMA_VERSION}"]),
    ("chunker_version", CHUNKER_VERSION + 1, [f"chunker version {CHUNKER_VERSION + 1}",
                                              f"version {CHUNKER_VERSION}"]),
    ("format_version", snapshot.FORMAT_VERSION + 1,
     [f"format version {snapshot.FORMAT_VERSION + 1}",
      f"format version {snapshot.FORMAT_VERSION}"]),
])
def test_a_snapshot_of_another_version_is_refused_naming_both_versions(
        field: str, value: int, words: list[str], indexed: Settings, conn: psycopg.Connection,
        second: Settings, tmp_path: Path) -> None:
    good = tmp_path / "good.snap"
    _export(conn, good, ["python"])
    bad = tmp_path / "other.snap"
    _rewrite_manifest(good, bad, **{field: value})
    before = _counts(second)
    with pytest.raises(InvalidRequest) as refused:
        _import(second, bad)
    for word in words:
        assert word in refused.value.message
    assert _counts(second) == before


def test_a_snapshot_of_an_older_schema_with_the_same_rows_is_imported(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path) -> None:
    """A schema version that added an index, no row, leaves snapshots importable: a seed
    image built before an upgrade still starts a machine after it."""
    assert SCHEMA_ROWS_SINCE < SCHEMA_VERSION
    current = tmp_path / "current.snap"
    _export(conn, current, ["python"])
    older = tmp_path / "older.snap"
    _rewrite_manifest(current, older, schema_version=SCHEMA_ROWS_SINCE)
    result = _import(second, older)
    assert [r["name"] for r in result["repos"]] == ["python"]
    assert result["inserted"]["contents"] > 0 and result["inserted"]["chunks"] > 0
    once = _counts(second)
    again = _import(second, current)  # the same rows as the current schema's snapshot
    assert _counts(second) == once
    assert again["inserted"]["contents"] == 0 and again["inserted"]["chunks"] == 0


def test_a_snapshot_of_another_embedding_model_is_refused_naming_both_models(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path) -> None:
    path = tmp_path / "python.snap"
    _export(conn, path, ["python"])
    (model,) = snapshot.read_manifest(path).models
    before = _counts(second)
    with pytest.raises(InvalidRequest) as refused:
        _import(second, path, model=lambda: ("nomic-ai/CodeRankEmbed", 768))
    assert model["name"] in refused.value.message
    assert "nomic-ai/CodeRankEmbed" in refused.value.message and "768" in refused.value.message
    assert _counts(second) == before
    # without the vectors it goes in, and the chunks are left to embed here
    result = _import(second, path, vectors=False,
                     model=lambda: ("nomic-ai/CodeRankEmbed", 768))
    assert result["inserted"]["embeddings"] == 0 and result["inserted"]["chunk_texts"] > 0
    # the same name with another dimension in the store is refused too
    with psycopg.connect(second.database_url, autocommit=True) as c2:
        c2.execute("DELETE FROM repos")
        c2.execute("INSERT INTO embed_models (name, dim) VALUES (%s, 768)", (model["name"],))
    with pytest.raises(InvalidRequest) as dims:
        _import(second, path)
    assert "384" in dims.value.message and "768" in dims.value.message


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def test_export_with_a_ref_writes_that_refs_tree_and_refuses_one_not_indexed(
        second: Settings, tmp_path: Path) -> None:
    from codenav import refs
    from codenav.errors import NotFound

    settings = second
    conn = psycopg.connect(second.database_url, autocommit=True)
    root = tmp_path / "gitrepo"
    root.mkdir()
    (root / "main.py").write_text("def main():\n    return 0\n")
    _git(root, "init", "-q", "-b", "trunk")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "one")
    repo = repos.register(conn, str(root), "gitrepo")
    reconcile.reconcile(settings, repo.id)
    refs.sync(settings, repo.id, {"trunk": ""})
    commit = conn.execute("SELECT commit FROM repo_refs WHERE name = 'trunk'").fetchone()[0]  # type: ignore[index]
    assert commit and len(commit) == 40
    for ref in (commit, commit[:8], "trunk"):
        _export(conn, tmp_path / "ok.snap", ["gitrepo"], ref)
        (spec,) = snapshot.read_manifest(tmp_path / "ok.snap").repos
        assert [(t["kind"], t["commit"], t["refs"]) for t in spec.trees] == \
            [("commit", commit, ["trunk"])]
    _export(conn, tmp_path / "all.snap", ["gitrepo"])
    (spec,) = snapshot.read_manifest(tmp_path / "all.snap").repos
    assert sorted(t["kind"] for t in spec.trees) == ["commit", "worktree"]
    assert spec.indexed_commit == commit  # the working tree's HEAD
    for ref in ("main", "0" * 40, commit[:4]):
        with pytest.raises((InvalidRequest, NotFound)) as refused:
            _export(conn, tmp_path / "no.snap", ["gitrepo"], ref)
        assert "trunk" in refused.value.hint
    assert not (tmp_path / "no.snap").exists()
    conn.close()


def test_only_an_admin_exports_or_imports_and_only_what_its_team_sees(
        indexed: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    from codenav.access import Caller as C

    reader = C(1, "reader", "read", 1, "default")
    with pytest.raises(Forbidden):
        admin.snapshot_export(conn, reader, tmp_path / "x.snap")
    with pytest.raises(Forbidden):
        admin.snapshot_import(conn, indexed, reader, tmp_path / "x.snap")
    team_id, _ = __import__("codenav.auth", fromlist=["ensure_team"]).ensure_team(
        conn, "strangers", "test")
    stranger = C(2, "stranger", "admin", team_id, "strangers")
    from codenav.errors import NotFound

    with pytest.raises(NotFound):  # another team's repository is one that does not exist
        admin.snapshot_export(conn, stranger, tmp_path / "x.snap", ["python"])
    with pytest.raises(InvalidRequest):  # it sees none
        admin.snapshot_export(conn, stranger, tmp_path / "x.snap")


def test_the_rest_routes_export_and_import_a_snapshot_for_an_admin(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path) -> None:
    from codenav_api.app import create_app

    admin_token, _ = create_token(conn, "admin", "admin")
    reader_token, _ = create_token(conn, "reader", "read")
    with TestClient(create_app(indexed)) as client:
        refused = client.get("/v1/snapshot", headers={"Authorization": f"Bearer {reader_token}"})
        assert refused.status_code == 403 and "admin" in refused.json()["message"]
        got = client.get("/v1/snapshot", params={"repo": "java"},
                         headers={"Authorization": f"Bearer {admin_token}"})
        assert got.status_code == 200, got.text
        assert json.loads(got.headers["x-codenav-summary"])["repos"] == ["java"]
    (tmp_path / "java.snap").write_bytes(got.content)
    with psycopg.connect(second.database_url, autocommit=True) as c2:
        token2, _ = create_token(c2, "admin2", "admin")
    with TestClient(create_app(second)) as client:
        bad = client.post("/v1/snapshot", content=b"not a snapshot",
                          headers={"Authorization": f"Bearer {token2}"})
        assert bad.status_code == 400 and "not a codenav snapshot" in bad.json()["message"]
        put = client.post("/v1/snapshot", content=got.content,
                          headers={"Authorization": f"Bearer {token2}"})
        assert put.status_code == 200, put.text
        assert [r["name"] for r in put.json()["repos"]] == ["java"]
        found = client.post("/v1/implementations", json={"symbol": "Entity", "repo": "java"},
                            headers={"Authorization": f"Bearer {token2}"})
        assert found.status_code == 200 and found.json()["results"]


def test_the_cli_exports_and_imports_as_the_operator(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    out = tmp_path / "cli.snap"

    def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CODENAV, "snapshot", *args], capture_output=True, text=True,
                              env={**env, "CODENAV_DATABASE_URL": url,
                                   "CODENAV_HOME": str(tmp_path / "clihome")}, timeout=300)

    done = run(indexed.database_url, "export", "--repo", "python", str(out))
    assert done.returncode == 0, done.stderr
    assert "exported python" in done.stdout and out.is_file()
    moved = tmp_path / "moved" / "python"
    shutil.copytree(Path(indexed.home).parent / "python", moved)
    refused = run(second.database_url, "import", str(out), "--root", str(moved))
    assert refused.returncode == 1 and "CODENAV_ALLOWED_ROOTS" in refused.stderr
    env["CODENAV_ALLOWED_ROOTS"] = ALLOWED_ROOTS
    done = run(second.database_url, "import", str(out), "--root", str(moved))
    assert done.returncode == 0, done.stderr
    assert f"imported default/python at {moved}" in done.stdout
    bad = run(second.database_url, "import", str(tmp_path / "missing.snap"))
    assert bad.returncode == 1 and "cannot read" in bad.stderr and "Traceback" not in bad.stderr


def test_a_seed_import_skips_a_store_that_holds_its_repository_and_maps_allowed_roots(
        indexed: Settings, conn: psycopg.Connection, second: Settings, tmp_path: Path) -> None:
    """What the compose seed profile and the Kubernetes Job run: `--local-roots` puts the
    repository under CODENAV_ALLOWED_ROOTS (the directory of its name), and
    `--skip-existing` leaves a store that already holds it alone."""
    path = tmp_path / "java.snap"
    _export(conn, path, ["java"])
    checkouts = tmp_path / "srv" / "git"
    (checkouts / "java").mkdir(parents=True)
    server = Settings.load(env={"CODENAV_DATABASE_URL": second.database_url,
                                "CODENAV_HOME": second.home,
                                "CODENAV_ALLOWED_ROOTS": str(checkouts)},
                           dotenv=Path("/nonexistent"))
    first = _import(server, path, skip_existing=True, local_roots=True)
    assert [r["root"] for r in first["repos"]] == [str(checkouts / "java")]
    counted = _counts(second)
    again = _import(server, path, skip_existing=True, local_roots=True)
    assert again["skipped"] == "the store already holds default/java"
    assert _counts(second) == counted


def test_a_team_admin_import_leaves_out_contents_whose_body_is_not_their_blob(
        indexed: Settings, conn: psycopg.Connection, second: Settings, pg: EmbeddedPostgres,
        tmp_path: Path) -> None:
    """Contents are shared between teams by address: a snapshot whose body was changed
    after export (its sections re-checksummed, so only the address tells) must not put a
    forged body where another team's identical file would find it."""
    path = tmp_path / "python.snap"
    _export(conn, path, ["python"])
    _import(second, path)
    with psycopg.connect(second.database_url, autocommit=True) as c2:
        c2.execute("UPDATE contents SET body = 'def forged():\\n    return 1\\n' "
                   "WHERE id = (SELECT content_id FROM files WHERE path = 'app/models.py')")
        forged = tmp_path / "forged.snap"
        admin.snapshot_export(c2, OPERATOR, forged, ["python"])
    with database(pg, TEMPLATE_DB) as url:
        third = _settings(url, second.redis_url, tmp_path / "home3")
        with psycopg.connect(url, autocommit=True) as c3:
            from codenav.auth import ensure_team

            team_id, _ = ensure_team(c3, "gamma", "test")
            gamma = Caller(1, "gamma-admin", "admin", team_id, "gamma")
            moved = Path(ALLOWED_ROOTS) / "gamma-python"
            result = admin.snapshot_import(c3, third, gamma, forged, {"python": str(moved)})
            assert any("left out" in n for n in result["notes"]), result["notes"]
            paths = {r[0] for r in c3.execute("SELECT path FROM files").fetchall()}
            bodies = [r[0] for r in c3.execute("SELECT body FROM contents").fetchall()]
    assert "app/models.py" not in paths and "app/service.py" in paths
    assert not any("forged" in b for b in bodies)
    assert result["repos"][0]["team"] == "gamma"


_COMPRESSED_TSV = """
SELECT count(*) FILTER (WHERE pg_column_compression(tsv) IS NOT NULL),
       count(*) FILTER (WHERE octet_length(tsv::text) > 2000) FROM chunks"""


def test_chunk_tsvectors_are_stored_uncompressed_when_indexed_and_when_imported(
        pg: EmbeddedPostgres, second: Settings, redis_url: str, tmp_path: Path) -> None:
    """Ranking reads every candidate's tsvector once per query group: a large one stays
    uncompressed, whether the worker wrote it or a snapshot brought it (a staged value
    inserted as it is would keep its compression)."""
    root = tmp_path / "wide"
    root.mkdir()
    # long, repetitive names: a tsvector pglz would compress (it gives up on one whose
    # first kilobyte has no repeats)
    names = [f"value{'x' * 40}{i}" for i in range(80)]
    (root / "wide.py").write_text(
        "def wide():\n" + "".join(f"    {n} = {i}\n" for i, n in enumerate(names))
        + "    return 0\n")
    with psycopg.connect(second.database_url, autocommit=True) as c2:
        repo = repos.register(c2, str(root), "wide")
        reconcile.reconcile(second, repo.id)
        compressed, large = c2.execute(_COMPRESSED_TSV).fetchone()
        assert large >= 1 and compressed == 0
        path = tmp_path / "wide.snap"
        admin.snapshot_export(c2, OPERATOR, path, ["wide"], None)
    with database(pg, TEMPLATE_DB) as url:
        third = _settings(url, redis_url, tmp_path / "home3")
        _import(third, path)
        with psycopg.connect(url, autocommit=True) as c3:
            compressed, large = c3.execute(_COMPRESSED_TSV).fetchone()
            assert large >= 1 and compressed == 0
