"""``codenav publish``: run in a CI job, index the checkout's commit in a store of the job's
own (an embedded Postgres in a cache directory, kept between jobs when CI caches it), and
send the shared server only what it lacks, then move the ref there.

What crosses the network, in order: where the ref is on the server (a ref already at the
commit ends it: nothing is sent); which of the commit's contents the server lacks (their
blob ids and languages); bundles of the contents it lacks, already parsed and redacted
(secrets never leave the CI machine); the commit's file list; the server builds the tree
(unchanged rows shared with a known tree, graph layered) and moves the ref in one
transaction. Interrupted anywhere, the ref stays where it was; run again, it sends only what
is still missing. The server's side is ``codenav.publish``.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from codenav import publish, refs, repos
from codenav.client import error_from, rate_wait
from codenav.config import Settings
from codenav.db import migrations
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.errors import Conflict, InvalidRequest, NotFound, Unavailable
from codenav.index import commits, gitread
from codenav.versions import CHUNKER_VERSION, SCHEMA_VERSION
from codenav_cli.stores import EmbeddedPostgres, free_port, stop_process

log = logging.getLogger("codenav.publish")

PART_BYTES = 32 << 20
"""Contents per bundle, by the size of their bodies (each bundle is one request)."""
JOB_TIMEOUT_S = 3600.0
RESENDS = 2
"""How often a commit the server found incomplete (contents collected meanwhile) is sent
again after sending what it lacks."""


VECTORS_PER_PART = 4000
"""Vectors per upload request (with their texts: a few MB)."""


@dataclass
class Sent:
    blobs: int = 0
    bytes: int = 0
    """Bytes on the wire of every counted request, compressed (the printed ``M bytes``)."""
    requests: int = 0
    parts: int = 0
    """Tars of contents or vectors uploaded (each at most ``--part-bytes`` of contents)."""
    vectors: int = 0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.blobs} blobs sent, {self.bytes} bytes"


class Server:
    """The shared server's publish routes, counting every byte sent in a request body."""

    def __init__(self, url: str, token: str, sent: Sent) -> None:
        self.url = url.rstrip("/")
        self.sent = sent
        self._http = httpx.Client(base_url=self.url, timeout=httpx.Timeout(60.0, read=600.0),
                                  headers={"Authorization": f"Bearer {token}"} if token else {})

    def close(self) -> None:
        self._http.close()

    def _send(self, request: Callable[[], httpx.Response]) -> httpx.Response:
        """``request()``, sent again after the wait the server names while it refuses the
        token for its rate limit (``codenav.client.rate_wait``)."""
        waited = 0.0
        while True:
            try:
                response = request()
            except httpx.HTTPError as exc:
                raise Unavailable(f"cannot reach the codenav server at {self.url}: "
                                  f"{type(exc).__name__}") from None
            wait = rate_wait(response, waited)
            if wait is None:
                return response
            time.sleep(wait)
            waited += wait

    def post(self, path: str, body: bytes, *, gz: bool = True, counted: bool = True,
             params: dict[str, str] | None = None) -> dict[str, Any]:
        data = gzip.compress(body, 6) if gz else body
        headers = {"Content-Type": "application/json" if gz else "application/octet-stream"}
        if gz:
            headers["Content-Encoding"] = "gzip"
        response = self._send(lambda: self._http.post(path, content=data, headers=headers,
                                                       params=params))
        if counted:
            self.sent.bytes += len(data)
            self.sent.requests += 1
        if response.status_code >= 400:
            raise error_from(response)
        out: dict[str, Any] = response.json()
        return out

    def get(self, path: str) -> dict[str, Any]:
        response = self._send(lambda: self._http.get(path))
        if response.status_code >= 400:
            raise error_from(response)
        out: dict[str, Any] = response.json()
        return out


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


@dataclass
class LocalTree:
    """The commit as the CI job's store indexed it."""

    tree_id: int
    files: list[tuple[str, str, str, int, int, int]]
    """(path, sha, language, size, content id, body length)"""
    skipped: list[list[Any]]
    gitignored: int
    model: Any = None
    """The model its texts were embedded with (``vectors.Model``), if they were."""
    vector_keys: list[bytes] = field(default_factory=list)


class LocalStore:
    """The CI job's own store: an embedded Postgres in ``cache`` (kept between jobs when CI
    caches the directory, so a commit after a known one parses only what changed)."""

    def __init__(self, cache: Path, root: Path) -> None:
        self.cache = cache
        self.root = root
        self.server = EmbeddedPostgres(cache / "store", free_port())
        self.proc: Any = None
        self.settings: Settings | None = None
        self.repo_id = 0

    def __enter__(self) -> LocalStore:
        if self.server.stop_leftover():  # a publish killed before it could stop its store
            log.info("stopped the local store a killed publish left running")
        self.proc = self.server.start()
        env = {"CODENAV_DATABASE_URL": self.server.url, "CODENAV_HOME": str(self.cache),
               "CODENAV_ALLOWED_ROOTS": str(self.root),
               "CODENAV_PARSE_PROCESSES": os.environ.get("CODENAV_PARSE_PROCESSES", "")}
        self.settings = Settings.load(env={k: v for k, v in env.items() if v},
                                      dotenv=Path("/nonexistent"))
        with connect(self.settings) as conn:
            migrations.migrate(conn)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop_process(self.proc, signal.SIGINT, timeout=30)

    def index(self, name: str, gdir: Path, commit: str, ref: str) -> LocalTree:
        assert self.settings is not None
        with connect(self.settings) as conn:
            repo = repos.register(conn, str(self.root), name)
            conn.execute(q.REPO_LOCK, (repo.id,))
            summary = commits.index_commit(self.settings, conn, repo, gdir, commit, ref,
                                           with_graph=False)
            # the store keeps this commit's tree for the next job (a ref per published one)
            refs.move(conn, repo.id, ref, summary.tree_id, commit, 0, "publish")
            refs.collect_trees(conn, repo.id)
            files = [(p, s, lang, int(size), int(cid), int(length)) for p, s, lang, size, cid,
                     length in conn.execute(q.PUBLISH_TREE_FILES, (summary.tree_id,))]
            skipped = [[p, r, d, int(size)] for p, r, d, size in
                       conn.execute(q.PUBLISH_TREE_SKIPS, (summary.tree_id,))]
            row = conn.execute(q.PUBLISH_TREE_GITIGNORED, (summary.tree_id,)).fetchone()
            self.repo_id = repo.id
        return LocalTree(summary.tree_id, files, skipped, int(row[0]) if row else 0)

    def embed(self, tree: LocalTree, embed_url: str) -> None:
        """Embed the tree's texts with the embedder at ``embed_url`` (what this store has
        embedded before is kept: a commit after a known one embeds its changes)."""
        from codenav.embed.client import EmbedClient
        from codenav.embed.vectors import embed_backlog, find_model

        assert self.settings is not None
        client = EmbedClient(embed_url)
        try:
            with connect(self.settings) as conn:
                while embed_backlog(conn, client, self.repo_id, budget_s=600).remaining:
                    pass
                info = client.info()
                tree.model = find_model(conn, info.name)
                assert tree.model is not None
                tree.vector_keys = [bytes(h) for (h,) in conn.execute(q.PUBLISH_VECTOR_KEYS, {
                    "tree": tree.tree_id, "model": tree.model.id})]
        finally:
            client.close()

    def bundle(self, content_ids: list[int], out: Path,
               vectors: tuple[Any, list[bytes]] | None = None) -> int:
        assert self.settings is not None
        with connect(self.settings) as conn:
            return publish.write_bundle(conn, content_ids, out, vectors)


def run(url: str, token: str, name: str, ref: str, path: Path, cache: Path,
        rev: str = "HEAD", default: bool = False, part_bytes: int = PART_BYTES,
        wait: bool = True, embed_url: str = "") -> dict[str, Any]:
    """Publish ``rev`` of the checkout at ``path`` as ``ref`` of repository ``name`` on the
    server at ``url``; returns what was sent and what the server did. With ``embed_url``
    the job embeds the commit's texts itself and sends the vectors the server lacks."""
    started = time.monotonic()
    repos.check_name(name)
    ref = refs.check_name(ref)
    gdir = gitread.git_dir(path)
    if gdir is None:
        raise NotFound(f"{path} is not a git checkout", hint="run it in the CI job's checkout")
    commit = gitread.resolve(gdir, rev)
    sent = Sent()
    server = Server(url, token, sent)
    try:
        state = server.post("/v1/publish/state", _json({"repo": name, "ref": ref,
                                                         "commit": commit}), counted=False)
        _check_versions(state)
        out: dict[str, Any] = {"repo": name, "ref": ref, "commit": commit,
                               "previous": state.get("ref_commit")}
        if state.get("ref_commit") == commit:
            out.update(up_to_date=True, sent=sent.__dict__, line=sent.line(),
                       seconds=round(time.monotonic() - started, 2))
            return out
        body: dict[str, Any] = {"repo": name, "ref": ref, "commit": commit, "default": default}
        if not state.get("commit_indexed"):
            cache.mkdir(parents=True, exist_ok=True)
            with LocalStore(cache, path) as store:
                lap = time.monotonic()
                tree = store.index(name, gdir, commit, ref)
                out["local_index_s"] = round(time.monotonic() - lap, 2)
                if embed_url:
                    lap = time.monotonic()
                    store.embed(tree, embed_url)
                    out["local_embed_s"] = round(time.monotonic() - lap, 2)
                body.update(files=[[p, s, lang, size] for p, s, lang, size, _c, _n in tree.files],
                            skipped=tree.skipped, gitignored=tree.gitignored)
                for attempt in range(RESENDS + 1):
                    _send_missing(server, store, name, tree, part_bytes, sent)
                    try:
                        answer = server.post("/v1/publish/commit", _json(body))
                        break
                    except Conflict:
                        if attempt == RESENDS:
                            raise
                        sent.notes.append("the server collected contents meanwhile: resent")
        else:
            answer = server.post("/v1/publish/commit", _json(body))
        out["job_id"] = answer.get("job_id")
        if wait and answer.get("job_id"):
            out["result"] = _wait(server, answer["job_id"], name, ref, commit)
        out.update(sent=sent.__dict__, line=sent.line(),
                   seconds=round(time.monotonic() - started, 2))
        return out
    finally:
        server.close()


def _check_versions(state: dict[str, Any]) -> None:
    for key, mine in (("schema_version", SCHEMA_VERSION), ("chunker_version", CHUNKER_VERSION),
                      ("bundle_version", publish.BUNDLE_VERSION)):
        theirs = state.get(key)
        if theirs != mine:
            raise InvalidRequest(f"the server is at {key.replace('_', ' ')} {theirs}; this "
                                 f"codenav is at {mine}",
                                 hint="publish with the codenav version the server runs")


def _send_missing(server: Server, store: LocalStore, name: str, tree: LocalTree,
                  part_bytes: int, sent: Sent) -> None:
    """Ask which contents (and vectors) the server lacks, and send them in bundles of
    ``part_bytes`` (of ``VECTORS_PER_PART`` vectors)."""
    addresses: dict[tuple[str, str], tuple[int, int]] = {}
    for _path, sha, language, _size, cid, length in tree.files:
        addresses.setdefault((sha, language), (cid, length))
    order = sorted(addresses)
    ask: dict[str, Any] = {"repo": name, "contents": [list(a) for a in order]}
    if tree.model is not None:
        ask["vectors"] = {"model": tree.model.name, "dim": tree.model.dim,
                          "hashes": [h.hex() for h in tree.vector_keys]}
    answer = server.post("/v1/publish/missing", _json(ask))
    todo = [addresses[order[i]] for i in answer["missing"]]
    if answer.get("vectors"):
        sent.notes.append(f"vectors {answer['vectors']}")
    part: list[int] = []
    size = 0
    # parts are written in the cache, so what a killed publish left is removed by the next
    work = store.cache / "parts"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        def send(content_ids: list[int], vectors: list[bytes]) -> None:
            out = work / f"part-{sent.parts}.tar"
            store.bundle(content_ids, out, (tree.model, vectors) if vectors else None)
            reply = server.post("/v1/publish/contents", out.read_bytes(), gz=False,
                                params={"repo": name})
            sent.notes.extend(reply.get("notes") or [])
            out.unlink()
            sent.blobs += len(content_ids)
            sent.vectors += len(vectors)
            sent.parts += 1

        for cid, length in todo:
            if part and size + length > part_bytes:
                send(part, [])
                part, size = [], 0
            part.append(cid)
            size += length
        if part:
            send(part, [])
        lacking = [tree.vector_keys[i] for i in answer.get("vectors_missing", [])]
        for i in range(0, len(lacking), VECTORS_PER_PART):
            send([], lacking[i:i + VECTORS_PER_PART])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _wait(server: Server, job_id: str, name: str, ref: str, commit: str) -> dict[str, Any]:
    """Until the publish job ends; the ref must then be at the commit."""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    info: dict[str, Any] = {}
    while time.monotonic() < deadline:
        info = server.get(f"/v1/jobs/{job_id}")
        if info.get("state") in ("finished", "failed", "stopped", "canceled"):
            break
        time.sleep(0.2)
    result: dict[str, Any] = info.get("result") or {}
    if info.get("state") != "finished":
        raise Unavailable(f"the server's publish job {job_id} ended {info.get('state')}: "
                          f"{info.get('error', '')}".strip(),
                          hint="the ref did not move; run codenav publish again")
    listed = server.get(f"/v1/repos/{name}/refs")
    now = next((r for r in listed.get("refs", []) if r["name"] == ref), None)
    if now is None or now.get("commit") != commit:
        failed = "; ".join(f.get("error", "") for f in result.get("failed", []))
        raise Unavailable(f"the ref {ref} is not at {commit[:12]} after the publish job"
                          + (f": {failed}" if failed else ""),
                          hint="run codenav publish again")
    return result
