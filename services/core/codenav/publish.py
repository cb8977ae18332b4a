"""CI publishing: a CI job indexes its checkout in a store of its own and sends the shared
server only what it lacks, then moves a ref there once everything is in.

The exchange (the ``codenav publish`` command is the client; every step needs a ``write`` token,
checked by the routes that call these functions: the ``publish`` action of the role table):

1. ``state``: where the ref is on the server, and whether it holds that commit already. A
   ref already at the commit: nothing to send. A commit held already: the ref just moves.
2. ``missing``: of the contents (blob sha and language) the commit's files need, the ones
   the server does not find for this team.
3. ``receive``: bundles of those contents (the archive format of snapshots,
   ``codenav.archive``: contents, chunks, symbols, graph facts and terms, as the CI job's
   parser made them), each merged in one transaction. They are the team's own
   (``contents.origin_team``): found by address for this team only, so an upload can never
   stand in for another team's parse of the same blob. Secrets were redacted by the CI
   job's parser: they never leave the CI machine. A CI job that embedded its texts sends
   the vectors the server lacks too (asked in step 2 by text hash), each with its text:
   the server keeps them only when it embeds with that model, every text hashes to its key,
   and a random sample, embedded here, agrees.
4. ``commit``: the commit's file list. Once every content is here, a publish job builds the
   commit tree (derived from a known one: unchanged rows copied, the graph layered and
   resolved here) and moves the ref in one transaction. A publish that stops before this
   step, or a job killed before the move, leaves the ref where it was; running it again
   sends only what is still missing.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from codenav import refs, repos
from codenav.access import Caller, Scope, record, visible_repos
from codenav.archive import ArchiveError, check_trailer, open_archive, read_member, stage_section
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.embed.client import EmbedClient
from codenav.errors import (
    CodenavError,
    Conflict,
    Forbidden,
    Interrupted,
    InvalidRequest,
    NotFound,
)
from codenav.index import commits
from codenav.index.ingest import FileResult
from codenav.index.walk import Skip
from codenav.lang import known_languages
from codenav.validate import check_value
from codenav.versions import CHUNKER_VERSION, GRAPH_VERSION, SCHEMA_VERSION

log = logging.getLogger("codenav.publish")

BUNDLE = "codenav-bundle"
BUNDLE_VERSION = 1
BUNDLE_MANIFEST = "codenav-bundle.json"
BUNDLE_TRAILER = "codenav-bundle.sha256"
MAX_FILES = 1_000_000
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
"""A commit id, or a blob id."""


def _find(conn: psycopg.Connection, caller: Caller, name: str) -> Scope | None:
    """The caller's repository of that name, or None when it has none."""
    from codenav.access import resolve

    try:
        return resolve(conn, caller, name)
    except NotFound:
        return None


def _team(caller: Caller, scope: Scope | None) -> int:
    if scope is not None:
        return scope.repo.team_id
    if caller.team_id is None:
        raise InvalidRequest("publishing needs a token of a team",
                             hint="codenav token create --role write --team T")
    return caller.team_id


def check_commit(commit: str) -> str:
    if not _HEX40.match(commit or ""):
        raise InvalidRequest(f"not a full commit id: {commit!r}", hint="40 hex digits")
    return commit


def versions() -> dict[str, int]:
    return {"schema_version": SCHEMA_VERSION, "chunker_version": CHUNKER_VERSION,
            "graph_version": GRAPH_VERSION, "bundle_version": BUNDLE_VERSION}


def state(conn: psycopg.Connection, caller: Caller, name: str, ref: str,
          commit: str) -> dict[str, Any]:
    """Where ``ref`` of repository ``name`` is, and whether ``commit`` is held already."""
    ref, commit = refs.check_name(ref), check_commit(commit)
    scope = _find(conn, caller, name)
    out: dict[str, Any] = {"repo": name, "exists": scope is not None, "ref": ref,
                           "ref_commit": None, "commit_indexed": False, **versions()}
    if scope is not None:
        row = conn.execute(q.REF_TREE, scope.params(name=ref)).fetchone()
        out["ref_commit"] = row[2] if row else None
        out["commit_indexed"] = _tree_ready(conn, scope, commit)
    return out


def missing(conn: psycopg.Connection, caller: Caller, name: str, contents: list[list[str]],
            vectors: dict[str, Any] | None = None,
            embedder: EmbedClient | None = None) -> dict[str, Any]:
    """Which of ``contents`` ([sha, language] pairs) this server lacks for the caller's
    team: their positions in the list; and with ``vectors`` (model, dim and text hashes in
    hex), which of those it lacks, when it takes vectors of that model (it must embed with
    it, to check a sample of what it is sent)."""
    team = _team(caller, _find(conn, caller, name))
    shas, languages = _addresses(contents)
    present = {(s, lang) for s, lang in conn.execute(q.PUBLISH_PRESENT, {
        "shas": shas, "languages": languages, "chunker": CHUNKER_VERSION, "team": team})}
    lacking = [i for i, pair in enumerate(zip(shas, languages, strict=True))
               if pair not in present]
    out: dict[str, Any] = {"missing": lacking, "of": len(shas)}
    if vectors is not None:
        refused = _vectors_refused(embedder, vectors.get("model"), vectors.get("dim"))
        if refused:
            out["vectors"] = refused
        else:
            hashes = _hashes(vectors.get("hashes"))
            held = {bytes(h) for (h,) in conn.execute(q.PUBLISH_VECTORS_PRESENT, {
                "model": vectors["model"], "hashes": hashes})}
            out["vectors_missing"] = [i for i, h in enumerate(hashes) if h not in held]
    return out


def _hashes(value: Any) -> list[bytes]:
    if not isinstance(value, list) or len(value) > 10 * MAX_FILES:
        raise InvalidRequest("vectors.hashes is a list of text hashes (hex)")
    try:
        out = [bytes.fromhex(str(h)) for h in value]
    except ValueError:
        raise InvalidRequest("a text hash is 64 hex digits") from None
    if any(len(h) != 32 for h in out):
        raise InvalidRequest("a text hash is 64 hex digits")
    return out


def _vectors_refused(embedder: EmbedClient | None, model: Any, dim: Any) -> str | None:
    """Why this server takes no vectors of ``model`` (None: it takes them)."""
    if embedder is None:
        return "not taken: this server has no embedder to check them (it embeds nothing)"
    try:
        info = embedder.info()
    except CodenavError as exc:
        return f"not taken now: the embedder is unavailable ({exc.message})"
    if (info.name, info.dim) != (model, dim):
        return f"not taken: this server embeds with {info.name!r} ({info.dim} dims), not " \
            f"{model!r} ({dim} dims)"
    return None


def _addresses(contents: list[list[str]]) -> tuple[list[str], list[str]]:
    if len(contents) > MAX_FILES:
        raise InvalidRequest(f"more than {MAX_FILES} contents in one publish")
    languages_known = known_languages()
    shas, languages = [], []
    for item in contents:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise InvalidRequest("a content is [sha, language]")
        sha, language = str(item[0]), str(item[1])
        if not _HEX40.match(sha) or language not in languages_known:
            raise InvalidRequest(f"not a content address: {sha[:45]!r}, {language[:40]!r}")
        shas.append(sha)
        languages.append(language)
    return shas, languages


def write_bundle(conn: psycopg.Connection, content_ids: list[int], out: Path,
                 vectors: tuple[Any, list[bytes]] | None = None) -> int:
    """Write the rows of ``content_ids`` (of a CI job's local store) as a bundle at
    ``out``, and with ``vectors`` (a ``vectors.Model`` and text hashes) their vectors and
    texts; returns its size in bytes."""
    import tempfile

    from codenav.archive import write_section, write_tar

    work = Path(tempfile.mkdtemp(prefix=".bundle-", dir=out.parent))
    try:
        model, hashes = vectors if vectors is not None else (None, [])
        params = {"contents": content_ids, "model": model.id if model else 0,
                  "hashes": hashes}
        sections = [write_section(conn, s, q.PUBLISH_EXPORT[s], params, work)
                    for s in q.PUBLISH_SECTIONS]
        manifest = json.dumps({"format": BUNDLE, **versions(), "sections": sections,
                               "contents": len(content_ids), "vectors": len(hashes),
                               "model": {"name": model.name, "dim": model.dim} if model else None},
                              sort_keys=True).encode()
        write_tar(out, work, BUNDLE_MANIFEST, manifest, sections, BUNDLE_TRAILER)
    finally:
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()
    return out.stat().st_size


def receive(conn: psycopg.Connection, settings: Settings, caller: Caller, name: str,
            path: Path, embedder: EmbedClient | None = None) -> dict[str, Any]:
    """Merge the bundle at ``path`` into the store as the caller's team's own contents, in
    one transaction (a damaged or foreign bundle changes nothing). Its vectors are kept
    when this server embeds with their model and a sample of them, embedded here, agrees;
    a text that does not hash to its key, or a sample that disagrees, refuses the bundle."""
    team = _team(caller, _find(conn, caller, name))
    where = "the bundle"
    merged: dict[str, int] = {}
    with open_archive(path, "a codenav bundle") as tar:
        first = tar.next()
        if first is None or first.name != BUNDLE_MANIFEST or first.size > 1 << 20:
            raise ArchiveError(f"{where} is not a codenav bundle")
        raw = read_member(tar, first, where)
        try:
            manifest = json.loads(raw)
        except ValueError:
            raise ArchiveError(f"{where} is corrupted: its manifest is not JSON") from None
        if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE:
            raise ArchiveError(f"{where} is not a codenav bundle")
        for key, value in versions().items():
            if key != "graph_version" and manifest.get(key) != value:
                raise ArchiveError(f"{where} was written by a codenav at {key.replace('_', ' ')}"
                                   f" {manifest.get(key)}; this server is at {value}",
                                   hint="publish with the codenav version of the server")
        listed = [s.get("name") for s in manifest.get("sections", [])]
        if listed != list(q.PUBLISH_SECTIONS):
            raise ArchiveError(f"{where} has sections {listed}, not {list(q.PUBLISH_SECTIONS)}")
        with conn.transaction():
            for entry in manifest["sections"]:
                stage_section(conn, tar, entry, where)
            check_trailer(tar, BUNDLE_TRAILER, raw, where)
            bad = conn.execute(q.PUBLISH_STAGED_BAD, {"chunker": CHUNKER_VERSION,
                                                      "max_bytes": settings.max_file_bytes * 4
                                                      }).fetchone()
            orphans = conn.execute(q.PUBLISH_STAGED_ORPHANS).fetchone()
            if (bad and bad[0]) or (orphans and orphans[0]):
                raise InvalidRequest(f"{where} holds rows that are not contents of this codenav "
                                     "(chunker, blob id, size) or rows of no content")
            notes: list[str] = []
            vectors_model = _check_vectors(conn, manifest.get("model"), embedder, notes)
            conn.execute(q.PUBLISH_MAPS_CREATE)
            conn.execute(q.WRITERS_SHARED_LOCK)  # no garbage collection while it merges
            try:
                for table, statement in q.PUBLISH_MERGE:
                    merged[table] = conn.execute(statement, {"team": team}).rowcount
                if vectors_model is not None:
                    merged["embeddings"] = conn.execute(q.PUBLISH_MERGE_VECTORS,
                                                        {"model": vectors_model}).rowcount
            finally:
                conn.execute(q.WRITERS_SHARED_UNLOCK)
    return {"received": int(manifest.get("contents", 0)),
            "vectors": int(manifest.get("vectors", 0)), "inserted": merged, "notes": notes}


SAMPLE = 8
"""Vectors of a bundle embedded again here, chosen at random, before any is kept."""
MIN_COSINE = 0.95
"""How close each must be to this server's own (an int8 model and an fp32 one of the same
weights agree to 0.98 and more)."""


def _check_vectors(conn: psycopg.Connection, model: Any, embedder: EmbedClient | None,
                   notes: list[str]) -> int | None:
    """The model id to keep the staged vectors under, or None (none staged, or not taken:
    ``notes`` says why). Raises for a bundle whose vectors are forged or of another model."""
    from codenav.embed import vectors as vec

    staged = conn.execute(q.PUBLISH_STAGED_VECTORS).fetchone()
    if not staged or not staged[0]:
        return None
    if not isinstance(model, dict):
        raise InvalidRequest("the bundle holds vectors but names no model")
    refused = _vectors_refused(embedder, model.get("name"), model.get("dim"))
    if refused or embedder is None:
        notes.append(f"{staged[0]} vectors {refused}")
        return None
    bad = conn.execute(q.PUBLISH_VECTORS_BAD, {"dim": int(model["dim"])}).fetchone()
    if bad and bad[0]:
        raise InvalidRequest(f"{bad[0]} vectors of the bundle are not of their text, or not "
                             f"of {model['dim']} dimensions")
    sample = conn.execute(q.PUBLISH_VECTORS_SAMPLE, {"k": SAMPLE}).fetchall()
    mine = embedder.embed([str(text) for text, _vec in sample])
    for (_text, theirs), own in zip(sample, mine, strict=True):
        other = json.loads(theirs)
        cosine = sum(a * b for a, b in zip(own, other, strict=True)) / (
            max(sum(b * b for b in other), 1e-12) ** 0.5)
        if cosine < MIN_COSINE:
            raise InvalidRequest(f"the bundle's vectors are not {model['name']!r}'s: one is at "
                                 f"cosine {cosine:.3f} from this server's", hint="publish "
                                 "without vectors, or embed with the server's model")
    return vec.ensure_model(conn, str(model["name"]), int(model["dim"])).id


# --- the commit: its file list, then the publish job -------------------------------------
def _files(body: dict[str, Any]) -> tuple[list[list[Any]], list[Skip], int]:
    files = body.get("files")
    skipped = body.get("skipped") or []
    if not isinstance(files, list) or not isinstance(skipped, list):
        raise InvalidRequest("files and skipped are lists")
    if len(files) + len(skipped) > MAX_FILES:
        raise InvalidRequest(f"more than {MAX_FILES} files in one commit")
    seen: set[str] = set()
    out = []
    for item in files:
        if not isinstance(item, list) or len(item) != 4:
            raise InvalidRequest("a file is [path, sha, language, size]")
        path, sha, language, size = _path(item[0]), str(item[1]), str(item[2]), item[3]
        if path in seen or not _HEX40.match(sha) or not isinstance(size, int) or size < 0:
            raise InvalidRequest(f"bad file entry for {path!r}")
        seen.add(path)
        out.append([path, sha, language, size])
    skips = []
    for item in skipped:
        if not isinstance(item, list) or len(item) != 4:
            raise InvalidRequest("a skipped file is [path, reason, detail, size]")
        skips.append(Skip(_path(item[0]), str(item[1])[:40], str(item[2])[:300],
                          int(item[3]) if isinstance(item[3], int) else 0))
    gitignored = body.get("gitignored", 0)
    return out, skips, gitignored if isinstance(gitignored, int) else 0


def _path(value: Any) -> str:
    """A repository-relative POSIX path, as a commit's tree has them."""
    path = str(value)
    if not path or len(path) > 4096 or path.startswith("/") or "\0" in path or \
            any(part in ("", ".", "..") for part in path.split("/")):
        raise InvalidRequest(f"not a path inside a repository: {path[:80]!r}")
    return path


@dataclass(frozen=True)
class Accepted:
    """A commit accepted: the publish job builds its tree and moves the ref."""

    scope: Scope
    ref: str
    commit: str
    payload: bytes
    """What the job reads (gzip JSON: the file list, who published it)."""


def commit(conn: psycopg.Connection, caller: Caller, raw: bytes) -> Accepted:
    """Accept the commit's file list (gzip JSON) once every content it needs is here (the
    caller queues the publish job with ``payload``); a commit held already needs no list."""
    try:
        body = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (OSError, ValueError, EOFError):
        raise InvalidRequest("the commit is not (gzip) JSON") from None
    if not isinstance(body, dict):
        raise InvalidRequest("the commit is a JSON object")
    check_value(body, "")
    name, ref = str(body.get("repo") or ""), refs.check_name(str(body.get("ref") or ""))
    sha = check_commit(str(body.get("commit") or ""))
    scope = _find(conn, caller, name)
    team = _team(caller, scope)
    if scope is None or not _tree_ready(conn, scope, sha):
        files, _skips, _ignored = _files(body)
        shas = [f[1] for f in files]
        languages = [f[2] for f in files]
        found = {(s, lang) for s, lang, _id in conn.execute(q.PUBLISH_CONTENT_IDS, {
            "shas": shas, "languages": languages, "chunker": CHUNKER_VERSION, "team": team})}
        lacking = sum(1 for pair in zip(shas, languages, strict=True) if pair not in found)
        if lacking:
            raise Conflict(f"{lacking} contents of commit {sha[:12]} are not on the server",
                           hint="send them first (codenav publish does; run it again)")
    if scope is None:
        scope = _create(conn, caller, name, ref)
    payload = gzip.compress(json.dumps({**body, "repo": scope.name, "ref": ref,
                                        "by": caller.actor}).encode(), 1)
    return Accepted(scope, ref, sha, payload)


def _tree_ready(conn: psycopg.Connection, scope: Scope, sha: str) -> bool:
    row = conn.execute(q.TREE_COMMIT_READY, scope.params(commit=sha)).fetchone()
    return bool(row and row[0])


def _create(conn: psycopg.Connection, caller: Caller, name: str, ref: str) -> Scope:
    """A repository CI publishes to, created at its first publish (nothing on this
    server's disk: its default ref is the first one published)."""
    if caller.restricted:
        raise Forbidden(f"this token may not create the repository {name!r}",
                        hint="publish to a granted repository, or with a token of the team "
                        "that is not limited")
    repos.check_name(name)
    assert caller.team_id is not None
    row = conn.execute(q.REPO_REMOTE_INSERT, {"name": name, "team": caller.team_id,
                                              "ref": ref}).fetchone()
    assert row is not None
    record(conn, caller, "repo.register", name, caller.team_id, {"source": "remote", "ref": ref})
    repo = repos.repo_row(row)
    return Scope(caller, repo, tuple(r.id for r in visible_repos(conn, caller)))


def build(settings: Settings, repo_id: int, pending: dict[str, bytes],
          stop: threading.Event | None = None) -> dict[str, Any]:
    """The publish job: for each ref published since the last run (``pending``: ref ->
    payload), build its commit tree from the file list (contents are all here), layered on
    a known tree, and move the ref; then collect what no ref needs any more. ``done``
    lists the refs handled (their payloads can go)."""
    out: dict[str, Any] = {"moved": [], "failed": [], "done": []}
    with connect(settings, application_name="codenav-publish") as conn:
        repo = repos.get(conn, repo_id)
        if repo is None:
            return {"refused": f"no repository with id {repo_id}"}
        conn.execute(q.REPO_LOCK, (repo_id,))
        conn.execute(q.WRITERS_SHARED_LOCK)
        try:
            for ref, payload in sorted(pending.items()):
                if stop is not None and stop.is_set():  # the rest runs again (resumable)
                    raise Interrupted("the worker is stopping")
                try:
                    out["moved"].append(_build_one(settings, conn, repo, ref, payload))
                except Conflict as exc:  # collected since it was sent: the client resends
                    out["failed"].append({"ref": ref, "error": exc.message})
                out["done"].append(ref)
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute(q.WRITERS_SHARED_UNLOCK)
                conn.execute(q.REPO_UNLOCK, (repo_id,))
        out["collected"] = refs.collect_trees(conn, repo_id)
    return out


def _build_one(settings: Settings, conn: psycopg.Connection, repo: repos.Repo, ref: str,
               payload: bytes) -> dict[str, Any]:
    started = time.monotonic()
    body = json.loads(gzip.decompress(payload))
    sha = check_commit(str(body["commit"]))
    summary = commits.CommitSummary(0, sha)
    row = conn.execute(q.TREE_BY_COMMIT, (repo.id, sha)).fetchone()
    if row is not None and row[1]:
        summary.tree_id, summary.reused = int(row[0]), True
    else:
        files, skips, gitignored = _files(body)
        ids = {(s, lang): int(cid) for s, lang, cid in conn.execute(q.PUBLISH_CONTENT_IDS, {
            "shas": [f[1] for f in files], "languages": [f[2] for f in files],
            "chunker": CHUNKER_VERSION, "team": repo.team_id})}
        results = []
        for path, blob, language, size in files:
            cid = ids.get((blob, language))
            if cid is None:
                raise Conflict(f"content {blob[:12]} of {path} is no longer on the server")
            results.append(FileResult(path, size, 0, blob, language, cid))
        base = commits.neighbour(conn, repo.id, ref, int(row[0]) if row else 0, repo.default_ref)
        commits.build_tree(settings, conn, repo.id, sha, results, skips, gitignored, base,
                           summary)
    previous = refs.move(conn, repo.id, ref, summary.tree_id, sha, repo.keep,
                         str(body.get("by") or "publish")[:200])
    if body.get("default") and repo.default_ref != ref:
        conn.execute(q.REPO_SET_DEFAULT_REF, (ref, repo.id))
    summary.seconds = time.monotonic() - started
    log.info("repo %s: published %s -> %s (tree %s, %d changed) in %.2fs", repo.id, ref,
             sha[:12], summary.tree_id, summary.changed, summary.seconds)
    return {"ref": ref, "commit": sha, "previous": previous, "files": summary.files,
            "changed": summary.changed, "reused": summary.reused,
            "seconds": round(summary.seconds, 3)}
