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
import logging
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import binary_tsvectors, connect
from codenav.errors import ProcessLost
from codenav.graph.extract import extract as graph_facts
from codenav.index import redact as redaction
from codenav.index.blob import (
    BINARY_DETAIL,
    MINIFIED_DETAIL,
    decode,
    git_blob_sha,
    looks_binary,
    looks_minified,
)
from codenav.index.defaults import shown
from codenav.index.gitread import BlobReader
from codenav.index.redact import describe, redact
from codenav.index.terms import write_terms
from codenav.index.walk import FileEntry
from codenav.lang import language_for
from codenav.parse.chunker import ChunkLimits, note_languages, parse_file, preload_grammars
from codenav.proc import RETRIES, Stall, mark, supervised
from codenav.tokens import chunk_tsvector_binary
from codenav.versions import CHUNKER_VERSION

log = logging.getLogger("codenav.index")


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
    item: int = -1
    """Its place in the batch (``mark``)."""
    as_text: str = ""
    """Why its structure is not read (an earlier try of the batch stalled on it)."""


@dataclass
class Batch:
    """Files for one parser process's task: where they are read from, and what earlier
    tries of this batch stalled on (``codenav.proc.supervised``)."""

    where: str
    """The root directory (``disk``) or the git directory (``git``)."""
    entries: list[FileEntry]
    source: str = "disk"
    """``disk``, ``git`` (``entries`` are blob ids) or ``bytes`` (``data`` holds them)."""
    data: list[bytes] = field(default_factory=list)
    as_text: dict[int, str] = field(default_factory=dict)
    """Entries whose structure is not read, and why: a try stalled while parsing them."""
    skip: dict[int, str] = field(default_factory=dict)
    """Entries left out, and why: a try stalled on them even as plain text."""
    deaths: dict[int, int] = field(default_factory=dict)
    """Times a process died on each entry (killed from outside, once, is no verdict)."""
    lost: int = 0
    """Times a process died on this batch outside any entry."""


def read_entry(root: Path, entry: FileEntry, max_bytes: int) -> _Read | FileResult:
    """Read one file without following a symlink swapped in since the walk."""
    path = root / entry.path
    try:  # not blocking: a FIFO swapped in since the walk would wait for a writer for ever
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError as exc:
        reason = "symlink" if exc.errno == 40 else "unreadable"
        return FileResult(entry.path, entry.size, entry.mtime_ns, skip=reason,
                          detail=exc.strerror or str(exc))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return FileResult(entry.path, entry.size, entry.mtime_ns, skip="unreadable",
                              detail="not a regular file")
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
        return FileResult(entry.path, size, mtime, skip="binary", detail=BINARY_DETAIL)
    if looks_minified(entry.path, data):
        return FileResult(entry.path, size, mtime, skip="minified",
                          detail=MINIFIED_DETAIL)
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
        binary_tsvectors(self.conn)
        self.conn.execute(q.STAGE_CREATE)
        self._blobs: BlobReader | None = None

    def close(self) -> None:
        if self._blobs is not None:
            self._blobs.close()
        self.conn.close()

    def process(self, root: Path, entries: list[FileEntry]) -> list[FileResult]:
        """Read ``entries`` under ``root`` from disk, and store what is new."""
        return self.run(Batch(str(root), entries))

    def run(self, batch: Batch) -> list[FileResult]:
        """Read the batch's files (from disk, git or the bytes it holds), and store what is
        new. Each file is marked while it is read and again while it is parsed
        (``codenav.proc.mark``): a supervisor that kills a process stuck on one knows which."""
        limit = self.settings.max_file_bytes
        if batch.source == "git":
            if self._blobs is None or self._blobs.gdir != Path(batch.where):
                if self._blobs is not None:
                    self._blobs.close()
                self._blobs = BlobReader(Path(batch.where))
        items: list[_Read | FileResult] = []
        for i, e in enumerate(batch.entries):
            if i in batch.skip:
                items.append(FileResult(e.path, e.size, e.mtime_ns, skip="stalled",
                                        detail=batch.skip[i]))
                continue
            mark(i)
            if batch.source == "git":
                assert self._blobs is not None
                item = read_blob(self._blobs, e, limit)
            elif batch.source == "bytes":
                item = checked(e, batch.data[i], limit)
            else:
                item = read_entry(Path(batch.where), e, limit)
            if isinstance(item, _Read):
                item.item, item.as_text = i, batch.as_text.get(i, "")
            items.append(item)
        mark(-1)
        return self.store(items)

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
            mark(r.item)
            text, redacted = redact(decode(r.data).text, r.entry.path)
            found[r.sha] = json.dumps(describe(redacted))
            pf = parse_file(text, r.language, self.limits, structure=not r.as_text)
            if r.as_text:
                pf.error = r.as_text
            facts.append([] if pf.error or self.defer_facts else
                         graph_facts(text, r.language, pf.symbols, pf.tree, pf.src))
            # One syntax tree alive at a time. A batch's trees held until its facts were
            # extracted: parsing all of Kafka in one process grew it by 107 MB, not 73.
            pf.tree, pf.src = None, b""
            parsed.append((r, text, pf))
        mark(-1)
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
                    copy.set_types(q.CHUNKS_TYPES)
                    for cid, _text, pf in stored:
                        for ord_, c in enumerate(pf.chunks):
                            tsv, n_terms = chunk_tsvector_binary(c.content, c.symbol,
                                                                 c.parent)
                            copy.write_row((cid, ord_, c.kind, c.symbol, c.parent, c.signature,
                                            c.doc, c.exported, c.start_line, c.end_line,
                                            c.part, c.content, n_terms, tsv))
                if not self.defer_facts:  # a first index leaves them to the graph job
                    write_terms(cur, [(cid, text) for cid, text, _pf in stored])
                with cur.copy(q.SYMBOLS_COPY) as copy:
                    copy.set_types(q.SYMBOLS_TYPES)
                    for cid, _text, pf in stored:
                        for ord_, s in enumerate(pf.symbols):
                            copy.write_row((cid, ord_, s.name, s.qualname, s.kind, s.parent,
                                            s.depth, s.start_line, s.end_line, s.signature,
                                            s.doc, s.exported, list(s.bases)))
                with cur.copy(q.REFS_COPY) as copy:  # the code graph's per-content facts
                    copy.set_types(q.REFS_TYPES)
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


# --- parser processes ---------------------------------------------------------------------
_INGESTER: Ingester | None = None


def pool_init(settings: Settings, defer_facts: bool = False, team_id: int = 0) -> None:
    global _INGESTER
    _INGESTER = Ingester(settings, defer_facts, team_id)


def pool_run(batch: Batch) -> list[FileResult]:
    assert _INGESTER is not None, "pool_init did not run"
    return _INGESTER.run(batch)


def ingest(settings: Settings, batches: list[Batch], defer_facts: bool = False,
           team_id: int = 0) -> Iterator[list[FileResult]]:
    """Read and store ``batches`` in parser processes (one per core at most, one at least),
    each batch's results as they come.

    The processes are supervised (``codenav.proc.supervised``). A parser that hangs on a
    file (a grammar's pathological case, as tree-sitter has had) is killed after
    ``parse_timeout_s`` on that one file, and the batch runs again with the file stored as
    plain text, its ``parse_error`` saying why; if it stalls even so, the file is skipped
    (``stalled``). A process killed from outside is replaced and its batch runs again; one
    killed twice on the same file is treated as stalled on it. Nothing is parsed in the
    calling process, so no file can hold it (a job, the watcher's edits behind it)."""
    if not batches:
        return
    # what every process needs, built here once and inherited (each process built the
    # secret detectors anew in 0.2-0.3 s, and loaded its grammars)
    redaction.preload()
    preload_grammars({language_for(e.path) for b in batches for e in b.entries})
    processes = max(1, min(settings.workers(), len(batches)))
    yield from pooled(supervised(processes, pool_init, (settings, defer_facts, team_id),
                                 pool_run, batches, timeout_s=settings.parse_timeout_s,
                                 on_stall=lambda stall: _stalled(settings, stall)))


def _stalled(settings: Settings, stall: Stall[Batch]) -> Batch:
    """The batch to run again after its process stopped without its results."""
    batch, item = stall.task, stall.item
    if item < 0:
        batch.lost += 1
        if batch.lost > RETRIES:
            raise ProcessLost(f"a parser process died {batch.lost} times on a batch of "
                              f"{len(batch.entries)} files, outside any of them",
                              hint="see the worker's log and the system's (out of memory?)")
        log.warning("a parser process died; its batch of %d files runs again",
                    len(batch.entries))
        return batch
    path = shown(batch.entries[item].path)
    if stall.timed_out:
        what = f"took longer than {settings.parse_timeout_s:g} s"
    else:
        batch.deaths[item] = batch.deaths.get(item, 0) + 1
        if batch.deaths[item] < 2:
            log.warning("a parser process died on %s; its batch runs again", path)
            return batch
        batch.deaths[item] = 0
        what = "killed its parser process twice"
    if item not in batch.as_text:
        batch.as_text[item] = f"parsing it {what}"
        log.warning("%s: parsing it %s; it is stored as plain text", path, what)
    else:
        batch.skip[item] = f"reading it {what}, even as plain text"
        log.warning("%s: reading it %s, even as plain text; it is skipped", path, what)
    return batch


def pooled(results: Iterable[list[FileResult]]) -> Iterator[list[FileResult]]:
    """Batches from parser processes, their languages noted in this process
    (``note_languages``): a worker loads those before it forks its next job's process."""
    for batch in results:
        note_languages({r.language for r in batch if r.parsed and r.language})
        yield batch
