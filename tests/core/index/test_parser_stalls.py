"""Parser processes that hang on a file or are killed: the index goes on and converges.

A plain process pool lost the result of a process killed mid-batch for good, and the job
waited for it for ever; a grammar that hangs on a file held its job the same way.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import psycopg

from codenav import navigate, repos, status
from codenav.access import Scope
from codenav.config import Settings
from codenav.index import reconcile
from codenav.index.ingest import Batch, _stalled, read_entry
from codenav.index.walk import FileEntry
from codenav.proc import Stall
from codenav.tools.status import render


def _java_class(name: str, methods: int) -> str:
    return f"public class {name} {{\n" + "".join(
        f"    /** Doc {m}. */\n    public int m{m}(int a) {{\n        int b = a + {m};\n"
        f"        return helper{m}(b) * 2;\n    }}\n" for m in range(methods)) + "}\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)


def _contents(conn: psycopg.Connection, repo_id: int) -> dict[str, tuple[str, int, int]]:
    """path -> (parse_error, symbols, chunks) of the repository's files."""
    rows = conn.execute(
        "SELECT f.path, c.parse_error,"
        " (SELECT count(*) FROM symbols s WHERE s.content_id = c.id),"
        " (SELECT count(*) FROM chunks k WHERE k.content_id = c.id)"
        " FROM files f JOIN contents c ON c.id = f.content_id WHERE f.repo_id = %s",
        (repo_id,)).fetchall()
    return {p: (e, int(s), int(k)) for p, e, s, k in rows}


def test_a_file_that_outlasts_the_parse_timeout_is_stored_as_text_and_the_rest_parsed(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    # about 3 MB of Java: parsing and cutting it takes seconds, its lines a few
    # milliseconds; every other file parses in about one
    slow = replace(settings, parse_timeout_s=0.5, max_file_bytes=8 << 20)
    root = tmp_path / "r"
    files = {f"src/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(30)}
    files["src/Big.java"] = "package p;\n" + "".join(_java_class(f"C{c}", 20)
                                                     for c in range(1500))
    _write(root, files)
    repo = repos.register(conn, str(root), "r")
    started = time.monotonic()
    reconcile.reconcile(slow, repo.id)
    assert time.monotonic() - started < 60
    got = _contents(conn, repo.id)
    assert set(got) == set(files)
    error, symbols, chunks = got["src/Big.java"]
    assert error == "parsing it took longer than 0.5 s"
    assert symbols == 0 and chunks > 1000  # its lines, as windows: still searchable
    assert all(got[p][:2] == ("", 1) for p in files if p.endswith(".py"))
    assert conn.execute("SELECT count(*) FROM skipped WHERE repo_id = %s",
                        (repo.id,)).fetchone() == (0,)
    # status names it, and why
    answer = status.repo_status(conn, Scope.system(repos.get(conn, repo.id)))
    assert answer["as_text"]["total"] == 1
    assert answer["as_text"]["examples"] == [{"path": "src/Big.java",
                                              "reason": "parsing it took longer than 0.5 s"}]
    assert ("indexed as plain text (structure not read): 1: src/Big.java (parsing it took "
            "longer than 0.5 s)") in render({"repos": [answer]})
    # and so does its outline, which has no symbols to show
    empty = navigate.outline(conn, Scope.system(repos.get(conn, repo.id)), "src/Big.java")
    assert empty["empty"] == {"code": "no_symbols", "message": "its structure could not be "
                              "read (parsing it took longer than 0.5 s); it is indexed as text"}


def test_a_parser_process_killed_mid_batch_is_replaced_and_its_batch_runs_again(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = tmp_path / "k"
    files = {f"src/p{i // 50}/K{i}.java": "package p;\n" + _java_class(f"K{i}", 60)
             for i in range(400)}
    _write(root, files)
    repo = repos.register(conn, str(root), "k")
    me = psutil.Process()
    before = {c.pid for c in me.children()}
    done = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            reconcile.reconcile(settings, repo.id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and not done.is_set() and time.monotonic() < deadline:
        parsers = [c for c in me.children() if c.pid not in before
                   and c.cmdline() == me.cmdline()]
        if parsers:
            time.sleep(0.3)  # well into its first batch
            os.kill(parsers[0].pid, signal.SIGKILL)
            killed = parsers[0].pid
        time.sleep(0.01)
    assert killed is not None, "no parser process was seen"
    assert done.wait(120), "the run waited for the killed process's batch"
    assert not failed
    got = _contents(conn, repo.id)
    assert set(got) == set(files)
    # the killed process's batch ran again in full: nothing lost, nothing treated as text
    assert all(error == "" and symbols == 61 for error, symbols, _ in got.values())


def test_what_a_stalled_batch_becomes(settings: Settings) -> None:
    entries = [FileEntry(f"f{i}.py", 1, 0) for i in range(3)]
    batch = Batch("/r", entries)
    # a process killed from outside once: no verdict on the file, the batch runs as it was
    again = _stalled(settings, Stall(batch, 1, timed_out=False, count=1))
    assert (again.as_text, again.skip) == ({}, {})
    # a second death on the same file, or a timeout: its structure is not read
    again = _stalled(settings, Stall(again, 1, timed_out=False, count=2))
    assert again.as_text == {1: "parsing it killed its parser process twice"}
    again = _stalled(settings, Stall(again, 2, timed_out=True, count=3))
    assert again.as_text[2] == "parsing it took longer than 20 s"
    # stalled even as plain text: left out, with the reason
    again = _stalled(settings, Stall(again, 2, timed_out=True, count=4))
    assert again.skip == {2: "reading it took longer than 20 s, even as plain text"}


def test_a_fifo_swapped_in_since_the_walk_is_not_waited_for(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(
        read_entry(tmp_path, FileEntry("pipe.py", 0, 0), 1 << 20)), daemon=True)
    reader.start()
    reader.join(10)
    if not got:  # let the test end: a writer releases the blocked open
        with open(tmp_path / "pipe.py", "wb"):
            pass
    assert got, "reading a FIFO waited for a writer"
    result = got[0]
    assert getattr(result, "skip", "") == "unreadable"
    assert getattr(result, "detail", "") == "not a regular file"
