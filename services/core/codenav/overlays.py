"""Overlays: a developer's uncommitted edits on top of the index the team shares.

The stdio adapter on a developer's machine compares its checkout with a tree the server
holds (the commit it is at when the server has it, else the merge-base with a followed
branch, else the repository's default tree) and keeps one overlay per session:

1. ``open_overlay``: the base is chosen among the commits the adapter names; the overlay
   gets a tree of its own (kind ``overlay``), layered on the base like a commit tree, so
   with nothing sent yet it reads exactly as the base.
2. ``base_files``: the base's file list (path, blob id) and the paths it skipped, which
   the adapter diffs its checkout against.
3. ``send``: the whole set of the checkout's differences (path -> blob id, or deleted).
   Blobs the server lacks are asked for first (``receive_blobs``: each one checked against
   its id); once all are here the state is recorded and a job on the overlay lane (never
   behind bulk indexing) parses what is new, rewrites the overlay's tree (search, read,
   outline, find_files see it as soon as that commits: ``wait_stored``), then its graph
   (references into and out of the changed files) and its vectors.

A tool call carrying an overlay id (the adapter sends it with each call) is answered from
the overlay's tree, for the token that made it only; results from its files say
``source: "local"``. Past the size limits an overlay holds nothing and answers say so. An
overlay unused for ``overlay_ttl_s`` is dropped with what only it used.
"""

from __future__ import annotations

import io
import logging
import secrets
import tarfile
import threading
import time
from typing import Any

import psycopg

from codenav import repos
from codenav.access import Caller, Overlay, Scope, resolve, visible_repos
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.errors import Forbidden, Gone, Interrupted, InvalidRequest, NotFound
from codenav.graph import build as graph
from codenav.graph import facts
from codenav.index import commits, terms
from codenav.index.blob import git_blob_sha
from codenav.index.defaults import path_reason
from codenav.index.ingest import Batch, FileResult, ingest
from codenav.index.walk import FileEntry
from codenav.lang import language_for
from codenav.versions import CHUNKER_VERSION

log = logging.getLogger("codenav.overlays")

NEWER_POLL_S = 0.025
"""How often a graph build looks for a newer state of its overlay (which ends it)."""
MAX_COMMITS = 32
"""Commits an adapter may name as candidate bases."""
BLOB_REQUEST_BYTES = 64 * 1024 * 1024
"""The most one upload of blobs may hold."""
IGNORED_REASONS = frozenset({"gitignored", "ignored_dir"})
"""Skip reasons of the base that an overlay file at the same path keeps."""


def _hex40(value: Any) -> str:
    text = str(value or "")
    if len(text) != 40 or any(c not in "0123456789abcdef" for c in text):
        raise InvalidRequest(f"not a full commit or blob id: {text[:45]!r}", hint="40 hex digits")
    return text


def _path(value: Any) -> str:
    path = str(value or "")
    if not path or len(path) > 4096 or path.startswith("/") or "\0" in path or "\\" in path \
            or any(part in ("", ".", "..") for part in path.split("/")):
        raise InvalidRequest(f"not a path inside a repository: {path[:80]!r}")
    return path


def _team(scope: Scope) -> int:
    return scope.repo.team_id


def _owner(caller: Caller) -> None:
    if caller.token_id is None:
        raise Forbidden("an overlay belongs to a token", hint="call with the API token the "
                        "adapter uses (CODENAV_TOKEN)")


# --- the request side (the API) ------------------------------------------------------------
def open_overlay(conn: psycopg.Connection, caller: Caller, name: str | None,
                 commits_named: list[Any], checkout: str = "") -> dict[str, Any]:
    """A new overlay of repository ``name`` (None: the one of the caller's repositories
    that holds one of the commits, or the only one) based on the first of
    ``commits_named`` the server holds a tree of (else the repository's default tree)."""
    _owner(caller)
    if not isinstance(commits_named, list) or len(commits_named) > MAX_COMMITS:
        raise InvalidRequest(f"commits is a list of at most {MAX_COMMITS} commit ids")
    wanted = [_hex40(c) for c in commits_named]
    visible = [r.id for r in visible_repos(conn, caller)]
    repo_id: int | None = None
    if name:
        repo_id = resolve(conn, caller, name).id
    rows = conn.execute(q.OVERLAY_BASES, {"visible": visible, "repo": repo_id,
                                          "commits": wanted}).fetchall()
    rank = {c: i for i, c in enumerate(wanted)}
    rows.sort(key=lambda r: (rank[r[2]], r[1] != "commit"))
    if repo_id is None:
        found = sorted({int(r[3]) for r in rows})
        if len(found) > 1:
            raise InvalidRequest("several repositories hold this checkout's commits; say which",
                                 hint="set CODENAV_REPO")
        scope = resolve(conn, caller, None) if not found else \
            resolve(conn, caller, next(r.name for r in visible_repos(conn, caller)
                                       if r.id == found[0]))
    else:
        scope = resolve(conn, caller, name)
    rows = [r for r in rows if int(r[3]) == scope.id]
    if rows:
        base, kind, commit, _repo, ref = rows[0]
        how = "the checkout's commit" if commit == wanted[0] else "its merge-base with " + \
            (ref or "a known commit")
    else:
        base, kind, commit, ref = scope.at.id, scope.at.kind, scope.at.commit, scope.at.ref
        how = "the repository's default tree (no commit of the checkout is indexed)"
    if not base:
        raise NotFound(f"nothing of {scope.name!r} is indexed yet to overlay",
                       hint="index or publish it first")
    oid = secrets.token_urlsafe(18)
    with conn.transaction():
        row = conn.execute(q.OVERLAY_TREE_INSERT, {"repo": scope.id, "commit": commit,
                                                   "visible": visible}).fetchone()
        assert row is not None
        tree = int(row[0])
        commits.layer_on(conn, tree, int(base), [])  # reads as its base until files come
        if graph.is_current(conn, int(base)):  # and the base's graph is its own
            graph.update(conn, tree, [], [], current=True)
        conn.execute(q.OVERLAY_INSERT, {"id": oid, "repo": scope.id, "token": caller.token_id,
                                        "base": base, "ref": ref, "tree": tree,
                                        "checkout": checkout[:500], "visible": visible})
    log.info("overlay %s of repo %s for %s on tree %s (%s)", oid[:8], scope.id, caller.actor,
             base, how)
    return {"overlay": oid, "repo": scope.name,
            "base": {"ref": ref, "commit": commit, "worktree": kind == "worktree",
                     "tree": int(base), "chosen": how, "matched": bool(rows)}}


def _get(conn: psycopg.Connection, caller: Caller, overlay_id: str) -> tuple[Overlay, Scope]:
    """The caller's overlay and its repository's scope; ``Gone`` when it is not there."""
    scope = resolve(conn, caller, None, overlay=overlay_id)
    assert scope.at.overlay is not None
    return scope.at.overlay, scope


def repo_of(conn: psycopg.Connection, caller: Caller, overlay_id: str) -> int:
    """The repository id of the caller's overlay (its jobs are queued per repository)."""
    return _get(conn, caller, overlay_id)[0].repo_id


def base_files(conn: psycopg.Connection, caller: Caller, overlay_id: str) -> dict[str, Any]:
    """What the overlay's base holds: its files (path, blob id) and the paths it skipped."""
    overlay, scope = _get(conn, caller, overlay_id)
    params = scope.params(tree=overlay.base_tree)
    files = [[p, s] for p, s in conn.execute(q.OVERLAY_BASE_FILES, params)]
    skipped = [p for (p,) in conn.execute(q.OVERLAY_BASE_SKIPPED, params)]
    return {"overlay": overlay.id, "tree": overlay.base_tree, "files": files,
            "skipped": skipped}


def send(conn: psycopg.Connection, settings: Settings, caller: Caller, overlay_id: str,
         body: dict[str, Any]) -> dict[str, Any]:
    """Record the checkout's differences from the base (``files``: [path, blob id or None
    when deleted, size]) once every blob is here: else ``missing`` lists the blob ids to
    upload first. Returns the state's ``version`` (the caller queues the overlay job)."""
    overlay, scope = _get(conn, caller, overlay_id)
    files = body.get("files")
    if not isinstance(files, list):
        raise InvalidRequest("files is a list of [path, blob id or null, size]")
    state: dict[str, str | None] = {}
    total = 0
    for item in files:
        if not isinstance(item, list) or len(item) != 3:
            raise InvalidRequest("a file is [path, blob id or null, size]")
        path = _path(item[0])
        sha = None if item[1] is None else _hex40(item[1])
        size = item[2]
        if not isinstance(size, int) or size < 0:
            raise InvalidRequest(f"bad size for {path!r}")
        if path in state:
            raise InvalidRequest(f"{path!r} is listed twice")
        state[path] = sha
        total += size if sha else 0
    over = None
    if len(state) > settings.overlay_max_files:
        over = f"{len(state)} changed files is more than the {settings.overlay_max_files} an " \
               "overlay holds (CODENAV_OVERLAY_MAX_FILES)"
    elif total > settings.overlay_max_bytes:
        over = f"{total} bytes of changed files is more than the {settings.overlay_max_bytes} " \
               "an overlay holds (CODENAV_OVERLAY_MAX_BYTES)"
    if over is None:
        lacking = _missing(conn, _team(scope), {p: s for p, s in state.items()
                                                if s is not None and path_reason(p) is None})
        if lacking:
            return {"overlay": overlay.id, "missing": lacking}
    params = scope.params(overlay=overlay.id)
    with conn.transaction():
        conn.execute(q.OVERLAY_FILES_CLEAR, params)
        paths = sorted(state)
        conn.execute(q.OVERLAY_FILES_INSERT, {**params, "paths": paths,
                                              "shas": [state[p] for p in paths]})
        row = conn.execute(q.OVERLAY_SENT, {**params, "over": over}).fetchone()
    assert row is not None
    out: dict[str, Any] = {"overlay": overlay.id, "version": int(row[0]), "files": len(state)}
    if over:
        out["over_limit"] = over + "; answers come from the base until the checkout has " \
            "fewer changes"
    return out


def _missing(conn: psycopg.Connection, team: int, state: dict[str, str]) -> list[str]:
    """The blob ids of ``state`` (path -> blob id) neither uploaded nor parsed here."""
    shas = sorted(set(state.values()))
    if not shas:
        return []
    held = {s for (s,) in conn.execute(q.OVERLAY_BLOBS_HELD, {"team": team, "shas": shas})}
    parsed = {(s, lang) for s, lang in conn.execute(q.OVERLAY_CONTENTS_HELD, {
        "team": team, "shas": shas, "chunker": CHUNKER_VERSION})}
    return sorted({s for p, s in state.items()
                   if s not in held and (s, language_for(p)) not in parsed})


def receive_blobs(conn: psycopg.Connection, settings: Settings, caller: Caller,
                  overlay_id: str, data: bytes) -> dict[str, Any]:
    """Keep the blobs of an upload (a tar of files named by their blob id) for the
    overlay's job to parse; one whose bytes do not hash to its name refuses the upload."""
    overlay, scope = _get(conn, caller, overlay_id)
    blobs: list[tuple[str, bytes]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar:
                if not member.isfile():
                    raise InvalidRequest(f"the upload holds {member.name[:50]!r}, not a file")
                name = _hex40(member.name)
                if member.size > settings.max_file_bytes:
                    raise InvalidRequest(f"blob {name[:12]} is larger than the "
                                         f"{settings.max_file_bytes} bytes a file may have",
                                         hint="the adapter does not send such files")
                handle = tar.extractfile(member)
                assert handle is not None
                raw = handle.read()
                if git_blob_sha(raw) != name:
                    raise InvalidRequest(f"blob {name[:12]} does not hash to its name")
                blobs.append((name, raw))
    except tarfile.TarError as exc:
        raise InvalidRequest(f"the upload is not a tar of blobs: {exc}") from None
    team = _team(scope)
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(q.OVERLAY_BLOB_PUT, [(team, sha, raw) for sha, raw in blobs])
    return {"overlay": overlay.id, "received": len(blobs),
            "bytes": sum(len(raw) for _sha, raw in blobs)}


def progress(conn: psycopg.Connection, caller: Caller, overlay_id: str) -> tuple[int, int, int]:
    """(version sent, version stored, version graphed) of the caller's overlay."""
    overlay, scope = _get(conn, caller, overlay_id)
    row = conn.execute(q.OVERLAY_PROGRESS, scope.params(overlay=overlay.id)).fetchone()
    if row is None:
        raise Gone("the overlay was dropped meanwhile")
    return overlay.version, int(row[0]), int(row[1])


def wait_stored(conn: psycopg.Connection, caller: Caller, overlay_id: str, version: int,
                timeout_s: float) -> dict[str, Any]:
    """Until the state ``version`` is stored (searchable), at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        _sent, stored, graphed = progress(conn, caller, overlay_id)
        if stored >= version or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    out: dict[str, Any] = {"stored": stored >= version, "graph": graphed >= version}
    if stored < version:
        out["note"] = f"not stored within {timeout_s:.0f} s (the overlay lane is busy or " \
            "down): answers include it once it is"
    return out


def wait_graph(conn: psycopg.Connection, scope: Scope, timeout_s: float) -> Scope:
    """The scope again once its overlay's graph is built (at most ``timeout_s``; past it the
    answer's ``unseen`` says the graph of the edits is being rebuilt)."""
    overlay = scope.at.overlay
    assert overlay is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = conn.execute(q.OVERLAY_PROGRESS, scope.params(overlay=overlay.id)).fetchone()
        if row is None or int(row[1]) >= overlay.version:
            break
        time.sleep(0.02)
    return resolve(conn, scope.caller, scope.name, overlay=overlay.id)


def drop(conn: psycopg.Connection, caller: Caller, overlay_id: str) -> dict[str, Any]:
    """Drop the caller's overlay now (an adapter that exits)."""
    overlay, scope = _get(conn, caller, overlay_id)
    row = conn.execute(q.OVERLAY_DROP, scope.params(overlay=overlay.id,
                                                    token=caller.token_id)).fetchone()
    if row is not None:
        _delete_tree(conn, int(row[0]))
    return {"overlay": overlay.id, "dropped": row is not None}


def listed(conn: psycopg.Connection, scope: Scope) -> list[dict[str, Any]]:
    """The caller's overlays of the scope's repository (``status``)."""
    rows = conn.execute(q.OVERLAY_LIST, scope.params(token=scope.caller.token_id)).fetchall()
    return [{"overlay": oid[:8], "checkout": checkout, "base_ref": ref, "base_commit": commit,
             "created_at": created.isoformat(), "used_at": touched.isoformat(), "files": n,
             **({"over_limit": over} if over else {})}
            for oid, checkout, ref, commit, created, touched, n, over in rows]


def local_paths(conn: psycopg.Connection, scope: Scope) -> set[str]:
    """The paths the scope's overlay holds (indexed ones): answers mark them local."""
    if scope.at.overlay is None:
        return set()
    return {p for p, sha, skip in conn.execute(q.OVERLAY_FILES,
                                               scope.params(overlay=scope.at.overlay.id))
            if sha is not None and skip is None}


# --- the overlay job (a worker) -----------------------------------------------------------
def build_pending(settings: Settings, repo_id: int,
                  stop: threading.Event | None = None) -> dict[str, Any]:
    """Bring every overlay of the repository with work left in line with its state, then
    drop the expired ones."""
    out: dict[str, Any] = {"built": [], "expired": 0}
    with connect(settings, application_name="codenav-overlay") as conn:
        for (oid,) in conn.execute(q.OVERLAYS_PENDING, (repo_id,)).fetchall():
            if stop is not None and stop.is_set():
                raise Interrupted("the worker is stopping")
            done = build_one(settings, conn, str(oid))
            if done:
                out["built"].append(done)
        out["expired"] = expire(settings, conn)
    return out


def build_one(settings: Settings, conn: psycopg.Connection,
              overlay_id: str) -> dict[str, Any] | None:
    """Bring the overlay's tree in line with its latest state: its files first (one
    transaction: searchable when it commits), then its graph. A state sent while the graph
    is built ends that build (it is obsolete): the new state is stored first."""
    conn.execute(q.OVERLAY_LOCK, (overlay_id,))
    try:
        done: dict[str, Any] | None = None
        for _round in range(100):
            row = conn.execute(q.OVERLAY_STATE, (overlay_id,)).fetchone()
            if row is None:  # dropped or expired meanwhile
                return done
            (repo_id, tree, base, version, stored, graphed, base_version, over, base_now,
             team) = row
            if stored < version or base_version != base_now:
                started = time.monotonic()
                wanted = [] if over else [(str(p), s) for p, s in
                                          conn.execute(q.OVERLAY_WANTED, (overlay_id,))]
                changes = _store_files(settings, conn, overlay_id, int(repo_id), int(tree),
                                       int(base), int(team), wanted, int(version),
                                       int(base_now))
                done = {"overlay": overlay_id[:8], "version": int(version),
                        "files": len(changes[0]), "deleted": len(changes[1]),
                        "stored_s": round(time.monotonic() - started, 3)}
                log.info("overlay %s: version %s stored in %.3fs (%d changed, %d deleted)",
                         overlay_id[:8], version, done["stored_s"], len(changes[0]),
                         len(changes[1]))
                stored = version
                pending = changes
                if not changes[0] and not changes[1]:
                    continue  # empty: its graph is its base's (else built on the next round)
            elif graphed < stored:  # a build a stop or a newer state cut short
                pending = _stored_changes(conn, overlay_id, int(tree), int(base))
            else:
                return done
            started = time.monotonic()
            if not _graph(settings, conn, overlay_id, int(tree), int(base), int(stored),
                          pending):
                continue  # a newer state came in: store it first
            conn.execute(q.TREE_READY, (0, tree))
            conn.execute(q.OVERLAY_GRAPHED, (stored, overlay_id))
            log.info("overlay %s: version %s graph in %.3fs", overlay_id[:8], stored,
                     time.monotonic() - started)
        return done
    finally:
        conn.execute(q.OVERLAY_UNLOCK, (overlay_id,))


Changes = tuple[list[str], list[str], dict[str, int]]
"""(changed paths, deleted paths, the base's content of the changed paths it holds)."""


def _graph(settings: Settings, conn: psycopg.Connection, overlay_id: str, tree: int,
           base: int, version: int, changes: Changes) -> bool:
    """Build the overlay tree's graph for state ``version``; False when a newer state came
    in meanwhile (the build stopped, nothing written)."""
    changed, deleted, previous = changes
    newer = threading.Event()
    done = threading.Event()

    def watch() -> None:
        with connect(settings, application_name="codenav-overlay-watch") as own:
            while not done.wait(NEWER_POLL_S):
                row = own.execute(q.OVERLAY_VERSION, (overlay_id,)).fetchone()
                if row is None or int(row[0]) > version:
                    newer.set()
                    return

    watcher = threading.Thread(target=watch, name="overlay-newer", daemon=True)
    watcher.start()
    try:
        terms.fill_pending(settings, conn, tree)
        facts.fill_pending(settings, conn, tree)
        if graph.is_current(conn, base):
            graph.update(conn, tree, changed, deleted, current=True, previous=previous,
                         stop=newer)
        else:
            graph.update(conn, tree, [], [], full=True, stop=newer)
    except Interrupted:
        if newer.is_set():
            return False
        raise
    finally:
        done.set()
        watcher.join(5)
    return not newer.is_set() or _version(conn, overlay_id) <= version


def _version(conn: psycopg.Connection, overlay_id: str) -> int:
    row = conn.execute(q.OVERLAY_VERSION, (overlay_id,)).fetchone()
    return int(row[0]) if row else 0


def _stored_changes(conn: psycopg.Connection, overlay_id: str, tree: int,
                    base: int) -> Changes:
    """The changes the overlay's tree holds now (its graph is built again from them)."""
    own = {p for (p,) in conn.execute(q.FILE_LAYER_PATHS, (tree,))}
    held = {p for (p,) in conn.execute(q.OVERLAY_OWN_FILES, (tree,))}
    known = commits.tree_files_at(conn, base, sorted(own))
    changed = sorted(own & held)
    return changed, sorted(own - held), {p: known[p].content_id for p in changed
                                         if p in known}


def _store_files(settings: Settings, conn: psycopg.Connection, overlay_id: str, repo_id: int,
                 tree: int, base: int, team: int, wanted: list[tuple[str, str | None]],
                 version: int, base_version: int) -> Changes:
    """Parse the blobs of ``wanted`` not parsed yet and rewrite the overlay's tree: its
    files replace or delete the base's. Returns (changed, deleted, previous content of the
    changed paths the base holds)."""
    paths = sorted(p for p, _sha in wanted)
    known = commits.tree_files_at(conn, base, paths)
    base_skips = {p: r for p, r in conn.execute(q.SKIPPED_REASONS, (base, paths))}
    skips: dict[str, tuple[str, str]] = {}
    deleted: list[str] = []
    todo: dict[str, str] = {}
    for path, sha in wanted:
        if sha is None:
            if path in known:
                deleted.append(path)
            continue
        k = known.get(path)
        if k is not None and k.sha == sha:
            continue  # the base's own version: nothing to overlay
        reason = path_reason(path) or \
            (base_skips[path] if base_skips.get(path) in IGNORED_REASONS else None)
        if reason:
            skips[path] = (reason, "not indexed by codenav's rules")
            continue
        todo[path] = sha
    results = _contents(settings, conn, team, todo)
    files: list[FileResult] = []
    for r in results:
        if r.skip:
            skips[r.path] = (r.skip, r.detail)
            if r.path in known:  # the base's version of a file the checkout made unindexable
                deleted.append(r.path)
        else:
            files.append(r)
    changed = sorted(r.path for r in files)
    deleted.sort()
    with conn.transaction():
        commits.clear_tree(conn, tree)
        commits.layer_on(conn, tree, base, changed + deleted)
        commits.write_rows(conn, repo_id, tree, files, deleted,
                           [(p, r, d, 0) for p, (r, d) in skips.items()])
        conn.execute(q.OVERLAY_SKIPS, (paths, [skips.get(p, (None,))[0] for p in paths],
                                       overlay_id))
        conn.execute(q.TREE_FILES_CHANGED, (tree,))
        conn.execute(q.OVERLAY_STORED, (version, base_version, overlay_id))
        if not changed and not deleted and graph.is_current(conn, base):
            # it reads as its base again, graph included (as when it was opened)
            graph.update(conn, tree, [], [], current=True)
            conn.execute(q.TREE_READY, (0, tree))
            conn.execute(q.OVERLAY_GRAPHED, (version, overlay_id))
    previous = {p: known[p].content_id for p in changed if p in known}
    return changed, deleted, previous


def _contents(settings: Settings, conn: psycopg.Connection, team: int,
              todo: dict[str, str]) -> list[FileResult]:
    """Each path of ``todo`` (path -> blob id) with its content: found by address, or parsed
    from the uploaded blob (which then goes)."""
    if not todo:
        return []
    entries = [FileEntry(p, 0, 0, s) for p, s in sorted(todo.items())]
    found, rest = commits.resolve_contents(conn, entries, {}, team)
    if not rest:
        return found
    blobs = {str(s): bytes(d) for s, d in conn.execute(q.OVERLAY_BLOBS_GET,
                                                       (team, sorted({e.sha for e in rest})))}
    entries, data = [], []
    for e in rest:
        blob = blobs.get(e.sha)
        if blob is None:  # collected since it was sent: the adapter sends it again
            found.append(FileResult(e.path, 0, 0, e.sha, skip="unavailable",
                                    detail="its upload expired; the adapter sends it again"))
            continue
        entries.append(FileEntry(e.path, len(blob), 0, e.sha))
        data.append(blob)
    if entries:  # parsed as any content: one anyone may share (team 0)
        for results in ingest(settings, [Batch("", entries, "bytes", data)]):
            found += results
    conn.execute(q.OVERLAY_BLOBS_DROP, (team, sorted(blobs)))
    return found


def after_index(settings: Settings, repo_id: int, changed: bool) -> bool:
    """After an index run of the repository: drop the expired overlays, and say whether
    overlays of it must be rebuilt (``changed``: its working tree, which overlays may be
    based on, moved)."""
    with connect(settings, application_name="codenav-overlay") as conn:
        expire(settings, conn)
        row = conn.execute(q.OVERLAYS_OF_REPO, (repo_id,)).fetchone()
    return bool(changed and row and row[0])


def expire(settings: Settings, conn: psycopg.Connection) -> int:
    """Drop the overlays nobody used for ``overlay_ttl_s`` (one being built waits for the
    next call), their trees and what only they used, and uploads never parsed."""
    dropped = 0
    for (oid,) in conn.execute(q.OVERLAYS_EXPIRED, (settings.overlay_ttl_s,)).fetchall():
        got = conn.execute(q.OVERLAY_TRY_LOCK, (oid,)).fetchone()
        if not got or not got[0]:
            continue
        try:
            row = conn.execute(q.OVERLAY_EXPIRE, (oid,)).fetchone()
            if row is not None:
                _delete_tree(conn, int(row[0]))
                dropped += 1
        finally:
            conn.execute(q.OVERLAY_UNLOCK, (oid,))
    conn.execute(q.OVERLAY_BLOBS_EXPIRE)
    return dropped


def _delete_tree(conn: psycopg.Connection, tree: int) -> None:
    pairs = [(str(p), int(c)) for p, c in conn.execute(q.TREE_PAIRS, ([tree],)).fetchall()]
    conn.execute(q.TREE_DELETE, ([tree],))
    repos.collect(conn, pairs)

