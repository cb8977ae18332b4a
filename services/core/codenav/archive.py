"""The archive format snapshots and CI uploads share: an uncompressed tar of a JSON manifest
first, then one member per section (Postgres' binary COPY output of a table's rows,
gzip-compressed, its size, row count and sha256 listed in the manifest), then a trailer
holding the manifest's sha256. Writing streams each COPY into its member; reading stages
each member into a temporary table of the section's columns, checking size, checksum and
row count as it streams, so a truncated, corrupted or foreign file is refused before any
row is merged (``codenav.snapshot``, ``codenav.publish``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tarfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

from codenav.db import queries as q
from codenav.errors import InvalidRequest

READ_BYTES = 1 << 20


class ArchiveError(InvalidRequest):
    """A file that is not a usable archive (foreign, truncated, corrupted, incompatible)."""


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def write_section(conn: psycopg.Connection, section: str, copy_sql: Any,
                  params: dict[str, Any], work: Path) -> dict[str, Any]:
    """Stream ``copy_sql`` (a ``COPY ... TO STDOUT (FORMAT binary)``) into ``work``'s
    member of ``section``; returns the manifest's entry for it."""
    member = f"{section}.copy.gz"
    digest = hashlib.sha256()
    size = 0
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip, fastest: the data is COPY output
    with (work / member).open("wb") as out, conn.cursor() as cur:
        def put(data: bytes) -> None:
            nonlocal size
            if data:
                digest.update(data)
                size += len(data)
                out.write(data)

        with cur.copy(copy_sql, params) as copy:
            for block in copy:
                put(packer.compress(bytes(block)))
        put(packer.flush())
        rows = cur.rowcount
    return {"name": section, "member": member, "rows": rows, "bytes": size,
            "sha256": digest.hexdigest()}


def write_tar(path: Path, work: Path, manifest_name: str, manifest: bytes,
              sections: list[dict[str, Any]], trailer_name: str) -> None:
    """The archive at ``path``: the manifest, the sections written in ``work``, the trailer.
    It ends with its end-of-archive blocks (no record padding after them), so a truncated
    file always lacks part of a member."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        add_bytes(tar, manifest_name, manifest)
        for entry in sections:
            tar.add(work / entry["member"], arcname=entry["member"], recursive=False)
        add_bytes(tar, trailer_name, hashlib.sha256(manifest).hexdigest().encode("ascii") +
                  b"\n")
        end = tar.offset + 2 * tarfile.BLOCKSIZE
    os.truncate(path, end)
    os.chmod(path, 0o644)


@contextlib.contextmanager
def open_archive(path: Path, what: str) -> Iterator[tarfile.TarFile]:
    """The tar at ``path``; ``what`` names the format in errors (``a codenav snapshot``)."""
    where = str(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidRequest(f"cannot read {where}: {exc.strerror or exc}") from None
    with handle:
        head = handle.read(512)
        handle.seek(0)
        if head[:4] == b"PK\x03\x04":
            raise ArchiveError(f"{where} is a zip archive, not {what}")
        if head[:2] == b"\x1f\x8b":
            raise ArchiveError(f"{where} is gzip-compressed, not {what}",
                               hint="it is an uncompressed tar; gunzip it first")
        try:
            tar = tarfile.open(fileobj=handle, mode="r:")
        except tarfile.TarError:
            raise ArchiveError(f"{where} is not {what} (not a tar archive, or truncated "
                               "before its first member)") from None
        with tar:
            yield tar


def read_member(tar: tarfile.TarFile, member: tarfile.TarInfo, where: str) -> bytes:
    handle = tar.extractfile(member)
    if handle is None:
        raise ArchiveError(f"{where}: member {member.name} is not a file")
    try:
        data = handle.read()
    except (tarfile.TarError, OSError, EOFError):
        raise ArchiveError(f"{where} is truncated (inside {member.name})") from None
    if len(data) != member.size:
        raise ArchiveError(f"{where} is truncated (inside {member.name})")
    return data


def check_trailer(tar: tarfile.TarFile, trailer_name: str, manifest: bytes, where: str) -> None:
    """The last member holds the manifest's sha256."""
    trailer = tar.next()
    if trailer is None or trailer.name != trailer_name:
        raise ArchiveError(f"{where} is truncated (its checksum trailer is missing)")
    expected = read_member(tar, trailer, where).decode("ascii", "replace").strip()
    if expected != hashlib.sha256(manifest).hexdigest():
        raise ArchiveError(f"{where} is corrupted: its manifest does not match its checksum",
                           hint="write it again")


def stage_section(conn: psycopg.Connection, tar: tarfile.TarFile, entry: dict[str, Any], where: str,
           skip: bool = False) -> int:
    """COPY one section into its staging table, checking size and sha256 as it streams."""
    section = str(entry["name"])
    try:
        member = tar.next()
    except tarfile.TarError:
        raise ArchiveError(f"{where} is truncated or corrupted (before {section})") from None
    if member is None or member.name != entry.get("member"):
        raise ArchiveError(f"{where} is truncated: section {section} is missing")
    conn.execute(q.snapshot_stage_create(section))
    handle = tar.extractfile(member)
    if handle is None or member.size != int(entry.get("bytes", -1)):
        raise ArchiveError(f"{where} is corrupted: section {section} does not have the size "
                            "its manifest says")
    digest = hashlib.sha256()
    unpack = zlib.decompressobj(31)
    read = 0
    with conn.cursor() as cur, cur.copy(q.snapshot_stage_copy(section)) as copy:
        while True:
            try:
                block = handle.read(READ_BYTES)
            except (tarfile.TarError, OSError, EOFError):
                raise ArchiveError(f"{where} is truncated (inside {section})") from None
            if not block:
                break
            read += len(block)
            digest.update(block)
            if skip:
                continue
            try:
                data = unpack.decompress(block)
            except zlib.error:
                raise ArchiveError(f"{where} is corrupted (section {section} does not "
                                    "decompress)", hint="write it again") from None
            if data:
                copy.write(data)
        if read != member.size:
            raise ArchiveError(f"{where} is truncated (inside {section})")
        if digest.hexdigest() != entry.get("sha256"):
            raise ArchiveError(f"{where} is corrupted: section {section} does not match its "
                                "checksum", hint="write it again")
        if not skip and not unpack.eof:
            raise ArchiveError(f"{where} is corrupted (section {section} ends early)")
    rows = 0
    if not skip:
        counted = conn.execute(q.snapshot_stage_count(section)).fetchone()
        rows = int(counted[0]) if counted else 0
    if not skip and rows != int(entry.get("rows", -1)):
        raise ArchiveError(f"{where} is corrupted: section {section} holds {rows} rows, "
                            f"its manifest says {entry.get('rows')}")
    return max(rows, 0)


