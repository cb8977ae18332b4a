"""Parser processes claim a content before parsing it, so a content several workers meet at
once is parsed by one of them; the others wait for its rows, or parse it themselves when the
claimer died first. Against a real Postgres, with a second connection as the other worker."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from codenav.config import Settings
from codenav.db import queries as q
from codenav.index.ingest import FileResult, Ingester, pooled, read_entry
from codenav.index.walk import FileEntry
from codenav.parse import chunker
from codenav.versions import CHUNKER_VERSION

SOURCE = "def shared(x):\n    return x + 1\n"


def _entry(root: Path) -> FileEntry:
    path = root / "shared.py"
    path.write_text(SOURCE)
    st = path.stat()
    return FileEntry("shared.py", st.st_size, st.st_mtime_ns)


def _key(settings: Settings, root: Path, entry: FileEntry) -> str:
    read = read_entry(root, entry, settings.max_file_bytes)
    assert not isinstance(read, FileResult)
    return f"{read.sha}:{read.language}:{CHUNKER_VERSION}"


def _claim(conn: psycopg.Connection, key: str) -> None:
    """Claim a content as a parser process does before parsing it."""
    assert conn.execute(q.CONTENT_CLAIM, ([key],)).fetchall() == [(key,)]


def _process_in_background(ingester: Ingester, root: Path, entry: FileEntry
                           ) -> tuple[threading.Thread, list[list[FileResult]]]:
    out: list[list[FileResult]] = []
    thread = threading.Thread(target=lambda: out.append(ingester.process(root, [entry])))
    thread.start()
    return thread, out


def _wait_until_blocked(conn: psycopg.Connection, thread: threading.Thread) -> None:
    """Until the ingester waits on an advisory lock (bounded: the thread must not finish)."""
    for _ in range(600):
        waiting = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                               "AND NOT granted").fetchone()
        if waiting and waiting[0] == 1:
            return
        assert thread.is_alive(), "the ingester did not wait for the claimed content"
        thread.join(0.05)
    raise AssertionError("the ingester never waited for the claim")


def test_a_content_another_worker_is_parsing_is_waited_for_then_read_not_parsed_again(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    key = _key(settings, tmp_path, entry)
    waiter, claimer = Ingester(settings), Ingester(settings)
    try:
        _claim(claimer.conn, key)
        thread, out = _process_in_background(waiter, tmp_path, entry)
        _wait_until_blocked(conn, thread)
        # The claimer parses and stores the content (its claim is re-entrant)...
        (stored,) = claimer.process(tmp_path, [entry])
        assert stored.parsed
        assert thread.is_alive(), "the waiter went on while the content was still claimed"
        claimer.conn.execute(q.CONTENT_RELEASE, ([key],))  # ...then lets go of it
        thread.join(30)
        (waited,) = out[0]
    finally:
        waiter.close()
        claimer.close()
    assert (waited.content_id, waited.parsed) == (stored.content_id, False)
    assert conn.execute("SELECT count(*) FROM contents").fetchone() == (1,)


def test_a_content_whose_claimer_died_unstored_is_parsed_by_the_waiter(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    entry = _entry(tmp_path)
    other = psycopg.connect(settings.database_url, autocommit=True)
    _claim(other, _key(settings, tmp_path, entry))
    waiter = Ingester(settings)
    try:
        thread, out = _process_in_background(waiter, tmp_path, entry)
        _wait_until_blocked(conn, thread)
        other.close()  # what a killed worker's connection does: its claims go with it
        thread.join(30)
        (result,) = out[0]
    finally:
        waiter.close()
    assert result.parsed and result.content_id
    chunks = conn.execute("SELECT count(*) FROM chunks WHERE content_id = %s",
                          (result.content_id,)).fetchone()
    assert chunks is not None and chunks[0] >= 1


def test_the_languages_parser_processes_parsed_are_noted_in_the_job_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker learns from them which grammars and queries to load before it forks."""
    monkeypatch.setattr(chunker, "_MET", set())
    batches = [[FileResult("a.rb", 10, 0, language="ruby", parsed=True),
                FileResult("b.go", 10, 0, language="go"),  # known already: not parsed here
                FileResult("c.txt", 10, 0, language="text", parsed=True)],  # no grammar
               [FileResult("d.bin", 10, 0, skip="binary")]]
    assert list(pooled(iter(batches))) == batches
    assert chunker._MET == {"ruby"}
    assert "ruby" in chunker.languages_met()
