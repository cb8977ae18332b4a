"""Snapshots: a versioned, checksummed archive of everything needed to answer, and its import.

A snapshot is an uncompressed tar file (``tar tf`` lists it) of:

- ``codenav-snapshot.json``, first: the manifest. Format name and ``FORMAT_VERSION``, the
  schema, chunker and graph versions of the code that wrote it, the repositories (name,
  team, root, source, default ref, followed refs), their trees (working tree or commit,
  and the refs naming each), the embedding models (name, dim), and one entry per section
  with its row count, size and sha256.
- one member per section (``SECTIONS``: contents, chunks, symbols, refs, file_terms, trees,
  repo_refs, ref_history, files, skipped, the graph tables, embeddings, chunk_texts):
  Postgres' binary COPY output of the rows, gzip-compressed. Surrogate ids travel as the
  archive's own keys.
- ``codenav-snapshot.sha256``, last: the sha256 of the manifest's bytes.

Export runs every COPY in one REPEATABLE READ transaction, so the archive is one consistent
state even while workers index. Import checks the versions before reading any row (a
mismatch is refused naming both), then in ONE transaction stages every section with binary
COPY into temporary tables (checking each member's checksum as it streams), checks the
manifest's own checksum, and merges: contents by address (sha, language, chunker), their
chunks, symbols, refs and terms only when the store did not have them, vectors by (model
name, text hash); every id (repository, tree, content, chunk, model) is remapped through
the staging tables. A repository of the same name in the same team is replaced: its trees
(file lists, skips, graphs) and refs become the snapshot's, atomically (its id, tokens and
grants stay). Any
error (a flipped byte, a truncated file, a foreign archive, a version or model mismatch)
rolls the transaction back: the store is unchanged. Importing twice changes nothing more.

Nothing is read from any repository: bodies were redacted at index time (``codenav.index.redact``)
and are taken as they are. Tokens, teams' members and the audit trail are never exported.

Format changelog (``FORMAT_VERSION``):
  1  manifest, trailer, 14 sections. A repository carried ``ref`` (the commit it was
     indexed at and the branch checked out then).
  2  refs: a repository holds trees (its working tree, commit trees) and named refs; the
     sections trees, repo_refs, ref_history and graph_layer; per-file rows belong to a
     tree; chunk_texts are keyed by (chunk, path). ``--ref`` exports one ref's tree.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from codenav.archive import (
    ArchiveError,
    check_trailer,
    open_archive,
    read_member,
    stage_section,
    write_section,
    write_tar,
)
from codenav.auth import ensure_team
from codenav.db import queries as q
from codenav.errors import InvalidRequest
from codenav.index import terms
from codenav.versions import CHUNKER_VERSION, GRAPH_VERSION, SCHEMA_ROWS_SINCE, SCHEMA_VERSION

log = logging.getLogger("codenav.snapshot")

FORMAT = "codenav-snapshot"
FORMAT_VERSION = 2
MANIFEST = "codenav-snapshot.json"
TRAILER = "codenav-snapshot.sha256"
SECTIONS = q.SNAPSHOT_SECTIONS
MANIFEST_MAX = 16 << 20
"""A manifest larger than this is not one of ours (it lists repositories and sections)."""


class SnapshotError(ArchiveError):
    """A file that is not a usable snapshot (foreign, truncated, corrupted, incompatible)."""


@dataclass
class RepoSpec:
    """One repository in a snapshot, as the manifest describes it."""

    src_id: int
    name: str
    team: str
    root: str
    index_enabled: bool = True
    source: str = "worktree"
    default_ref: str | None = None
    follow: list[str] = field(default_factory=list)
    keep: int = 0
    trees: list[dict[str, Any]] = field(default_factory=list)
    """Its trees in the archive: id, kind, commit, indexed_at, and the refs naming each."""

    @property
    def indexed_commit(self) -> str | None:
        """The commit of its default tree (the working tree's HEAD, or the default ref's)."""
        for tree in self.trees:
            if (self.default_ref is None and tree["kind"] == "worktree") or \
                    (self.default_ref is not None and self.default_ref in tree["refs"]):
                return tree.get("commit")
        return None

    @property
    def refs(self) -> list[str]:
        return sorted(name for tree in self.trees for name in tree["refs"])

    def to_json(self) -> dict[str, Any]:
        return {"id": self.src_id, "name": self.name, "team": self.team, "root": self.root,
                "index_enabled": self.index_enabled, "source": self.source,
                "default_ref": self.default_ref, "follow": self.follow, "keep": self.keep,
                "trees": self.trees}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RepoSpec:
        return cls(int(data["id"]), str(data["name"]), str(data["team"]), str(data["root"]),
                   bool(data.get("index_enabled", True)), str(data.get("source", "worktree")),
                   data.get("default_ref"), [str(f) for f in data.get("follow") or []],
                   int(data.get("keep") or 0),
                   [{"id": int(t["id"]), "kind": str(t["kind"]), "commit": t.get("commit"),
                     "indexed_at": t.get("indexed_at"), "refs": [str(n) for n in t["refs"]]}
                    for t in data.get("trees") or []])


@dataclass
class Manifest:
    schema_version: int
    chunker_version: int
    graph_version: int
    repos: list[RepoSpec]
    models: list[dict[str, Any]]
    sections: list[dict[str, Any]]
    created_at: str = ""
    format_version: int = FORMAT_VERSION

    def to_bytes(self) -> bytes:
        return json.dumps({
            "format": FORMAT, "format_version": self.format_version,
            "schema_version": self.schema_version, "chunker_version": self.chunker_version,
            "graph_version": self.graph_version, "created_at": self.created_at,
            "repos": [r.to_json() for r in self.repos], "models": self.models,
            "sections": self.sections}, indent=1, sort_keys=True).encode("utf-8")

    @classmethod
    def parse(cls, raw: bytes, where: str) -> Manifest:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SnapshotError(f"{where} is corrupted: its manifest is not valid JSON",
                                hint="export the snapshot again") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise SnapshotError(f"{where} is not a codenav snapshot (its manifest names no "
                                f"{FORMAT} format)")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise SnapshotError(f"{where} is snapshot format version {version}; this codenav "
                                f"reads format version {FORMAT_VERSION}",
                                hint="import it with the codenav version that exported it")
        try:
            return cls(int(data["schema_version"]), int(data["chunker_version"]),
                       int(data["graph_version"]),
                       [RepoSpec.from_json(r) for r in data["repos"]],
                       [{"id": int(m["id"]), "name": str(m["name"]), "dim": int(m["dim"])}
                        for m in data["models"]],
                       [dict(s) for s in data["sections"]], str(data.get("created_at", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"{where} is corrupted: its manifest lacks {exc}",
                                hint="export the snapshot again") from None


# --- export ------------------------------------------------------------------------------
@dataclass
class ExportResult:
    path: str
    repos: list[str]
    sections: dict[str, int]
    bytes: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "repos": self.repos, "rows": self.sections,
                "bytes": self.bytes, "seconds": round(self.seconds, 2)}


def export_trees(conn: psycopg.Connection, scope: Any, ref: str | None) -> list[int]:
    """The trees a snapshot of ``scope``'s repository holds: every ready tree, or with
    ``ref`` (a ref name or commit the repository has indexed) that one tree and the trees it
    is layered on. ``ref`` resolves like a query's (``access.resolve_tree``)."""
    from codenav.access import resolve_tree

    if not ref:
        return [int(r[0]) for r in conn.execute(q.SNAPSHOT_TREE_IDS, scope.params()).fetchall()]
    at = resolve_tree(conn, scope, ref).at
    row = conn.execute(q.SNAPSHOT_TREE_WITH_BASE, (at.id,)).fetchone()
    below = [int(t) for t in (row[1:] if row else ()) if t is not None]
    return [at.id, *below]


def export(conn: psycopg.Connection, repos: list[Any], out_path: Path,
           trees: list[int] | None = None) -> ExportResult:
    """Write a snapshot of ``repos`` (``access.Repo`` rows the caller may see) to
    ``out_path`` (atomically: a temporary file renamed at the end): their ``trees`` (None:
    all of them)."""
    started = time.monotonic()
    if not repos:
        raise InvalidRequest("nothing to export: no repository is registered",
                             hint="index one first: codenav index PATH")
    out_path = out_path.expanduser().resolve()
    if not out_path.parent.is_dir():
        raise InvalidRequest(f"{out_path.parent} is not a directory",
                             hint="write the snapshot into an existing directory")
    ids = [r.id for r in repos]
    params: dict[str, Any] = {"visible": ids}
    # a snapshot holds every content's postings: those a first index left to its graph job
    # are written now (the graph job then finds none left)
    for tid in trees if trees is not None else \
            [int(r[0]) for r in conn.execute(q.SNAPSHOT_TREE_IDS, params)]:
        terms.fill_pending(None, conn, tid)
    work = Path(tempfile.mkdtemp(prefix=".snapshot-", dir=out_path.parent))
    try:
        sections: list[dict[str, Any]] = []
        with conn.transaction():
            conn.execute(q.SNAPSHOT_READ_ONLY)
            if trees is None:
                trees = [int(r[0]) for r in conn.execute(q.SNAPSHOT_TREE_IDS, params)]
            params["trees"] = trees
            by_repo: dict[str, list[dict[str, Any]]] = {}
            for tid, repo_name, kind, commit, indexed_at, names in \
                    conn.execute(q.SNAPSHOT_TREE_LIST, params).fetchall():
                by_repo.setdefault(repo_name, []).append(
                    {"id": int(tid), "kind": kind, "commit": commit,
                     "indexed_at": _iso(indexed_at), "refs": list(names)})
            specs = [RepoSpec(int(r[0]), r[1], r[2], r[3], bool(r[4]), r[5], r[6],
                              list(r[7] or []), int(r[8]), by_repo.get(r[1], []))
                     for r in conn.execute(q.SNAPSHOT_REPOS, params).fetchall()]
            models = [{"id": int(m[0]), "name": m[1], "dim": int(m[2])}
                      for m in conn.execute(q.SNAPSHOT_MODELS, params).fetchall()]
            for section in SECTIONS:
                sections.append(write_section(conn, section, q.SNAPSHOT_EXPORT[section], params,
                                              work))
        manifest = Manifest(SCHEMA_VERSION, CHUNKER_VERSION, GRAPH_VERSION, specs, models,
                            sections, datetime.now(UTC).isoformat(timespec="seconds"))
        raw = manifest.to_bytes()
        partial = work / "snapshot.tar"
        write_tar(partial, work, MANIFEST, raw, sections, TRAILER)
        os.replace(partial, out_path)
    finally:
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()
    return ExportResult(str(out_path), [s.name for s in specs],
                        {s["name"]: int(s["rows"]) for s in sections},
                        out_path.stat().st_size, time.monotonic() - started)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# --- reading an archive ------------------------------------------------------------------
def read_manifest(path: Path) -> Manifest:
    """The manifest of a snapshot, checked for format and versions (no rows read)."""
    with open_archive(path, "a codenav snapshot") as tar:
        manifest, _first = _manifest(tar, str(path))
    return manifest


def _manifest(tar: tarfile.TarFile, where: str) -> tuple[Manifest, bytes]:
    try:
        first = tar.next()
    except tarfile.TarError:
        raise SnapshotError(f"{where} is truncated or corrupted") from None
    if first is None or first.name != MANIFEST:
        raise SnapshotError(f"{where} is not a codenav snapshot (its first member is "
                            f"{first.name if first else 'missing'}, not {MANIFEST})")
    if not first.isfile() or first.size > MANIFEST_MAX:
        raise SnapshotError(f"{where} is not a codenav snapshot (its manifest is not a file "
                            "of a sane size)")
    raw = read_member(tar, first, where)
    manifest = Manifest.parse(raw, where)
    listed = [s.get("name") for s in manifest.sections]
    if listed != list(SECTIONS):
        raise SnapshotError(f"{where} has sections {listed}; format version "
                            f"{FORMAT_VERSION} has {list(SECTIONS)}")
    return manifest, raw


def check_versions(manifest: Manifest, where: str) -> None:
    """Refuse a snapshot whose stored data this code reads differently (both named)."""
    if not SCHEMA_ROWS_SINCE <= manifest.schema_version <= SCHEMA_VERSION:
        raise SnapshotError(
            f"{where} was exported at schema version {manifest.schema_version}; this store "
            f"and codenav are at schema version {SCHEMA_VERSION} (they read snapshots of "
            f"versions {SCHEMA_ROWS_SINCE} to {SCHEMA_VERSION})",
            hint="import it with the codenav version that exported it, or export it again "
            "with this one")
    if manifest.chunker_version != CHUNKER_VERSION:
        raise SnapshotError(
            f"{where} was chunked by chunker version {manifest.chunker_version}; this codenav "
            f"chunks with version {CHUNKER_VERSION}",
            hint="export it again with this codenav version (or index from scratch)")


# --- import ------------------------------------------------------------------------------
@dataclass
class ImportResult:
    repos: list[dict[str, Any]]
    staged: dict[str, int]
    merged: dict[str, int]
    seconds: float
    notes: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds spent staging the sections, waiting for the embedder's model (a stack that
    is starting), merging and committing, and refreshing statistics afterwards."""

    def to_json(self) -> dict[str, Any]:
        return {"repos": self.repos, "rows": self.staged, "inserted": self.merged,
                "seconds": round(self.seconds, 2), "notes": self.notes,
                "phases": {k: round(v, 2) for k, v in self.phases.items()}}


ModelCheck = Callable[[], tuple[str, int] | None]
"""The model this store embeds queries with, (name, dim), or None when it is not known;
asked just before the merge (an embedder may still be loading while rows are staged)."""


def import_file(conn: psycopg.Connection, path: Path, *, team: Callable[[RepoSpec], str],
                roots: dict[str, str] | None = None, actor: str = "snapshot import",
                vectors: bool = True, model: ModelCheck | None = None,
                verify: bool = False) -> ImportResult:
    """Import the snapshot at ``path`` in one transaction (see the module's docstring).

    ``team(spec)`` names the team each repository goes to (the operator: the snapshot's;
    an admin: its own). ``roots`` maps repository names to local roots (another machine's
    checkout; see ``map_roots``). ``vectors=False`` leaves the vectors out (they are
    embedded again here), and with them the model check. ``verify`` (a team admin's
    import) keeps only contents whose body hashes to their git blob sha; the others
    (redacted or re-encoded files, or forged ones) are left to the first reconcile."""
    started = time.monotonic()
    where = path.name
    roots = roots or {}
    with open_archive(path, "a codenav snapshot") as tar:
        manifest, raw = _manifest(tar, where)
        check_versions(manifest, where)
        notes: list[str] = []
        if manifest.graph_version != GRAPH_VERSION:
            notes.append(f"graph version {manifest.graph_version} differs from this codenav's "
                         f"{GRAPH_VERSION}: the graph is rebuilt at the next index run")
        models = manifest.models if vectors else []
        _check_models(conn, models, None, where)
        if not vectors and manifest.models:
            notes.append("vectors left out: chunks are embedded again here")
        conn.execute(q.SNAPSHOT_SESSION)
        staged: dict[str, int] = {}
        merged: dict[str, int] = {}
        repos_out: list[dict[str, Any]] = []
        locked: list[int] = []
        phases: dict[str, float] = {}
        try:
            _import(conn, tar, manifest, raw, where, team, roots, actor, vectors, models,
                    model, staged, merged, repos_out, locked, phases, notes if verify else None)
        finally:  # an index run of a replaced repository waited for the commit
            with contextlib.suppress(psycopg.Error):
                conn.execute(q.WRITERS_SHARED_UNLOCK)
            for repo_id in locked:
                with contextlib.suppress(psycopg.Error):
                    conn.execute(q.REPO_UNLOCK, (repo_id,))
    lap = time.monotonic()
    with contextlib.suppress(psycopg.Error):
        _after_import(conn)
    phases["statistics"] = time.monotonic() - lap
    return ImportResult(repos_out, staged, merged, time.monotonic() - started, notes, phases)


def _import(conn: psycopg.Connection, tar: tarfile.TarFile, manifest: Manifest, raw: bytes,
            where: str, team: Callable[[RepoSpec], str], roots: dict[str, str], actor: str,
            vectors: bool, models: list[dict[str, Any]], model: ModelCheck | None,
            staged: dict[str, int], merged: dict[str, int], repos_out: list[dict[str, Any]],
            locked: list[int], phases: dict[str, float],
            verify_notes: list[str] | None) -> None:
    lap = time.monotonic()
    with conn.transaction():
        conn.execute(q.SNAPSHOT_SYNC_OFF)
        for entry in manifest.sections:
            staged[entry["name"]] = stage_section(conn, tar, entry, where,
                                           skip=not vectors and entry["name"] == "embeddings")
        check_trailer(tar, TRAILER, raw, where)
        if verify_notes is not None:
            left = _drop_unverified(conn)
            if left:
                verify_notes.append(f"{left} contents whose body does not hash to its address "
                                    "(redacted or re-encoded files) were left out: the first "
                                    "reconcile parses them here")
        phases["stage"] = time.monotonic() - lap
        lap = time.monotonic()
        if model is not None and models:  # asked again: the embedder may be ready now
            _check_models(conn, models, model, where)
        phases["model_wait"] = time.monotonic() - lap
        lap = time.monotonic()
        conn.execute(q.SNAPSHOT_ANALYZE_STAGE)
        conn.execute(q.SNAPSHOT_MAPS_CREATE)
        conn.execute(q.WRITERS_SHARED_LOCK)  # no garbage collection of what we point at
        rebuild = _drop_indexes_of_empty_tables(conn)
        for spec in manifest.repos:
            repos_out.append(_merge_repo(conn, spec, team(spec), roots, actor, locked))
        for m in models:
            conn.execute(q.SNAPSHOT_MODEL_MAP, (m["id"], _ensure_model(conn, m)))
        for name, statement in q.SNAPSHOT_MERGE:
            step = time.monotonic()
            merged[name] = conn.execute(statement).rowcount
            log.debug("merge %s: %d rows in %.2fs", name, merged[name], time.monotonic() - step)
        phases["merge"] = time.monotonic() - lap
        lap = time.monotonic()
        for name, definition in rebuild.indexes:
            step = time.monotonic()
            conn.execute(definition.encode())  # the catalog's own text of the dropped index
            log.debug("index %s built in %.2fs", name, time.monotonic() - step)
        for table, name, definition in rebuild.keys:
            step = time.monotonic()
            conn.execute(q.snapshot_add_constraint(table, name, definition))
            log.debug("key %s checked in %.2fs", name, time.monotonic() - step)
        phases["indexes"] = time.monotonic() - lap
        lap = time.monotonic()
    phases["commit"] = time.monotonic() - lap


BULK_TABLES = ("chunks", "symbols", "refs", "file_terms", "files", "graph_imports",
               "graph_edges", "graph_links", "graph_layer", "chunk_texts")
"""Tables whose secondary indexes an import into an empty store builds after its rows."""


@dataclass
class _Rebuild:
    indexes: list[tuple[str, str]] = field(default_factory=list)
    keys: list[tuple[str, str, str]] = field(default_factory=list)


def _drop_indexes_of_empty_tables(conn: psycopg.Connection) -> _Rebuild:
    """The bulk path: drop the secondary indexes and foreign keys of the tables that hold
    no row yet (a fresh store, a seed) and return their definitions, to build and check
    them once the rows are in, in the same transaction. A table with rows keeps them
    (readers use its indexes during a merge)."""
    empty = [t for t in BULK_TABLES if not _has_rows(conn, t)]
    out = _Rebuild()
    if not empty:
        return out
    conn.execute(q.SNAPSHOT_BULK_MEMORY)
    out.indexes = [(str(n), str(d)) for n, d in
                   conn.execute(q.SNAPSHOT_SECONDARY_INDEXES, (empty,)).fetchall()]
    out.keys = [(str(t), str(n), str(d)) for t, n, d in
                conn.execute(q.SNAPSHOT_FOREIGN_KEYS, (empty,)).fetchall()]
    for table, name, _definition in out.keys:
        conn.execute(q.snapshot_drop_constraint(table, name))
    for name, _definition in out.indexes:
        conn.execute(q.snapshot_drop_index(name))
    return out


def _has_rows(conn: psycopg.Connection, table: str) -> bool:
    row = conn.execute(q.snapshot_table_has_rows(table)).fetchone()
    return bool(row and row[0])


def _drop_unverified(conn: psycopg.Connection) -> int:
    """Drop the staged contents whose body is not the blob their sha names (and with them,
    through the merge's joins, their chunks, symbols, refs, terms and files)."""
    from codenav.index.blob import git_blob_sha

    bad = [int(src) for src, sha, body, plain in conn.execute(q.SNAPSHOT_STAGED_BODIES)
           if not plain or git_blob_sha(str(body).encode("utf-8")) != sha]
    if bad:
        conn.execute(q.SNAPSHOT_STAGED_DROP, (bad,))
    return len(bad)


def _check_models(conn: psycopg.Connection, models: list[dict[str, Any]],
                  model: ModelCheck | None, where: str) -> None:
    for m in models:
        row = conn.execute(q.EMBED_MODEL_GET, (m["name"],)).fetchone()
        if row is not None and int(row[1]) != m["dim"]:
            raise SnapshotError(
                f"{where} holds {m['dim']}-dimensional vectors of model {m['name']!r}; this "
                f"store holds {row[1]}-dimensional ones under that name",
                hint="import with --no-vectors (they are embedded again here)")
    wanted = model() if model is not None else None
    if wanted is None or not models:
        return
    name, dim = wanted
    if not any(m["name"] == name and m["dim"] == dim for m in models):
        have = ", ".join(f"{m['name']!r} ({m['dim']} dims)" for m in models)
        raise SnapshotError(
            f"{where} holds vectors of embedding model {have}; this store embeds with "
            f"{name!r} ({dim} dims)",
            hint="import with --no-vectors (chunks are embedded again here), or run the "
            "embedder with the snapshot's model (CODENAV_EMBED_MODEL)")


def _ensure_model(conn: psycopg.Connection, m: dict[str, Any]) -> int:
    row = conn.execute(q.EMBED_MODEL_INSERT, (m["name"], m["dim"])).fetchone() or \
        conn.execute(q.EMBED_MODEL_GET, (m["name"],)).fetchone()
    assert row is not None
    return int(row[0])


def _merge_repo(conn: psycopg.Connection, spec: RepoSpec, team: str, roots: dict[str, str],
                actor: str, locked: list[int]) -> dict[str, Any]:
    """The store's repository for ``spec`` (created, or the one of that name emptied)."""
    team_id, _created = ensure_team(conn, team, actor)
    found = conn.execute(q.SNAPSHOT_REPO_FIND, (team_id, spec.name)).fetchone()
    root = roots.get(spec.name) or (found[1] if found else spec.root)
    if found is None:
        row = conn.execute(q.SNAPSHOT_REPO_INSERT, (spec.name, root, team_id, spec.index_enabled,
                                                    spec.source, spec.default_ref, spec.follow,
                                                    spec.keep)).fetchone()
        assert row is not None
        repo_id, replaced = int(row[0]), False
    else:
        repo_id, replaced = int(found[0]), True
        conn.execute(q.REPO_LOCK, (repo_id,))  # an index run of it ends first
        locked.append(repo_id)
        for statement in (q.SNAPSHOT_REPO_UNREF, q.SNAPSHOT_REPO_UNHISTORY,
                          q.SNAPSHOT_REPO_UNLAYER, q.SNAPSHOT_REPO_CLEAR):
            conn.execute(statement, (repo_id,))
        conn.execute(q.SNAPSHOT_REPO_UPDATE, (root, spec.source, spec.default_ref, spec.follow,
                                              spec.keep, repo_id))
    conn.execute(q.SNAPSHOT_REPO_MAP, (spec.src_id, repo_id))
    conn.execute(q.AUDIT_INSERT, (team_id, actor, None, "snapshot.import", spec.name,
                                  json.dumps({"root": root, "commit": spec.indexed_commit,
                                              "refs": spec.refs, "replaced": replaced})))
    return {"name": spec.name, "team": team, "root": root, "id": repo_id,
            "commit": spec.indexed_commit, "refs": spec.refs, "replaced": replaced}


def _after_import(conn: psycopg.Connection) -> None:
    """Collect contents no file points at any more (a replaced file list) and refresh the
    planner's statistics and the corpus size search normalises by."""
    from codenav.index.reconcile import collect_garbage, refresh_stats

    collect_garbage(conn)
    refresh_stats(conn)


def map_roots(manifest: Manifest, local: list[str]) -> dict[str, str]:
    """Names -> local roots for ``--repo PATH`` given with a seed: a path maps the snapshot's
    repository of the same name as its directory (``codenav index`` names it so), or the
    only one the snapshot holds. A path that maps none is registered as usual."""
    from codenav.repos import default_name

    out: dict[str, str] = {}
    names = [r.name for r in manifest.repos]
    for path in local:
        name = default_name(Path(path))
        if name in names:
            out[name] = path
        elif len(names) == 1 and names[0] not in out:
            out[names[0]] = path
    return out


def roots_under(manifest: Manifest, allowed: list[str]) -> dict[str, str]:
    """Names -> roots under this server's allowed roots (``--local-roots``): the allowed
    root named like the repository, else the directory of its name (or of its old root's
    name) inside one, else the only allowed root for a one-repository snapshot."""
    from codenav.repos import default_name

    real = [os.path.realpath(a) for a in allowed if a.startswith("/")]
    out: dict[str, str] = {}
    for spec in manifest.repos:
        found = next((a for a in real if default_name(Path(a)) == spec.name), None)
        for a in real:
            if found is not None:
                break
            for sub in (spec.name, Path(spec.root).name):
                if sub and (Path(a) / sub).is_dir():
                    found = str(Path(a) / sub)
                    break
        if found is None and len(real) == 1 and len(manifest.repos) == 1:
            found = real[0]
        if found is not None:
            out[spec.name] = found
    return out


def held(conn: psycopg.Connection, manifest: Manifest, team: str | None = None) -> list[str]:
    """``team/name`` of the snapshot's repositories this store already holds (in ``team``,
    or each in its own team of the snapshot)."""
    from codenav.repos import list_repos

    wanted = {(team or r.team, r.name) for r in manifest.repos}
    return sorted(f"{r.team}/{r.name}" for r in list_repos(conn) if (r.team, r.name) in wanted)


def counts(conn: psycopg.Connection) -> dict[str, int]:
    """Rows per table the snapshot covers (tests and benchmarks compare stores by it)."""
    row = conn.execute(q.SNAPSHOT_TABLE_COUNTS).fetchone()
    assert row is not None
    return dict(zip(q.SNAPSHOT_TABLES, (int(v) for v in row), strict=True))


__all__ = ["FORMAT_VERSION", "ExportResult", "ImportResult", "Manifest", "RepoSpec",
           "SnapshotError", "check_versions", "counts", "export", "export_trees", "import_file",
           "map_roots", "read_manifest"]
