"""Indexing a repository in-process against a real Postgres."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import psycopg
import pytest

from codenav import repos
from codenav.config import Settings
from codenav.errors import Unavailable
from codenav.index import reconcile
from codenav.index.blob import git_blob_sha


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body)


def test_unchanged_files_are_not_parsed_twice(settings: Settings, conn: psycopg.Connection,
                                              tmp_path: Path) -> None:
    root = tmp_path / "r"
    _write(root, {"a.py": "def alpha():\n    return 1\n", "b.py": "class B:\n    pass\n"})
    repo = repos.register(conn, str(root), "r")
    first = reconcile.reconcile(settings, repo.id)
    assert (first.files_total, first.files_parsed) == (2, 2)
    second = reconcile.reconcile(settings, repo.id)
    assert (second.files_changed, second.files_parsed) == (0, 0)


def test_identical_files_in_two_repos_are_stored_once(settings: Settings,
                                                      conn: psycopg.Connection,
                                                      tmp_path: Path) -> None:
    body = "def shared():\n    return 42\n"
    for name in ("one", "two"):
        _write(tmp_path / name, {"lib/shared.py": body})
        repo = repos.register(conn, str(tmp_path / name), name)
        reconcile.reconcile(settings, repo.id)
    rows = conn.execute("SELECT sha, count(*) FROM contents GROUP BY sha").fetchall()
    assert rows == [(git_blob_sha(body.encode()), 1)]
    assert conn.execute("SELECT count(*) FROM files").fetchone() == (2,)


def test_content_is_keyed_by_the_git_blob_id(settings: Settings, conn: psycopg.Connection,
                                             tmp_path: Path) -> None:
    import subprocess

    root = tmp_path / "g"
    _write(root, {"x.go": "package x\n\nfunc X() {}\n"})
    expected = subprocess.run(["git", "hash-object", str(root / "x.go")], capture_output=True,
                              text=True, check=True).stdout.strip()
    repo = repos.register(conn, str(root), "g")
    reconcile.reconcile(settings, repo.id)
    assert conn.execute("SELECT sha FROM files").fetchone() == (expected,)


def test_a_deleted_file_leaves_no_chunks_behind(settings: Settings, conn: psycopg.Connection,
                                                tmp_path: Path) -> None:
    root = tmp_path / "d"
    _write(root, {"keep.py": "def keep():\n    pass\n", "gone.py": "def gone_symbol():\n  pass\n"})
    repo = repos.register(conn, str(root), "d")
    reconcile.reconcile(settings, repo.id)
    (root / "gone.py").unlink()
    summary = reconcile.reconcile(settings, repo.id)
    assert summary.files_deleted == 1
    assert conn.execute("SELECT count(*) FROM chunks WHERE symbol = 'gone_symbol'").fetchone() \
        == (0,)
    assert conn.execute("SELECT path FROM files").fetchall() == [("keep.py",)]


def test_bad_inputs_are_skipped_with_a_reason_and_do_not_block_the_rest(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = tmp_path / "bad"
    _write(root, {
        "good.py": "def good():\n    return 'ok'\n",
        "image.bin": b"\x89PNG\r\n\x1a\n\x00\x00\x00binary",
        "nul.c": b"int main() {\x00 return 0; }\n",
        "huge.txt": "x = 1\n" * 300_000,
        "bundle.js": "var a=1;" * 2000,
        "latin1.py": "name = 'caf\xe9'\n".encode("latin-1"),
        ".env": "SECRET=hunter2\n",
        "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "package-lock.json": "{}\n",
        "node_modules/dep/index.js": "module.exports = 1\n",
    })
    (root / "loop").symlink_to(root)
    (root / "outside").symlink_to("/etc")
    repo = repos.register(conn, str(root), "bad")
    reconcile.reconcile(settings, repo.id)
    indexed = {r[0] for r in conn.execute("SELECT path FROM files")}
    assert indexed == {"good.py", "latin1.py"}
    reasons = dict(conn.execute("SELECT path, reason FROM skipped").fetchall())
    assert reasons["image.bin"] == "binary"
    assert reasons["nul.c"] == "binary"
    assert reasons["huge.txt"] == "too_large"
    assert reasons["bundle.js"] == "minified"
    assert reasons[".env"] == "secret"
    assert reasons["id_rsa"] == "secret"
    assert reasons["package-lock.json"] == "lock_file"
    assert reasons["node_modules/"] == "ignored_dir"
    assert reasons["loop"] == "symlink"
    assert reasons["outside"] == "symlink"
    body = conn.execute("SELECT c.body FROM contents c JOIN files f ON f.content_id = c.id "
                        "WHERE f.path = 'latin1.py'").fetchone()
    assert body is not None and "caf\ufffd" in body[0]
    secrets_seen = conn.execute("SELECT count(*) FROM chunks WHERE body LIKE '%hunter2%'")
    assert secrets_seen.fetchone() == (0,)


def test_a_file_skipped_for_its_bytes_is_not_read_again_until_it_changes(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """A binary without a binary extension (Apache Kafka's serialized test data) or a
    minified file was read, and counted changed, by every run; now only when it changes,
    or when the rule that judged it does."""
    root = tmp_path / "settled"
    _write(root, {"a.py": "A = 1\n", "data/serialized": b"\xac\xed\x00\x05sr\x00",
                  "app.js": "var a=1;" * 2000})
    repo = repos.register(conn, str(root), "settled")
    reconcile.reconcile(settings, repo.id)

    def skipped() -> dict[str, str]:
        return dict(conn.execute("SELECT path, reason FROM skipped WHERE repo_id = %s",
                                 (repo.id,)).fetchall())

    expected = {"data/serialized": "binary", "app.js": "minified"}
    assert skipped() == expected
    again = reconcile.reconcile(settings, repo.id)
    assert (again.files_changed, again.files_parsed) == (0, 0)
    assert skipped() == expected  # still listed, though not read
    # a path job over the directory keeps it listed too
    assert reconcile.reconcile(settings, repo.id, ["data"]).files_changed == 0
    assert skipped() == expected

    (root / "data/serialized").write_bytes(b"\xac\xed\x00\x05sr\x00 more")
    changed = reconcile.reconcile(settings, repo.id)
    assert changed.files_changed == 1 and skipped() == expected
    # a verdict the current rule no longer words the same way is judged again
    conn.execute("UPDATE skipped SET detail = 'an older rule' WHERE path = 'app.js'")
    assert reconcile.reconcile(settings, repo.id).files_changed == 1
    assert skipped() == expected
    # text again: indexed, and no longer listed
    (root / "data/serialized").write_text("now = 'text'\n")
    reconcile.reconcile(settings, repo.id)
    assert skipped() == {"app.js": "minified"}
    assert {p for (p,) in conn.execute("SELECT path FROM files WHERE repo_id = %s",
                                       (repo.id,))} == {"a.py", "data/serialized"}


def test_a_large_first_index_keeps_the_skips_of_every_batch(settings: Settings,
                                                           conn: psycopg.Connection,
                                                           tmp_path: Path) -> None:
    """A first index publishes in slices; binaries met in early slices stay listed."""
    root = tmp_path / "big"
    files: dict[str, str | bytes] = {f"m{i:04d}.py": f"V{i} = {i}\n" for i in range(1200)}
    files.update({f"img{i}.pgm": b"P5 1 1\x00" + bytes([i]) for i in range(20)})
    _write(root, files)
    repo = repos.register(conn, str(root), "big")
    reconcile.reconcile(settings, repo.id)
    skipped = {p for (p,) in conn.execute("SELECT path FROM skipped WHERE repo_id = %s",
                                          (repo.id,))}
    assert skipped == {f"img{i}.pgm" for i in range(20)}
    assert conn.execute("SELECT count(*) FROM files WHERE repo_id = %s",
                        (repo.id,)).fetchone() == (1200,)


def test_gitignore_and_codenavignore_are_respected(settings: Settings,
                                                   conn: psycopg.Connection,
                                                   tmp_path: Path) -> None:
    root = tmp_path / "ig"
    _write(root, {".gitignore": "generated/\n*.log\n!keep.log\n",
                  "sub/.codenavignore": "private.py\n",
                  "main.py": "x = 1\n", "generated/out.py": "y = 2\n", "debug.log": "z\n",
                  "keep.log": "kept words here\n", "sub/private.py": "p = 1\n",
                  "sub/public.py": "q = 1\n"})
    repo = repos.register(conn, str(root), "ig")
    reconcile.reconcile(settings, repo.id)
    indexed = {r[0] for r in conn.execute("SELECT path FROM files")}
    assert indexed == {".gitignore", "main.py", "keep.log", "sub/public.py",
                       "sub/.codenavignore"}


def test_a_path_job_replaces_one_file_and_keeps_the_others(settings: Settings,
                                                           conn: psycopg.Connection,
                                                           tmp_path: Path) -> None:
    root = tmp_path / "p"
    _write(root, {"a.py": "def old_name():\n    pass\n", "b.py": "def other():\n    pass\n"})
    repo = repos.register(conn, str(root), "p")
    reconcile.reconcile(settings, repo.id)
    (root / "a.py").write_text("def new_name():\n    pass\n")
    summary = reconcile.reconcile(settings, repo.id, ["a.py"])
    assert summary.files_parsed == 1
    symbols = {r[0] for r in conn.execute(
        "SELECT c.symbol FROM chunks c JOIN files f ON f.content_id = c.content_id "
        "WHERE c.symbol IS NOT NULL")}
    assert symbols == {"new_name", "other"}
    assert conn.execute("SELECT count(*) FROM contents").fetchone() == (2,)


def test_a_name_that_is_not_utf8_or_holds_a_line_break_is_skipped_and_the_rest_indexed(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """File names are bytes: one that is not UTF-8 cannot be stored or shown as a path (it
    used to stop the whole index with an encoding error). It is skipped with a reason, in
    a full walk, in a path job (the watcher's) and under a folder of such a name."""
    root = tmp_path / "names"
    _write(root, {"good.py": "def good():\n    return 1\n",
                  "sp ace.py": "def space():\n    return 2\n",
                  "new\nline.py": "def newline():\n    return 3\n"})
    raw = os.fsencode(root)
    os.mkdir(raw + b"/d\xffir")
    for name in (b"/bad\xff.py", b"/d\xffir/inner.py"):
        with open(raw + name, "wb") as handle:
            handle.write(b"def bad():\n    return 4\n")
    repo = repos.register(conn, str(root), "names")
    reconcile.reconcile(settings, repo.id)
    assert {r[0] for r in conn.execute("SELECT path FROM files")} == {"good.py", "sp ace.py"}
    skipped = {r[0]: (r[1], r[2]) for r in conn.execute(
        "SELECT path, reason, detail FROM skipped")}
    assert skipped == {"bad\ufffd.py": ("bad_name", "file name is not valid UTF-8"),
                       "d\ufffdir/": ("bad_name", "file name is not valid UTF-8"),
                       "new\\nline.py": ("bad_name", "control character in file name")}
    # a path job names it as the watcher saw it (surrogates): skipped again, the rest done
    (root / "good.py").write_text("def good():\n    return 5\n")
    summary = reconcile.reconcile(settings, repo.id, paths=[os.fsdecode(b"bad\xff.py"),
                                                             "good.py"])
    assert summary.files_parsed == 1
    assert "bad\ufffd.py" in {r[0] for r in conn.execute("SELECT path FROM skipped")}


def test_a_first_index_analyses_every_searched_table_and_counts_its_corpus(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """The statistics are refreshed on two connections at once (``refresh_stats``): every
    table the queries plan over is analysed, and the corpus size is there."""
    analysed = ("SELECT DISTINCT tablename FROM pg_stats WHERE schemaname = 'public' "
                "AND tablename IN ('chunks', 'files', 'contents', 'symbols') ORDER BY 1")
    assert conn.execute(analysed).fetchall() == []
    root = tmp_path / "r"
    _write(root, {f"m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(30)})
    repo = repos.register(conn, str(root), "r")
    reconcile.reconcile(settings, repo.id)
    assert [t for (t,) in conn.execute(analysed)] == ["chunks", "contents", "files", "symbols"]
    row = conn.execute("SELECT n_chunks, n_contents FROM corpus_stats").fetchone()
    assert row is not None and row[0] >= 30 and row[1] >= 30


def test_refreshing_statistics_reports_a_failure_of_its_second_connection(
        settings: Settings, conn: psycopg.Connection) -> None:
    """The tables analysed beside ``chunks`` fail loudly, not silently: a store the second
    connection cannot reach is an error of the refresh."""
    unreachable = dataclasses.replace(settings,
                                      database_url="postgresql://codenav@127.0.0.1:1/x")
    with pytest.raises(Unavailable):
        reconcile.refresh_stats(conn, unreachable)


def test_symbols_and_refs_are_stored_as_parsed_with_escapes_tabs_and_unicode(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """Symbols, chunks and refs go in by binary COPY: text that COPY's text format would
    have to escape (backslashes, tabs, line breaks, quotes) and non-ASCII names arrive as
    the parser made them."""
    from codenav.graph.extract import extract
    from codenav.parse.chunker import parse_file

    body = ('import os\n\n\nclass Grüße(Base, mixins.Tabs):\n'
            '    """Say \\\\n hello to "them" \\t, \'all\' — ünïcode\\\\."""\n\n'
            '    def naïve(self, sep="\t", path="C:\\\\temp\\\\x"):\n'
            '        """Line one \\\\ line two."""\n'
            '        return os.path.join(path, sep)\n\n\n'
            'def größe(x):\n    return Grüße().naïve(x)\n')
    root = tmp_path / "r"
    _write(root, {"m.py": body})
    repo = repos.register(conn, str(root), "r")
    reconcile.reconcile(settings, repo.id)
    parsed = parse_file(body, "python")
    assert len(parsed.symbols) == 3
    assert "\\" in parsed.symbols[0].doc and "\\" in parsed.symbols[1].signature
    assert any("\t" in c.content for c in parsed.chunks)
    cid = conn.execute("SELECT content_id FROM files WHERE path = 'm.py'").fetchone()[0]
    stored = conn.execute(
        "SELECT name, kind, qualname, parent, start_line, end_line, signature, doc, "
        "exported, depth, bases FROM symbols WHERE content_id = %s ORDER BY ord",
        (cid,)).fetchall()
    assert stored == [(s.name, s.kind, s.qualname, s.parent, s.start_line, s.end_line,
                       s.signature, s.doc, s.exported, s.depth, list(s.bases))
                      for s in parsed.symbols]
    chunks = conn.execute("SELECT symbol, body FROM chunks WHERE content_id = %s ORDER BY ord",
                          (cid,)).fetchall()
    assert chunks == [(c.symbol, c.content) for c in parsed.chunks]
    refs = conn.execute("SELECT kind, name, qualifier, alias, line, scope FROM refs "
                        "WHERE content_id = %s ORDER BY ord", (cid,)).fetchall()
    expected = extract(body, "python", parsed.symbols, parsed.tree, parsed.src)
    assert refs == [tuple(r) for r in expected] and refs
