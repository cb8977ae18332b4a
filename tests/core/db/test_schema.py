"""Schema migrations against a real Postgres."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from codenav.db import migrations
from codenav.db import queries as q
from codenav.errors import SchemaMismatch
from codenav.versions import SCHEMA_VERSION


@contextlib.contextmanager
def _store_at(db_url: str, prefix: str, version: int) -> Iterator[psycopg.Connection]:
    """A database of its own, migrated up to ``version`` only (an older store), dropped
    afterwards."""
    base = db_url.rsplit("/", 1)[0]
    name = prefix + db_url.rsplit("_", 1)[-1]
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(f"{base}/{name}", autocommit=True) as conn:
            conn.execute("CREATE TABLE codenav_schema (version integer PRIMARY KEY, "
                         "applied_at timestamptz NOT NULL DEFAULT now())")
            for number, text in migrations.available():
                if number <= version:
                    conn.execute(text.encode())
                    conn.execute("INSERT INTO codenav_schema (version) VALUES (%s)", (number,))
            yield conn
    finally:
        with psycopg.connect(base + "/postgres", autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def test_the_newest_migration_is_the_schema_version() -> None:
    assert migrations.available()[-1][0] == SCHEMA_VERSION
    numbers = [n for n, _ in migrations.available()]
    assert numbers == list(range(1, SCHEMA_VERSION + 1))


def test_migrating_twice_changes_nothing(conn: psycopg.Connection) -> None:
    assert migrations.migrate(conn) == SCHEMA_VERSION
    assert migrations.migrate(conn) == SCHEMA_VERSION
    assert migrations.check(conn) == SCHEMA_VERSION


def test_a_database_built_by_a_newer_schema_is_refused_naming_both_versions(
        conn: psycopg.Connection) -> None:
    conn.execute("INSERT INTO codenav_schema (version) VALUES (%s)", (SCHEMA_VERSION + 7,))
    for action in (migrations.migrate, migrations.check):
        with pytest.raises(SchemaMismatch) as err:
            action(conn)
        assert str(SCHEMA_VERSION + 7) in err.value.message
        assert str(SCHEMA_VERSION) in err.value.message


def test_an_older_database_is_reported_until_migrated(conn: psycopg.Connection) -> None:
    conn.execute("DELETE FROM codenav_schema WHERE version = %s", (SCHEMA_VERSION,))
    with pytest.raises(SchemaMismatch) as err:
        migrations.check(conn)
    assert "codenav migrate" in (err.value.hint or "")


def test_a_version_7_database_migrates_to_teams_with_its_tokens_as_default_admins(
        pg: object, tmp_path: object) -> None:
    """Existing repositories and tokens go to the team ``default``; existing tokens become
    its admins, so current users keep working."""
    import contextlib
    import uuid
    from contextlib import contextmanager

    from psycopg import sql

    from codenav import access
    from codenav.auth import TokenVerifier, hash_token

    base = pg.url.rsplit("/", 1)[0]  # type: ignore[attr-defined]
    name = f"t_old_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(f"{base}/{name}", autocommit=True) as conn:
            conn.execute("CREATE TABLE codenav_schema (version integer PRIMARY KEY, "
                         "applied_at timestamptz NOT NULL DEFAULT now())")
            for number, text in migrations.available():
                if number <= 7:
                    conn.execute(text.encode())
                    conn.execute("INSERT INTO codenav_schema (version) VALUES (%s)", (number,))
            conn.execute("INSERT INTO repos (name, root) VALUES ('legacy', '/srv/legacy')")
            conn.execute("INSERT INTO api_tokens (name, token_hash) VALUES ('old', %s)",
                         (hash_token("cnv_old-token"),))
            assert migrations.migrate(conn) == SCHEMA_VERSION
            repo = access.visible_repos(conn, access.Caller.operator())[0]
            assert (repo.name, repo.team, repo.index_enabled) == ("legacy", "default", True)

            @contextmanager
            def factory():  # type: ignore[no-untyped-def]
                yield conn

            caller = TokenVerifier().verify(factory, "Bearer cnv_old-token")
            assert (caller.role, caller.team, caller.restricted) == ("admin", "default", False)
            scope = access.resolve(conn, caller, None)
            assert scope.name == "legacy" and scope.visible == (repo.id,)
    finally:
        with contextlib.suppress(psycopg.Error), \
                psycopg.connect(base + "/postgres", autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


def test_a_store_indexed_before_refs_keeps_its_index_as_each_repositorys_working_tree(
        pg: object, db_url: str) -> None:
    """Schema 9 -> 10 on a store with rows: every per-file row moves to its repository's
    working tree, chunk texts fold to one row per (chunk, path), and the queries read them."""
    with _store_at(db_url, "upgrade_", 9) as conn:
        conn.execute("""
            INSERT INTO repos (name, root, team_id, indexed_commit)
            SELECT n, '/srv/' || n, t.id, 'c0ffee' FROM teams t,
                   unnest(ARRAY['one', 'two']) AS n;
            INSERT INTO contents (sha, language, chunker, size, line_count, body)
            VALUES ('a1', 'python', 5, 10, 1, 'def f(): pass');
            INSERT INTO chunks (content_id, ord, kind, symbol, start_line, end_line, body,
                                n_terms, tsv)
            SELECT id, 0, 'function', 'f', 1, 1, body, 2, to_tsvector('simple', 'f pass')
            FROM contents;
            INSERT INTO files (repo_id, path, content_id, sha, language, size, mtime_ns,
                               path_tsv)
            SELECT r.id, 'm.py', c.id, c.sha, 'python', 10, 1, to_tsvector('simple', 'm')
            FROM repos r, contents c;
            INSERT INTO chunk_texts (repo_id, path, chunk_id, text_hash)
            SELECT f.repo_id, f.path, c.id, '\\x01' FROM files f JOIN chunks c
              ON c.content_id = f.content_id;
            INSERT INTO graph_edges (repo_id, src_path, ord, line, src_scope, kind,
                                     dst_path, dst_qual, verified, how)
            SELECT id, 'm.py', 0, 1, '', 'call', 'm.py', 'f', true, 'same file' FROM repos;
            INSERT INTO graph_state (repo_id, version, full_build, files_resolved, seconds)
            SELECT id, 2, true, 1, 0.1 FROM repos;
        """)
        assert migrations.migrate(conn) == SCHEMA_VERSION
        trees = conn.execute("SELECT r.name, t.kind, t.commit FROM trees t JOIN repos r "
                             "ON r.id = t.repo_id ORDER BY 1").fetchall()
        assert trees == [("one", "worktree", "c0ffee"), ("two", "worktree", "c0ffee")]
        for (tree,) in conn.execute("SELECT id FROM trees").fetchall():
            assert conn.execute("SELECT path FROM tree_files(%s)", (tree,)).fetchall() == \
                [("m.py",)]
            assert conn.execute("SELECT dst_qual FROM tree_edges(%s)", (tree,)).fetchall() \
                == [("f",)]
            assert conn.execute("SELECT version FROM graph_state WHERE tree_id = %s",
                                (tree,)).fetchone() == (2,)
        assert conn.execute("SELECT count(*) FROM chunk_texts").fetchone() == (1,)


def test_a_store_written_before_schema_12_gets_its_compressed_tsvectors_rewritten(
        pg: object, db_url: str) -> None:
    """Schema 11 -> 12: chunk tsvectors stored compressed are rewritten uncompressed, with
    the same lexemes, positions and weights."""
    with _store_at(db_url, "tsv_", 11) as conn:
        # long, repetitive lexemes: pglz compresses a value only if it finds repeats
        # in its first kilobyte (past a few hundred lexemes' headers it gives up)
        tsv = " ".join(f"'{'value' * 40}{i}':1" for i in range(20))
        conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, "
                     "body) VALUES ('b1', 'python', 5, 10, 1, 'x')")
        conn.execute("""
            INSERT INTO chunks (content_id, ord, kind, symbol, start_line, end_line, body,
                                n_terms, tsv)
            SELECT id, 0, 'function', 'f', 1, 1, 'x', 20, %s::tsvector FROM contents""",
                     (tsv,))
        before = conn.execute("SELECT pg_column_compression(tsv), tsv::text "
                              "FROM chunks").fetchone()
        assert before is not None and before[0] == "pglz"
        assert migrations.migrate(conn) == SCHEMA_VERSION
        after = conn.execute("SELECT pg_column_compression(tsv), tsv::text "
                             "FROM chunks").fetchone()
        assert after == (None, before[1])


def test_a_store_written_before_schema_13_reads_term_postings_from_the_index_alone(
        pg: object, db_url: str) -> None:
    """Schema 12 -> 13: file_terms' key carries tf, so a term's postings (term, content,
    tf) come from an index-only scan; the rows and the key's uniqueness stay."""
    with _store_at(db_url, "terms_", 12) as conn:
        conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, "
                     "body) VALUES ('b1', 'python', 5, 10, 1, 'x'), "
                     "('b2', 'python', 5, 10, 1, 'y')")
        conn.execute("INSERT INTO file_terms (term, content_id, tf) "
                     "SELECT t, c.id, 3 FROM contents c, unnest(ARRAY['alpha', 'beta']) t")
        assert migrations.migrate(conn) == SCHEMA_VERSION
        assert conn.execute("SELECT term, tf FROM file_terms ORDER BY 1, content_id"
                            ).fetchall() == [("alpha", 3), ("alpha", 3), ("beta", 3), ("beta", 3)]
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute("INSERT INTO file_terms (term, content_id, tf) "
                         "SELECT 'alpha', min(id), 1 FROM contents")
        conn.execute("VACUUM ANALYZE file_terms")
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT term, content_id, tf FROM file_terms "
                "WHERE term = ANY(ARRAY['alpha'])"))
        assert "Index Only Scan using file_terms_pkey" in plan, plan


def test_a_store_written_before_schema_14_keeps_the_idf_corpus_size_with_its_stats(
        pg: object, db_url: str) -> None:
    """Schema 13 -> 14: corpus_stats holds the number of contents (IDF's N), so a query
    reads it with the other corpus statistics instead of counting the contents table; it
    stands still until the statistics are refreshed, and a refresh catches up."""
    with _store_at(db_url, "corpus_", 13) as conn:
        conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, "
                     "body) VALUES ('b1', 'python', 5, 10, 1, 'x'), "
                     "('b2', 'python', 5, 10, 1, 'y')")
        assert migrations.migrate(conn) == SCHEMA_VERSION
        assert conn.execute("SELECT n_chunks, n_contents FROM corpus_stats").fetchone() == (0, 2)
        conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, "
                     "body) VALUES ('b3', 'python', 5, 10, 1, 'z')")
        assert conn.execute("SELECT n_contents FROM corpus_stats").fetchone() == (2,)
        conn.execute("REFRESH MATERIALIZED VIEW CONCURRENTLY corpus_stats")
        assert conn.execute("SELECT n_contents FROM corpus_stats").fetchone() == (3,)


def test_a_store_written_before_schema_15_keeps_content_rows_and_collects_them_with_it(
        pg: object, db_url: str) -> None:
    """Schema 14 -> 15: chunks, symbols, refs and file_terms lose their foreign key to
    contents (its per-row check cost the bulk writes most of their time); their rows stay,
    and garbage collection still takes a content's rows with it, leaving the rows of a
    content a file still points at."""
    children = ("chunks", "symbols", "refs", "file_terms")
    with _store_at(db_url, "unchecked_", 14) as conn:
        conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, "
                     "body) VALUES ('kept', 'python', 5, 10, 1, 'x'), "
                     "('gone', 'python', 5, 10, 1, 'y')")
        conn.execute("""INSERT INTO chunks (content_id, ord, kind, symbol, start_line,
                                            end_line, body, n_terms, tsv)
                        SELECT id, 0, 'function', 'f', 1, 1, 'x', 1, 'x'::tsvector
                        FROM contents""")
        conn.execute("INSERT INTO symbols (content_id, ord, name, qualname, kind, depth, "
                     "start_line, end_line, signature, doc, exported) "
                     "SELECT id, 0, 'f', 'f', 'function', 0, 1, 1, 'f()', '', true "
                     "FROM contents")
        conn.execute("INSERT INTO refs (content_id, ord, kind, name, line) "
                     "SELECT id, 0, 'call', 'g', 1 FROM contents")
        conn.execute("INSERT INTO file_terms (term, content_id, tf) "
                     "SELECT 'alpha', id, 1 FROM contents")
        assert migrations.migrate(conn) == SCHEMA_VERSION
        keys = conn.execute(
            "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND "
            "confrelid = 'contents'::regclass AND conrelid = ANY(%s::regclass[])",
            (list(children),)).fetchone()
        assert keys == (0,)
        for table in children:
            assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
                sql.Identifier(table))).fetchone() == (2,), table
        repo = conn.execute("INSERT INTO repos (name, root, team_id) SELECT 'r', '/r', "
                            "min(id) FROM teams RETURNING id").fetchone()
        assert repo is not None
        tree = conn.execute("INSERT INTO trees (repo_id, kind) VALUES (%s, 'worktree') "
                            "RETURNING id", (repo[0],)).fetchone()
        assert tree is not None
        conn.execute("INSERT INTO files (repo_id, tree_id, path, content_id, sha, language, "
                     "size, mtime_ns, path_tsv) SELECT %s, %s, 'a.py', id, sha, language, 10, 0, "
                     "'a' FROM contents WHERE sha = 'kept'", (repo[0], tree[0]))
        assert conn.execute(q.GC_DELETE).fetchone() == (1,)
        kept = conn.execute("SELECT id FROM contents").fetchall()
        assert len(kept) == 1
        for table in children:
            assert conn.execute(sql.SQL("SELECT array_agg(DISTINCT content_id) FROM {}").format(
                sql.Identifier(table))).fetchone() == ([kept[0][0]],), table


def test_a_store_written_before_schema_16_keeps_which_contents_lack_graph_facts(
        pg: object, db_url: str) -> None:
    """Schema 15 -> 16: the contents whose graph facts a first index left for later move
    from contents.facts_pending to pending_facts; a claim deletes their rows there and
    leaves the contents row, and so its indexes, untouched."""
    with _store_at(db_url, "pending_", 15) as conn:
        conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, body, "
                     "facts_pending) VALUES ('done', 'python', 5, 10, 1, 'x', false), "
                     "('left', 'python', 5, 10, 1, 'y', true)")
        assert migrations.migrate(conn) == SCHEMA_VERSION
        assert conn.execute("SELECT c.sha FROM pending_facts p JOIN contents c "
                            "ON c.id = p.content_id").fetchall() == [("left",)]
        assert conn.execute("SELECT count(*) FROM information_schema.columns WHERE "
                            "table_schema = current_schema() AND table_name = 'contents' "
                            "AND column_name = 'facts_pending'").fetchone() == (0,)
        left = conn.execute("SELECT id, xmin::text FROM contents WHERE sha = 'left'").fetchone()
        assert left is not None
        assert conn.execute(q.FACTS_CLAIM, ([left[0]],)).fetchall() == [(left[0],)]
        assert conn.execute(q.FACTS_CLAIM, ([left[0]],)).fetchall() == []  # claimed once
        assert conn.execute("SELECT xmin::text FROM contents WHERE id = %s",
                            (left[0],)).fetchone() == (left[1],)


def test_a_store_written_before_schema_18_keeps_its_bodies_in_the_grep_index(
        pg: object, db_url: str) -> None:
    """Schema 17 -> 18: the contents a store holds stay in the trigram index, which now
    holds only the contents whose grep_ready is on (a first index's wait for the graph
    job)."""
    with _store_at(db_url, "grams_", 17) as conn:
        conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, body) "
                     "VALUES ('old', 'python', 5, 10, 1, 'class TokenStore: pass')")
        assert migrations.migrate(conn) == SCHEMA_VERSION
        assert conn.execute("SELECT sha, grep_ready FROM contents").fetchall() == [
            ("old", True)]
        definition = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = "
                                  "'contents_body_trgm_idx'").fetchone()
        assert definition is not None and "WHERE grep_ready" in definition[0]
        conn.execute("SET enable_seqscan = off")
        plan = " ".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM contents WHERE grep_ready AND body LIKE '%TokenStore%'"))
        assert "contents_body_trgm_idx" in plan


def test_a_working_tree_cannot_be_layered(pg: object, db_url: str) -> None:
    """Schema 17: statements for a working tree read its tables by tree id
    (``queries.flat_tree``), so the store refuses a working tree with a base or a layer."""
    with _store_at(db_url, "flat_", 16) as conn:
        repo = conn.execute("INSERT INTO repos (name, root, team_id) SELECT 'r', '/r', "
                            "min(id) FROM teams RETURNING id").fetchone()
        assert repo is not None
        base = conn.execute("INSERT INTO trees (repo_id, kind, commit) VALUES (%s, 'commit', "
                            "'a') RETURNING id", repo).fetchone()
        assert base is not None
        conn.execute("INSERT INTO trees (repo_id, kind, base_id) VALUES (%s, 'commit', %s)",
                     (repo[0], base[0]))
        conn.execute("INSERT INTO trees (repo_id, kind) VALUES (%s, 'worktree')", repo)
        assert migrations.migrate(conn) == SCHEMA_VERSION
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE trees SET base_id = %s WHERE kind = 'worktree'", base)
