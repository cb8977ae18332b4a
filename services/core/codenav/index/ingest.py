"""The parser-process side of indexing: read, hash, parse and store a batch of files.

Each parser process holds its own database connection, so parsing, tokenising and the
database's own work on the rows (tsvector input, index updates) run on all cores at once.
A batch's contents, chunks and symbols are committed in one transaction; files only point
at them later, in the indexer's own transaction, so readers never see a half-indexed file.
A process claims each content before parsing it (an advisory lock on its address), so when
several workers meet the same content at once (two copies of a repository indexed together)
one parses it and the others wait for its rows.
Secrets inside a file are redacted before it is parsed (``codenav.index.redact``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.graph.extract import extract as graph_facts
from codenav.index.blob import decode, git_blob_sha, looks_binary, looks_minified
from codenav.index.gitread import BlobReader
from codenav.index.redact import describe, redact
from codenav.index.terms import write_terms
from codenav.index.walk import FileEntry
from codenav.lang import language_for
from codenav.parse.chunker import ChunkLimits, note_languages, parse_file
from codenav.tokens import chunk_tsvector
from codenav.versions import CHUNKER_VERSION


@dataclass(frozen=True)
class FileResult(FileEntry):
    """A walked file once read: its language and content (``sha`` computed from the bytes
    when the entry came without one), or why it was skipped."""

    language: str = ""
    content_id: int = 0
    skip: str = ""
    detail: str = ""
    parsed: bool = False


@dataclass
class _Read:
    entry: FileEntry
    data: bytes
    sha: str
    language: str


def read_entry(root: Path, entry: FileEntry, max_bytes: int) -> _Read | FileResult:
    """Read one file without following a symlink swapped in since the walk."""
    path = root / entry.path
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        reason = "symlink" if exc.errno == 40 else "unreadable"
        return FileResult(entry.path, entry.size, entry.mtime_ns, skip=reason,
                          detail=exc.strerror or str(exc))
    try:
        st = os.fstat(fd)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        return FileResult(entry.path, entry.size, entry.mtime_ns, skip="unreadable",
                          detail=exc.strerror or str(exc))
    return checked(FileEntry(entry.path, st.st_size, st.st_mtime_ns), data, max_bytes)


def checked(entry: FileEntry, data: bytes, max_bytes: int) -> _Read | FileResult:
    """A file's bytes (at most ``max_bytes + 1`` of them) ready to store, or why not: too
    large, binary or minified."""
    size, mtime = entry.size, entry.mtime_ns
    if len(data) > max_bytes:
        return FileResult(entry.path, size, mtime, skip="too_large",
                          detail=f"{size} bytes > {max_bytes}")
    if looks_binary(data):
        return FileResult(entry.path, size, mtime, skip="binary", detail="NUL byte in first 8 KiB")
    if looks_minified(entry.path, data):
        return FileResult(entry.path, size, mtime, skip="minified",
                          detail="average line longer than 300 characters")
    return _Read(FileEntry(entry.path, size, mtime), data, entry.sha or git_blob_sha(data),
                 language_for(entry.path, data[:128]))


def read_blob(reader: BlobReader, entry: FileEntry, max_bytes: int) -> _Read | FileResult:
    """A file of a commit, read from git by its blob id (``entry.sha``)."""
    data = reader.read(entry.sha, limit=max_bytes)
    if data is None:
        return FileResult(entry.path, entry.size, 0, skip="unreadable",
                          detail=f"blob {entry.sha[:12]} is missing from the repository")
    return checked(entry, data, max_bytes)


class Ingester:
    """Stores parsed contents; one per parser process."""

    def __init__(self, settings: Settings, defer_facts: bool = False, team_id: int = 0) -> None:
        self.settings = settings
        self.defer_facts = defer_facts
        """Leave whole-file postings, graph facts and the grep index to the graph job (a
        first index: searchable sooner)."""
        self.team_id = team_id
        """The team of the repository indexed: besides the shared contents, the ones it
        uploaded itself are found by address (``contents.origin_team``)."""
        self.limits = ChunkLimits(settings.chunk_max_lines, settings.chunk_overlap_lines,
                                  settings.text_window_lines)
        self.conn: psycopg.Connection = connect(settings, autocommit=True,
                                                application_name="codenav-ingest")
        self.conn.execute(q.STAGE_CREATE)
        self._blobs: BlobReader | None = None

    def close(self) -> None:
        if self._blobs is not None:
            self._blobs.close()
        self.conn.close()

    def process(self, root: Path, entries: list[FileEntry]) -> list[FileResult]:
        """Read ``entries`` under ``root`` from disk, and store what is new."""
        return self.store([read_entry(root, e, self.settings.max_file_bytes) for e in entries])

    def process_blobs(self, gdir: Path, entries: list[FileEntry]) -> list[FileResult]:
        """Read ``entries`` of a commit from the git directory ``gdir`` by their blob ids
        (one ``git cat-file --batch`` per process, kept between batches), and store what
        is new."""
        if self._blobs is None or self._blobs.gdir != gdir:
            if self._blobs is not None:
                self._blobs.close()
            self._blobs = BlobReader(gdir)
        return self.store([read_blob(self._blobs, e, self.settings.max_file_bytes)
                           for e in entries])

    def store(self, items: list[_Read | FileResult]) -> list[FileResult]:
        """Store the contents of ``items`` the index lacks (parsed once, whichever process
        meets them first); skipped items pass through."""
        results: list[FileResult] = []
        reads: list[_Read] = []
        for item in items:
            if isinstance(item, FileResult):
                results.append(item)
            else:
                reads.append(item)
        if not reads:
            return results
        known = self._known({r.sha for r in reads})
        missing: dict[tuple[str, str], _Read] = {}
        for r in reads:
            if (r.sha, r.language) not in known:
                missing.setdefault((r.sha, r.language), r)
        parsed: set[tuple[str, str]] = set()
        while missing:
            # Parse what no other process is parsing; wait for the rest, then read it (or,
            # when its claimer died without storing it, claim it in the next round).
            claimed = self._claim(list(missing))
            try:
                if claimed:
                    known.update(self._store([missing[key] for key in claimed]))
                    parsed.update(claimed)
            finally:
                self._release(claimed)
            others = [key for key in missing if key not in claimed]
            if others:
                self._wait(others)
                known.update(self._known({sha for sha, _ in others}))
            missing = {key: r for key, r in missing.items() if key not in known}
        for r in reads:
            results.append(FileResult(
                r.entry.path, r.entry.size, r.entry.mtime_ns, r.sha, r.language,
                known[(r.sha, r.language)], parsed=(r.sha, r.language) in parsed))
        return results

    @staticmethod
    def _lock_key(key: tuple[str, str]) -> str:
        return f"{key[0]}:{key[1]}:{CHUNKER_VERSION}"

    def _claim(self, keys: list[tuple[str, str]]) -> list[tuple[str, str]]:
        by_lock = {self._lock_key(k): k for k in keys}
        rows = self.conn.execute(q.CONTENT_CLAIM, (list(by_lock),)).fetchall()
        return [by_lock[row[0]] for row in rows]

    def _release(self, keys: list[tuple[str, str]]) -> None:
        if keys:
            self.conn.execute(q.CONTENT_RELEASE, ([self._lock_key(k) for k in keys],))

    def _wait(self, keys: list[tuple[str, str]]) -> None:
        """Until no other process holds the claim on any of ``keys``."""
        for key in keys:
            lock = self._lock_key(key)
            self.conn.execute(q.CONTENT_WAIT, (lock,))
            self.conn.execute(q.CONTENT_RELEASE, ([lock],))

    def _known(self, shas: set[str]) -> dict[tuple[str, str], int]:
        rows = self.conn.execute(q.CONTENT_LOOKUP, (CHUNKER_VERSION, list(shas),
                                                    self.team_id)).fetchall()
        return {(sha, lang): cid for cid, sha, lang in rows}

    def _store(self, reads: list[_Read]) -> dict[tuple[str, str], int]:
        parsed = []
        facts = []
        found: dict[str, str] = {}
        for r in reads:  # secrets out first: nothing below ever sees them
            text, redacted = redact(decode(r.data).text, r.entry.path)
            found[r.sha] = json.dumps(describe(redacted))
            pf = parse_file(text, r.language, self.limits)
            facts.append([] if pf.error or self.defer_facts else
                         graph_facts(text, r.language, pf.symbols, pf.tree, pf.src))
            # One syntax tree alive at a time. A batch's trees held until its facts were
            # extracted: parsing all of Kafka in one process grew it by 107 MB, not 73.
            pf.tree, pf.src = None, b""
            parsed.append((r, text, pf))
        with self.conn.transaction():
            with self.conn.cursor() as cur:
                with cur.copy(q.STAGE_COPY) as copy:
                    for r, text, pf in parsed:
                        copy.write_row((r.sha, r.language, len(r.data), pf.line_count, text,
                                        pf.imports, pf.error, found[r.sha]))
                inserted = {(sha, lang): cid for cid, sha, lang in
                            cur.execute(q.STAGE_INSERT, {
                                "chunker": CHUNKER_VERSION,
                                "first": self.defer_facts}).fetchall()}
                stored = [(inserted[(r.sha, r.language)], text, pf) for r, text, pf in parsed
                          if (r.sha, r.language) in inserted]
                with cur.copy(q.CHUNKS_COPY) as copy:
                    for cid, _text, pf in stored:
                        for ord_, c in enumerate(pf.chunks):
                            tsv, n_terms = chunk_tsvector(c.content, c.symbol, c.parent)
                            copy.write_row((cid, ord_, c.kind, c.symbol, c.parent, c.signature,
                                            c.doc, c.exported, c.start_line, c.end_line,
                                            c.part, c.content, n_terms, tsv))
                if not self.defer_facts:  # a first index leaves them to the graph job
                    write_terms(cur, [(cid, text) for cid, text, _pf in stored])
                with cur.copy(q.SYMBOLS_COPY) as copy:
                    for cid, _text, pf in stored:
                        for ord_, s in enumerate(pf.symbols):
                            copy.write_row((cid, ord_, s.name, s.qualname, s.kind, s.parent,
                                            s.depth, s.start_line, s.end_line, s.signature,
                                            s.doc, s.exported, list(s.bases)))
                with cur.copy(q.REFS_COPY) as copy:  # the code graph's per-content facts
                    for (r, _text, _pf), rows in zip(parsed, facts, strict=True):
                        cid = inserted.get((r.sha, r.language))
                        if cid is None:
                            continue
                        for ord_, ref in enumerate(rows):
                            copy.write_row((cid, ord_, *ref))
        missing = [r.sha for r in reads if (r.sha, r.language) not in inserted]
        if missing:  # stored concurrently by another process: use its rows
            inserted.update(self._known(set(missing)))
        return inserted


# --- process-pool plumbing ----------------------------------------------------------------
_INGESTER: Ingester | None = None


def pool_init(settings: Settings, defer_facts: bool = False, team_id: int = 0) -> None:
    global _INGESTER
    _INGESTER = Ingester(settings, defer_facts, team_id)


def pool_process(args: tuple[str, list[FileEntry]]) -> list[FileResult]:
    assert _INGESTER is not None, "pool_init did not run"
    root, entries = args
    return _INGESTER.process(Path(root), entries)


def pool_process_blobs(args: tuple[str, list[FileEntry]]) -> list[FileResult]:
    assert _INGESTER is not None, "pool_init did not run"
    gdir, entries = args
    return _INGESTER.process_blobs(Path(gdir), entries)


def pooled(results: Iterable[list[FileResult]]) -> Iterator[list[FileResult]]:
    """Batches from parser processes, their languages noted in this process
    (``note_languages``): a worker loads those before it forks its next job's process."""
    for batch in results:
        note_languages({r.language for r in batch if r.parsed and r.language})
        yield batch
