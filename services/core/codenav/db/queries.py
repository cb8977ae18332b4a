"""Every SQL statement codenav runs, in one visible place. Parameters are always bound
(``%s`` / ``%(name)s``), never formatted into the text.

Every statement that answers a caller with rows of a repository carries the caller's
visibility predicate, ``... repo_id = ANY(%(visible)s::int[])`` (see ``codenav.access``), on
top of the repository it is about: what a token may see is part of the query, not a check
after it (tests/core/db/test_visibility_sql.py fails on a statement without it). Statements in
``GLOBAL`` return no repository's rows (settings, corpus-wide statistics, models, tokens).
"""

# ruff: noqa: E501

from psycopg import sql

# --- schema and migrations ---------------------------------------------------------------
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(7248001)"
SCHEMA_TABLE_CREATE = """
CREATE TABLE IF NOT EXISTS codenav_schema (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""
SCHEMA_TABLE_EXISTS = "SELECT to_regclass('codenav_schema') IS NOT NULL"
SCHEMA_CURRENT = "SELECT max(version) FROM codenav_schema"
SCHEMA_RECORD = "INSERT INTO codenav_schema (version) VALUES (%s)"

# --- sessions ----------------------------------------------------------------------------
# Query sessions: trigram matches below 0.4 similarity are noise and cost time.
SESSION_SETUP = "SET pg_trgm.similarity_threshold = 0.4"
# The API prepares the statements it repeats (``connect.API_PREPARE_THRESHOLD``); each
# execution is still planned for its parameters: a generic plan, the same for a rare term
# and a common one, made search more than ten times slower (p50 150 against 12 ms).
SESSION_PLANS = "SET plan_cache_mode = force_custom_plan"

# --- a working tree's rows, read without the layers --------------------------------------
# tree_files(t), tree_ranks(t), tree_links(t), tree_imports(t) and tree_edges(t) read a
# layered tree (a branch's commit, an overlay) through its layers; a working tree holds all
# of its rows itself (constraint trees_worktree_flat), so a statement for one reads the
# tables by tree id instead (``codenav.access.Scope.sql``). Every statement through the
# functions plans and probes the two layers: on Apache Kafka that was a fifth of Postgres's
# CPU per find_files query (23.5 against 18.3 ms, 200 queries, in one process, 4 rounds
# alternated).
_FLAT_TREE = (("tree_files(%(tree)s)", "(SELECT * FROM files WHERE tree_id = %(tree)s)"),
              ("tree_ranks(%(tree)s)", "(SELECT * FROM graph_files WHERE tree_id = %(tree)s)"),
              ("tree_links(%(tree)s)", "(SELECT * FROM graph_links WHERE tree_id = %(tree)s)"),
              ("tree_imports(%(tree)s)", "(SELECT * FROM graph_imports WHERE tree_id = %(tree)s)"),
              ("tree_edges(%(tree)s)", "(SELECT * FROM graph_edges WHERE tree_id = %(tree)s)"))
_flat: dict[str, str] = {}


def flat_tree(statement: str) -> str:
    """``statement`` for a tree that holds all of its rows itself (a working tree)."""
    out = _flat.get(statement)
    if out is None:
        out = statement
        for layered, own in _FLAT_TREE:
            out = out.replace(layered, own)
        _flat[statement] = out
    return out


# --- repos -------------------------------------------------------------------------------
# A repository row: id, name, root, created_at, indexed_at and indexed_commit (of its
# default tree), team, indexed, source, default ref, followed patterns, keep, the id of
# its default tree (NULL: nothing indexed yet), and its team's id. Joined after ``repos r`` (or a CTE ``r``).
_REPO_COLUMNS = ("r.id, r.name, r.root, r.created_at, d.indexed_at, d.commit, t.name, "
                 "r.index_enabled, r.source, r.default_ref, r.follow, r.keep, d.id, r.team_id")
_REPO_JOINS = """JOIN teams t ON t.id = r.team_id
LEFT JOIN LATERAL (
    SELECT x.id, x.indexed_at, x.commit FROM trees x
    WHERE x.repo_id = r.id AND CASE WHEN r.default_ref IS NULL THEN x.kind = 'worktree'
        ELSE x.id = (SELECT rr.tree_id FROM repo_refs rr
                     WHERE rr.repo_id = r.id AND rr.name = r.default_ref) END
    LIMIT 1) d ON true"""
# Registering a checkout creates its working tree (empty until the first index).
REPO_INSERT = """
WITH r AS (
    INSERT INTO repos (name, root, team_id, index_enabled) VALUES (%s, %s, %s, %s)
    ON CONFLICT (team_id, name) DO UPDATE SET root = EXCLUDED.root,
        index_enabled = EXCLUDED.index_enabled
    RETURNING *),
w AS (
    INSERT INTO trees (repo_id, kind, ready) SELECT id, 'worktree', true FROM r
    ON CONFLICT (repo_id) WHERE kind = 'worktree' DO NOTHING
    RETURNING id, repo_id)
SELECT @COLUMNS@ FROM r @JOINS@ LEFT JOIN w ON w.repo_id = r.id""".replace(
    "@COLUMNS@", _REPO_COLUMNS.replace("d.id", "coalesce(d.id, w.id)")).replace(
    "@JOINS@", _REPO_JOINS)
REPO_BY_ID = "SELECT @COLUMNS@ FROM repos r @JOINS@ WHERE r.id = %s".replace(
    "@COLUMNS@", _REPO_COLUMNS).replace("@JOINS@", _REPO_JOINS)
REPO_BY_ROOT = """
SELECT @COLUMNS@ FROM repos r @JOINS@
WHERE r.root = %s AND r.team_id = %s AND r.source <> 'remote'""".replace(
    "@COLUMNS@", _REPO_COLUMNS).replace("@JOINS@", _REPO_JOINS)
REPO_LIST = "SELECT @COLUMNS@ FROM repos r @JOINS@ ORDER BY r.name, t.name".replace(
    "@COLUMNS@", _REPO_COLUMNS).replace("@JOINS@", _REPO_JOINS)
# The repositories a token sees: those granted to it when it is restricted, else its team's.
REPOS_VISIBLE = """
SELECT @COLUMNS@ FROM repos r @JOINS@
WHERE CASE WHEN %(restricted)s
           THEN r.id IN (SELECT g.repo_id FROM token_repos g WHERE g.token_id = %(token)s)
           ELSE r.team_id = %(team)s END
ORDER BY r.name""".replace("@COLUMNS@", _REPO_COLUMNS).replace("@JOINS@", _REPO_JOINS)
REPO_BY_TEAM_NAMES = "SELECT id, name FROM repos WHERE team_id = %s AND name = ANY(%s)"
# A repository CI publishes to (nothing on this server's disk): created by name.
REPO_REMOTE_INSERT = """
WITH r AS (
    INSERT INTO repos (name, root, team_id, index_enabled, source, default_ref)
    VALUES (%(name)s, '', %(team)s, true, 'remote', %(ref)s)
    ON CONFLICT (team_id, name) DO UPDATE SET name = EXCLUDED.name
    RETURNING *)
SELECT @COLUMNS@ FROM r @JOINS@""".replace("@COLUMNS@", _REPO_COLUMNS).replace("@JOINS@", _REPO_JOINS)
# Indexing asked for (reindex, or registering again with index on).
REPO_ENABLE_INDEX = """
UPDATE repos SET index_enabled = true WHERE id = %(repo)s AND id = ANY(%(visible)s::int[])"""
# Which refs a repository follows from its git, how many earlier commits each keeps, and
# what a query without ref answers for (NULL: the working tree).
REPO_SET_FOLLOW = """
UPDATE repos SET follow = %(follow)s, keep = %(keep)s
WHERE id = %(repo)s AND id = ANY(%(visible)s::int[])"""
REPO_SET_DEFAULT_REF = "UPDATE repos SET default_ref = %s WHERE id = %s"
REPO_SET_SOURCE = "UPDATE repos SET source = %s WHERE id = %s"
REPO_DELETE = "DELETE FROM repos WHERE id = %(repo)s AND id = ANY(%(visible)s::int[])"
# Every file of a repository, as (path, content) pairs (their texts are released after a
# deletion).
REPO_FILE_PAIRS = "SELECT DISTINCT path, content_id FROM files WHERE repo_id = %s"
REPO_LOCK = "SELECT pg_advisory_lock(7248100, %s)"
REPO_UNLOCK = "SELECT pg_advisory_unlock(7248100, %s)"

# --- trees and refs (codenav.refs) -------------------------------------------------------
TREE_WORKTREE_ENSURE = """
INSERT INTO trees (repo_id, kind, ready) VALUES (%s, 'worktree', true)
ON CONFLICT (repo_id) WHERE kind = 'worktree' DO NOTHING"""
TREE_WORKTREE = "SELECT id FROM trees WHERE repo_id = %s AND kind = 'worktree'"
TREE_MARK_INDEXED = """
UPDATE trees SET indexed_at = now(), commit = %s, gitignored = %s WHERE id = %s"""
TREE_FILES_CHANGED = "UPDATE trees SET files_version = files_version + 1 WHERE id = %s"
# A commit tree of a repository (ready or being built), created once per commit.
TREE_COMMIT_ENSURE = """
INSERT INTO trees (repo_id, kind, commit, ready) VALUES (%s, 'commit', %s, false)
ON CONFLICT (repo_id, commit) WHERE kind = 'commit' DO NOTHING"""
TREE_BY_COMMIT = """
SELECT id, ready, base_id FROM trees WHERE repo_id = %s AND kind = 'commit' AND commit = %s"""
# Whether a repository the caller sees holds a commit's tree, complete.
TREE_COMMIT_READY = """
SELECT ready FROM trees WHERE repo_id = %(repo)s AND repo_id = ANY(%(visible)s::int[])
  AND kind = 'commit' AND commit = %(commit)s"""
TREE_READY = """
UPDATE trees SET ready = true, indexed_at = now(), gitignored = %s WHERE id = %s"""
TREE_SET_BASE = "UPDATE trees SET base_id = %s, mid_id = %s WHERE id = %s"
# The tree a new commit tree is best derived from: the tree of the ref it moves, else the
# tree of the repository's main branch (the one most refs branch off), else its newest
# ready commit tree.
TREE_NEIGHBOUR = """
SELECT t.id FROM trees t
WHERE t.repo_id = %(repo)s AND t.ready AND t.kind = 'commit' AND t.id <> %(tree)s
ORDER BY t.id IN (SELECT tree_id FROM repo_refs WHERE repo_id = %(repo)s AND name = %(ref)s) DESC,
         t.id IN (SELECT tree_id FROM repo_refs WHERE repo_id = %(repo)s AND name = %(main)s) DESC,
         t.id DESC
LIMIT 1"""
# The files of a tree (path, content, sha, language, size): a derived tree starts from them.
TREE_FILES = "SELECT path, content_id, sha, language, size FROM tree_files(%s)"
TREE_PATHS = "SELECT path FROM tree_files(%s)"
# A checkout's file history (codenav.index.history): the commit it was read at, and its rows
# replaced whole when HEAD moved.
HISTORY_HEAD = "SELECT commit FROM history_heads WHERE repo_id = %s"
HISTORY_STATUS = """
SELECT h.commit, h.files, h.read_at FROM history_heads h JOIN trees t ON t.repo_id = h.repo_id
WHERE t.id = %(tree)s AND h.repo_id = ANY(%(visible)s::int[])"""
HISTORY_CLEAR = "DELETE FROM file_history WHERE repo_id = %s"
HISTORY_HEAD_CLEAR = "DELETE FROM history_heads WHERE repo_id = %s"
HISTORY_COPY = "COPY file_history (repo_id, path, commits, age) FROM STDIN"
HISTORY_HEAD_PUT = """
INSERT INTO history_heads (repo_id, commit, files) VALUES (%s, %s, %s)
ON CONFLICT (repo_id) DO UPDATE SET commit = EXCLUDED.commit, files = EXCLUDED.files,
  read_at = now()"""
TREE_FILES_AT = """
SELECT path, content_id, sha, language, size FROM tree_files(%s) WHERE path = ANY(%s)"""
# A tree layered on the base of a layered tree starts with a copy of what that tree holds
# itself (its file rows and file layer, its ranks); a layered tree lists the paths it holds.
TREE_COPY_OWN_FILES = """
WITH l AS (
    INSERT INTO file_layer (tree_id, path) SELECT %(to)s, path FROM file_layer
    WHERE tree_id = %(from)s),
r AS (
    INSERT INTO graph_files (repo_id, tree_id, path, rank, prior, imported_by)
    SELECT repo_id, %(to)s, path, rank, prior, imported_by FROM graph_files
    WHERE tree_id = %(from)s)
INSERT INTO files (repo_id, tree_id, path, content_id, sha, language, size, mtime_ns, path_tsv,
                   indexed_at)
SELECT repo_id, %(to)s, path, content_id, sha, language, size, mtime_ns, path_tsv, indexed_at
FROM files WHERE tree_id = %(from)s"""
# The ranks of some paths, from the tree a new one derives from (its own until its graph
# ranks them again).
TREE_KEEP_RANKS = """
INSERT INTO graph_files (repo_id, tree_id, path, rank, prior, imported_by)
SELECT g.repo_id, %(to)s, g.path, g.rank, g.prior, g.imported_by FROM tree_ranks(%(from)s) g
WHERE g.path = ANY(%(paths)s)
ON CONFLICT (tree_id, path) DO UPDATE SET rank = EXCLUDED.rank, prior = EXCLUDED.prior,
    imported_by = EXCLUDED.imported_by"""
# A tree layered on a base with a mid between, that becomes a mid itself: it takes the
# mid's own rows for every path it does not hold (its own changes since the base, all of them).
TREE_COPY_MID = """
WITH fl AS (
    INSERT INTO file_layer (tree_id, path) SELECT %(to)s, path FROM file_layer
    WHERE tree_id = %(mid)s ON CONFLICT DO NOTHING),
f AS (
    INSERT INTO files (repo_id, tree_id, path, content_id, sha, language, size, mtime_ns,
                       path_tsv, indexed_at)
    SELECT m.repo_id, %(to)s, m.path, m.content_id, m.sha, m.language, m.size, m.mtime_ns,
           m.path_tsv, m.indexed_at
    FROM files m WHERE m.tree_id = %(mid)s AND NOT EXISTS (
        SELECT 1 FROM file_layer x WHERE x.tree_id = %(to)s AND x.path = m.path)),
r AS (
    INSERT INTO graph_files (repo_id, tree_id, path, rank, prior, imported_by)
    SELECT m.repo_id, %(to)s, m.path, m.rank, m.prior, m.imported_by
    FROM graph_files m WHERE m.tree_id = %(mid)s
    ON CONFLICT (tree_id, path) DO NOTHING),
gl AS (
    INSERT INTO graph_layer (tree_id, path) SELECT %(to)s, path FROM graph_layer
    WHERE tree_id = %(mid)s ON CONFLICT DO NOTHING),
i AS (
    INSERT INTO graph_imports (repo_id, tree_id, src_path, ord, spec, line, dst_path)
    SELECT m.repo_id, %(to)s, m.src_path, m.ord, m.spec, m.line, m.dst_path
    FROM graph_imports m WHERE m.tree_id = %(mid)s AND NOT EXISTS (
        SELECT 1 FROM graph_layer x WHERE x.tree_id = %(to)s AND x.path = m.src_path)),
e AS (
    INSERT INTO graph_edges (repo_id, tree_id, src_path, ord, line, src_scope, kind, dst_path,
                             dst_qual, verified, how)
    SELECT m.repo_id, %(to)s, m.src_path, m.ord, m.line, m.src_scope, m.kind, m.dst_path,
           m.dst_qual, m.verified, m.how
    FROM graph_edges m WHERE m.tree_id = %(mid)s AND NOT EXISTS (
        SELECT 1 FROM graph_layer x WHERE x.tree_id = %(to)s AND x.path = m.src_path))
INSERT INTO graph_links (repo_id, tree_id, src_path, dst_path, imports, refs)
SELECT m.repo_id, %(to)s, m.src_path, m.dst_path, m.imports, m.refs
FROM graph_links m WHERE m.tree_id = %(mid)s AND NOT EXISTS (
    SELECT 1 FROM graph_layer x WHERE x.tree_id = %(to)s AND x.path = m.src_path)"""
GRAPH_OWN_SIZE = "SELECT count(*) FROM graph_edges WHERE tree_id = %s"
FILE_LAYER_ADD = """
INSERT INTO file_layer (tree_id, path) SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING"""
FILE_LAYER_SIZE = "SELECT count(*) FROM file_layer WHERE tree_id = %s"
FILE_LAYER_PATHS = "SELECT path FROM file_layer WHERE tree_id = %s"
# ...and its files and ranks.
TREE_FLATTEN_FILES = """
WITH f AS (
    INSERT INTO files (repo_id, tree_id, path, content_id, sha, language, size, mtime_ns,
                       path_tsv, indexed_at)
    SELECT b.repo_id, %(tree)s, b.path, b.content_id, b.sha, b.language, b.size, b.mtime_ns,
           b.path_tsv, b.indexed_at
    FROM tree_files(%(tree)s) b WHERE b.tree_id <> %(tree)s)
INSERT INTO graph_files (repo_id, tree_id, path, rank, prior, imported_by)
SELECT b.repo_id, %(tree)s, b.path, b.rank, b.prior, b.imported_by
FROM tree_ranks(%(tree)s) b WHERE b.tree_id <> %(tree)s"""
FILE_LAYER_CLEAR = "DELETE FROM file_layer WHERE tree_id = %s"
TREE_SKIP_REASONS = "SELECT path, reason FROM skipped WHERE tree_id = %s"
TREE_CLEAR_FILES = "DELETE FROM files WHERE tree_id = %s"
TREE_CLEAR_SKIPPED = "DELETE FROM skipped WHERE tree_id = %s"
TREE_CLEAR_STATE = "DELETE FROM graph_state WHERE tree_id = %s"
# A tree layered on the base of a layered tree starts with a copy of that tree's layer.
TREE_COPY_LAYER = """
WITH l AS (
    INSERT INTO graph_layer (tree_id, path) SELECT %(to)s, path FROM graph_layer
    WHERE tree_id = %(from)s),
i AS (
    INSERT INTO graph_imports (repo_id, tree_id, src_path, ord, spec, line, dst_path)
    SELECT repo_id, %(to)s, src_path, ord, spec, line, dst_path FROM graph_imports
    WHERE tree_id = %(from)s),
e AS (
    INSERT INTO graph_edges (repo_id, tree_id, src_path, ord, line, src_scope, kind, dst_path,
                             dst_qual, verified, how)
    SELECT repo_id, %(to)s, src_path, ord, line, src_scope, kind, dst_path, dst_qual, verified,
           how FROM graph_edges WHERE tree_id = %(from)s)
INSERT INTO graph_links (repo_id, tree_id, src_path, dst_path, imports, refs)
SELECT repo_id, %(to)s, src_path, dst_path, imports, refs FROM graph_links
WHERE tree_id = %(from)s"""
# Named refs: resolving one within what the caller sees, listing, moving, dropping. A
# commit is reached by its id while a ref names it or keeps it in its history (a tree kept
# only as the base another is layered on is not).
REF_TREE = """
SELECT t.id, t.kind, t.commit, t.indexed_at, rr.name
FROM repo_refs rr JOIN trees t ON t.id = rr.tree_id
WHERE rr.repo_id = %(repo)s AND rr.repo_id = ANY(%(visible)s::int[]) AND rr.name = %(name)s"""
COMMIT_TREES = """
SELECT t.id, t.kind, t.commit, t.indexed_at,
       (SELECT min(rr.name) FROM repo_refs rr WHERE rr.tree_id = t.id)
FROM trees t
WHERE t.repo_id = %(repo)s AND t.repo_id = ANY(%(visible)s::int[]) AND t.kind = 'commit'
  AND t.ready AND t.commit LIKE %(prefix)s
  AND (EXISTS (SELECT 1 FROM repo_refs rr WHERE rr.tree_id = t.id)
       OR EXISTS (SELECT 1 FROM ref_history h WHERE h.tree_id = t.id))
ORDER BY t.id DESC LIMIT 2"""
REF_LIST = """
SELECT rr.name, rr.commit, rr.moved_at, rr.moved_by, t.base_id IS NOT NULL,
       (SELECT count(*) FROM tree_files(t.id)),
       (SELECT coalesce(array_agg(h.commit ORDER BY h.moved_at DESC), '{}') FROM ref_history h
        WHERE h.repo_id = rr.repo_id AND h.name = rr.name)
FROM repo_refs rr JOIN trees t ON t.id = rr.tree_id
WHERE rr.repo_id = %(repo)s AND rr.repo_id = ANY(%(visible)s::int[])
ORDER BY rr.name"""
REF_GET = "SELECT tree_id, commit FROM repo_refs WHERE repo_id = %s AND name = %s"
# Moving a ref: the previous tree goes to the ref's history when it is kept.
REF_MOVE = """
INSERT INTO repo_refs (repo_id, name, tree_id, commit, moved_at, moved_by)
VALUES (%(repo)s, %(name)s, %(tree)s, %(commit)s, now(), %(by)s)
ON CONFLICT (repo_id, name) DO UPDATE SET tree_id = EXCLUDED.tree_id, commit = EXCLUDED.commit,
    moved_at = now(), moved_by = EXCLUDED.moved_by"""
REF_HISTORY_ADD = """
INSERT INTO ref_history (repo_id, name, tree_id, commit) VALUES (%s, %s, %s, %s)
ON CONFLICT (repo_id, name, tree_id) DO UPDATE SET moved_at = now()"""
# Earlier trees of a ref beyond the newest ``keep`` (they are dropped).
REF_HISTORY_TRIM = """
DELETE FROM ref_history h WHERE h.repo_id = %(repo)s AND h.name = %(name)s
  AND (h.tree_id = %(tree)s OR h.tree_id NOT IN (
      SELECT k.tree_id FROM ref_history k WHERE k.repo_id = %(repo)s AND k.name = %(name)s
        AND k.tree_id <> %(tree)s
      ORDER BY k.moved_at DESC LIMIT %(keep)s))"""
REF_DELETE = """
WITH h AS (DELETE FROM ref_history WHERE repo_id = %(repo)s AND name = %(name)s
           AND repo_id = ANY(%(visible)s::int[]))
DELETE FROM repo_refs WHERE repo_id = %(repo)s AND name = %(name)s
  AND repo_id = ANY(%(visible)s::int[])
RETURNING tree_id"""
REF_NAMES = """
SELECT name FROM repo_refs WHERE repo_id = %(repo)s AND repo_id = ANY(%(visible)s::int[])
ORDER BY name"""
# Commit trees nothing needs any more: no ref and no kept history points at them, no other
# tree is layered on them, and they are ready (or were abandoned half-built an hour ago).
TREES_UNUSED = """
SELECT t.id FROM trees t
WHERE t.repo_id = %s AND t.kind = 'commit'
  AND NOT EXISTS (SELECT 1 FROM repo_refs rr WHERE rr.tree_id = t.id)
  AND NOT EXISTS (SELECT 1 FROM ref_history h WHERE h.tree_id = t.id)
  AND NOT EXISTS (SELECT 1 FROM trees l WHERE l.base_id = t.id OR l.mid_id = t.id)
  AND NOT EXISTS (SELECT 1 FROM overlays o WHERE o.base_tree = t.id)
  AND (t.ready OR t.created_at < now() - interval '1 hour')
  AND NOT (t.id = ANY(%s))"""
TREE_PAIRS = "SELECT path, content_id FROM files WHERE tree_id = ANY(%s)"
TREE_DELETE = "DELETE FROM trees WHERE id = ANY(%s) RETURNING id"
TREE_LOCK = "SELECT pg_advisory_xact_lock(7248101, %s)"

# --- index runs (progress) ---------------------------------------------------------------
# A run indexes the working tree (ref '') or moves named refs (ref: their names).
RUN_START = """
INSERT INTO index_runs (repo_id, tree_id, ref, scope, state, phase, job_id)
VALUES (%s, %s, %s, %s, 'running', 'scan', %s)
RETURNING id"""
RUN_PROGRESS = """
UPDATE index_runs SET phase = %s, files_total = %s, files_done = %s, files_parsed = %s,
    files_deleted = %s, updated_at = now() WHERE id = %s"""
RUN_FINISH = """
UPDATE index_runs SET state = %s, phase = %s, error = %s, files_total = %s, files_done = %s,
    files_parsed = %s, files_deleted = %s, updated_at = now(), finished_at = now() WHERE id = %s"""
RUN_ABANDON = """
UPDATE index_runs SET state = 'failed', error = 'worker stopped before finishing; the next run converges',
    finished_at = now() WHERE repo_id = %s AND state = 'running'"""
RUN_LATEST = """
SELECT id, scope, state, phase, files_total, files_done, files_parsed, files_deleted, error,
       started_at, updated_at, finished_at, job_id
FROM index_runs WHERE repo_id = %(repo)s AND repo_id = ANY(%(visible)s::int[])
  AND ref = %(run_ref)s
ORDER BY id DESC LIMIT 1"""
# The repository's latest run, whatever it indexed.
RUN_BY_REPO = """
SELECT id, scope, state, phase, files_total, files_done, files_parsed, files_deleted, error,
       started_at, updated_at, finished_at, job_id
FROM index_runs WHERE repo_id = %(repo)s AND repo_id = ANY(%(visible)s::int[])
ORDER BY id DESC LIMIT 1"""
# A job's run, if it is of a repository the caller sees (job ids name their repository).
RUN_BY_JOB = """
SELECT id, scope, state, phase, files_total, files_done, files_parsed, files_deleted, error,
       started_at, updated_at, finished_at, job_id
FROM index_runs WHERE job_id = %(job)s AND repo_id = ANY(%(visible)s::int[])
ORDER BY id DESC LIMIT 1"""
RUN_REFUSED = """
INSERT INTO index_runs (repo_id, ref, scope, state, phase, job_id, error, finished_at)
VALUES (%s, %s, %s, 'failed', 'refused', %s, %s, now())"""

# --- ingest (parser processes) -------------------------------------------------------------
# Contents by address, among the shared ones (parsed by this server) and those the team
# uploaded itself (codenav publish): the shared one first when both exist.
CONTENT_LOOKUP = """
SELECT DISTINCT ON (sha, language) id, sha, language FROM contents
WHERE chunker = %s AND sha = ANY(%s) AND (origin_team IS NULL OR origin_team = %s)
ORDER BY sha, language, origin_team NULLS FIRST"""
# A parser process claims the contents it is about to parse: session advisory locks keyed by
# each content's address (``sha:language:chunker``), taken without waiting. Another process
# meeting the same content waits for the claim to go (CONTENT_WAIT, then CONTENT_RELEASE:
# one key at a time, so a waiter never holds one lock while it waits for another), then
# reads the stored rows, so a content several workers meet at once is parsed once. A killed
# claimer's locks go with its connection.
CONTENT_CLAIM = """
SELECT k FROM unnest(%s::text[]) AS k WHERE pg_try_advisory_lock(7248200, hashtext(k))"""
CONTENT_RELEASE = "SELECT pg_advisory_unlock(7248200, hashtext(k)) FROM unnest(%s::text[]) AS k"
CONTENT_WAIT = "SELECT pg_advisory_lock(7248200, hashtext(%s))"
STAGE_CREATE = """
CREATE TEMP TABLE IF NOT EXISTS stage_contents (
    sha text, language text, size bigint, line_count integer, body text, imports text[],
    parse_error text, redactions jsonb
) ON COMMIT DELETE ROWS"""
STAGE_COPY = "COPY stage_contents (sha, language, size, line_count, body, imports, parse_error, redactions) FROM STDIN"
# Parameters: chunker version; first: a first index, which leaves the whole-file postings
# (pending_terms), the graph facts (pending_facts) and the grep index (grep_ready off) for
# the graph job.
STAGE_INSERT = """
WITH ins AS (
    INSERT INTO contents (sha, language, chunker, size, line_count, body, imports,
                          parse_error, redactions, grep_ready)
    SELECT sha, language, %(chunker)s, size, line_count, body, imports, parse_error,
           redactions, NOT %(first)s
    FROM stage_contents
    ON CONFLICT (sha, language, chunker, (coalesce(origin_team, 0))) DO NOTHING
    RETURNING id, sha, language),
  pending AS (INSERT INTO pending_facts (content_id) SELECT id FROM ins WHERE %(first)s),
  terms AS (INSERT INTO pending_terms (content_id) SELECT id FROM ins WHERE %(first)s)
SELECT id, sha, language FROM ins"""
# --- whole-file postings a first index left for later (codenav.index.terms) ----------------
# The tree's contents whose postings are not written yet.
TERMS_PENDING_IDS = """
SELECT DISTINCT p.content_id FROM pending_terms p
JOIN tree_files(%s) f ON f.content_id = p.content_id ORDER BY 1"""
TERMS_BODIES = """
SELECT c.id, c.body FROM contents c JOIN pending_terms p ON p.content_id = c.id
WHERE c.id = ANY(%s)"""
# Claims the contents (row locks until commit): a concurrent filler of the same contents
# waits, then claims none of them, so postings are written once.
TERMS_CLAIM = """
DELETE FROM pending_terms WHERE content_id = ANY(%s) RETURNING content_id"""
# Files of a tree in scope whose postings are not written yet (find_files, status).
TERMS_PENDING_FILES = """
SELECT count(*) FROM pending_terms p
JOIN tree_files(%(tree)s) f ON f.content_id = p.content_id
WHERE f.repo_id = ANY(%(visible)s::int[])"""
# --- the grep index a first index left for later (codenav.index.grams) ---------------------
# The contents not in the trigram index yet, a batch at a time (contents_grep_pending).
GREP_PENDING = """
SELECT id FROM contents WHERE NOT grep_ready ORDER BY id LIMIT %s"""
# Puts a batch into the index: the update writes each row's trigrams once.
GREP_READY = """
UPDATE contents SET grep_ready = true WHERE id = ANY(%s) AND NOT grep_ready"""
# --- graph facts left for later by a first index (codenav.graph.facts) --------------------
FACTS_PENDING_IDS = """
SELECT DISTINCT p.content_id FROM pending_facts p
JOIN tree_files(%s) f ON f.content_id = p.content_id ORDER BY 1"""
FACTS_BODIES = """
SELECT c.id, c.language, c.body, c.parse_error <> '' FROM contents c
JOIN pending_facts p ON p.content_id = c.id
WHERE c.id = ANY(%s)"""
# Their symbols as the first index stored them, in the order it found them.
FACTS_SYMBOLS = """
SELECT content_id, name, kind, qualname, parent, start_line, end_line, signature, doc,
       exported, depth, bases
FROM symbols WHERE content_id = ANY(%s) ORDER BY content_id, ord"""
# Claims the contents (row locks until commit): a concurrent filler of the same contents
# waits, then claims none of them, so refs are written once.
FACTS_CLAIM = """
DELETE FROM pending_facts WHERE content_id = ANY(%s) RETURNING content_id"""
# Binary: the server takes each tsvector as it is sent, already sorted
# (``tokens.chunk_tsvector_binary``), instead of parsing its text.
CHUNKS_COPY = """
COPY chunks (content_id, ord, kind, symbol, parent, signature, doc, exported, start_line,
             end_line, part, body, n_terms, tsv) FROM STDIN (FORMAT BINARY)"""
CHUNKS_TYPES = ["int8", "int4", "text", "text", "text", "text", "text", "bool", "int4", "int4",
                "int4", "text", "int4", "tsvector"]
SYMBOLS_COPY = """
COPY symbols (content_id, ord, name, qualname, kind, parent, depth, start_line, end_line,
              signature, doc, exported, bases) FROM STDIN (FORMAT BINARY)"""
SYMBOLS_TYPES = ["int8", "int4", "text", "text", "text", "text", "int4", "int4", "int4", "text",
                 "text", "bool", "text[]"]

# --- files of a tree ---------------------------------------------------------------------
FILES_STATE = """
SELECT f.path, f.size, f.mtime_ns, f.sha, f.content_id, c.chunker
FROM files f JOIN contents c ON c.id = f.content_id WHERE f.tree_id = %s"""
FILES_STATE_PATHS = """
SELECT f.path, f.size, f.mtime_ns, f.sha, f.content_id, c.chunker
FROM files f JOIN contents c ON c.id = f.content_id
WHERE f.tree_id = %s AND (f.path = ANY(%s) OR f.path LIKE ANY(%s))"""
FILES_STAGE_CREATE = """
CREATE TEMP TABLE IF NOT EXISTS stage_files (
    path text, content_id bigint, sha text, language text, size bigint, mtime_ns bigint,
    path_tsv tsvector
) ON COMMIT DELETE ROWS"""
FILES_STAGE_COPY = "COPY stage_files (path, content_id, sha, language, size, mtime_ns, path_tsv) FROM STDIN"
FILES_UPSERT = """
INSERT INTO files (repo_id, tree_id, path, content_id, sha, language, size, mtime_ns, path_tsv,
                   indexed_at)
SELECT %s, %s, path, content_id, sha, language, size, mtime_ns, path_tsv, now() FROM stage_files
ON CONFLICT (tree_id, path) DO UPDATE SET content_id = EXCLUDED.content_id, sha = EXCLUDED.sha,
    language = EXCLUDED.language, size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns,
    path_tsv = EXCLUDED.path_tsv, indexed_at = now()"""
FILES_DELETE = "DELETE FROM files WHERE tree_id = %s AND path = ANY(%s)"
FILES_TOUCH = "UPDATE files SET mtime_ns = %s WHERE tree_id = %s AND path = %s"
SKIPPED_CLEAR = "DELETE FROM skipped WHERE tree_id = %s"
SKIPPED_DELETE = "DELETE FROM skipped WHERE tree_id = %s AND path = ANY(%s)"
# The tree's files skipped for a verdict on their bytes (``codenav.index.blob.SETTLED_SKIPS``),
# with the size and mtime they had then: unchanged since, they are not read again.
SKIPPED_SETTLED = """
SELECT path, reason, detail, size, mtime_ns FROM skipped
WHERE tree_id = %s AND reason = ANY(%s) AND mtime_ns <> 0"""
SKIPPED_SETTLED_PATHS = SKIPPED_SETTLED + " AND path = ANY(%s)"
SKIPPED_UPSERT = """
INSERT INTO skipped (repo_id, tree_id, path, reason, detail, size, mtime_ns)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (tree_id, path) DO UPDATE SET reason = EXCLUDED.reason, detail = EXCLUDED.detail,
    size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns"""

# --- term statistics (IDF) ---------------------------------------------------------------
ANALYZE_TABLES = "ANALYZE chunks, files, contents, symbols"
# The same in two parts that take about as long, for two connections (``refresh_stats``).
ANALYZE_CHUNKS = "ANALYZE chunks"
ANALYZE_OTHERS = "ANALYZE files, contents, symbols"
STATS_REFRESH_CORPUS = "REFRESH MATERIALIZED VIEW CONCURRENTLY corpus_stats"
# n_contents: IDF's N (every content of the store, as the document frequencies below are);
# 0 or no row until the first refresh, when the live counts stand in.
STATS_CORPUS = "SELECT n_chunks, avg_terms, n_contents FROM corpus_stats"
# A query's weights in one round trip: the corpus columns above, and the document frequency
# of each query term that has postings, read live from the whole-file postings (an
# index-only count per term: always current, nothing to refresh after an index run). A row
# per such term, each with the corpus columns; one row without a term when none has any.
# Document frequencies of the query's terms (files holding each), and whether any content
# has no whole-file postings yet (pending_terms: a first index's, for the seconds until its
# graph job writes them; then STATS_PENDING_DF and FILE_TERM_POSTINGS_PENDING count them).
STATS_QUERY = """
SELECT c.n_chunks, c.avg_terms, c.n_contents, t.term, t.n,
       (SELECT EXISTS (SELECT 1 FROM pending_terms))
FROM (SELECT 1) AS one
LEFT JOIN corpus_stats c ON true
LEFT JOIN (SELECT term, count(*) AS n FROM file_terms WHERE term = ANY(%(terms)s) GROUP BY term) t
  ON true"""
# The contents without postings that hold each term, found through their chunks' vectors
# (one index scan per term: reading the terms out of each chunk's vector took 0.8 s for a
# common word on Apache Kafka). The terms file_terms leaves out (one character, numbers of
# one or two digits) stay out.
STATS_PENDING_DF = """
SELECT t, count(*) FROM (
    SELECT DISTINCT x.t, c.content_id
    FROM unnest(%(terms)s::text[]) x(t)
    CROSS JOIN LATERAL (
        SELECT c.content_id FROM chunks c
        WHERE c.tsv @@ to_tsquery('simple', quote_literal(x.t))
          AND c.content_id IN (SELECT content_id FROM pending_terms)) c
    WHERE length(x.t) > 1 AND NOT (length(x.t) = 2 AND x.t ~ '^[0-9]+$')) d
GROUP BY 1"""
STATS_CONTENTS = "SELECT count(*) FROM contents"
STATS_CHUNK_COUNT = "SELECT count(*) FROM chunks"

# --- garbage collection of unreferenced contents -------------------------------------------
GC_TRY_LOCK = "SELECT pg_try_advisory_xact_lock(7248002)"
WRITERS_SHARED_LOCK = "SELECT pg_advisory_lock_shared(7248002)"
WRITERS_SHARED_UNLOCK = "SELECT pg_advisory_unlock_shared(7248002)"
# The same for one transaction (a batch of deferred graph facts): a collection waits for it
# or skips, so no row is written for a content it is deleting.
WRITERS_SHARED_XACT_LOCK = "SELECT pg_advisory_xact_lock_shared(7248002)"
# A content CI uploaded is kept an hour for the file list that will point at it (a publish
# sends its contents first, its commit last).
# A collected content's rows go with it (they have no foreign key to cascade from,
# migrations 0015 and 0016), found through their content_id index: written as IN (SELECT ..)
# the planner, blind to how few contents go, read all of file_terms (147 ms on Kafka for
# 10 contents, against 0.4 ms). Returns how many contents went.
GC_DELETE = """
WITH gone AS (
    DELETE FROM contents c WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.content_id = c.id)
      AND (c.origin_team IS NULL OR c.created_at < now() - interval '1 hour')
    RETURNING c.id),
  chunks_gone AS (DELETE FROM chunks WHERE content_id = ANY(ARRAY(SELECT id FROM gone))),
  symbols_gone AS (DELETE FROM symbols WHERE content_id = ANY(ARRAY(SELECT id FROM gone))),
  refs_gone AS (DELETE FROM refs WHERE content_id = ANY(ARRAY(SELECT id FROM gone))),
  terms_gone AS (DELETE FROM file_terms WHERE content_id = ANY(ARRAY(SELECT id FROM gone))),
  pending_gone AS (DELETE FROM pending_facts WHERE content_id = ANY(ARRAY(SELECT id FROM gone))),
  terms_pending_gone AS (
    DELETE FROM pending_terms WHERE content_id = ANY(ARRAY(SELECT id FROM gone)))
SELECT count(*) FROM gone"""

# --- tokens ------------------------------------------------------------------------------
# --- tokens, teams, audit (codenav.auth, codenav.admin, codenav.audit) ---------------------
TOKEN_INSERT = """
INSERT INTO api_tokens (name, token_hash, role, team_id, restricted, expires_at, created_by)
VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id"""
TOKEN_GRANT = "INSERT INTO token_repos (token_id, repo_id) SELECT %s, unnest(%s::int[])"
TOKEN_CHECK = """
WITH t AS (
    UPDATE api_tokens SET last_used_at = now()
    WHERE token_hash = %s AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
    RETURNING id, name, role, team_id, restricted, expires_at)
SELECT t.id, t.name, t.role, t.team_id, teams.name, t.restricted, t.expires_at
FROM t JOIN teams ON teams.id = t.team_id"""
# Why a token is refused: unknown, revoked or expired.
TOKEN_STATE = "SELECT revoked_at, expires_at FROM api_tokens WHERE token_hash = %s"
# Tokens of one team (NULL: every team), with their grants.
TOKEN_LIST = """
SELECT a.id, a.name, a.role, t.name, a.restricted,
       coalesce((SELECT array_agg(r.name ORDER BY r.name) FROM token_repos g
                 JOIN repos r ON r.id = g.repo_id WHERE g.token_id = a.id), '{}'),
       a.created_at, a.last_used_at, a.expires_at, a.revoked_at, a.created_by
FROM api_tokens a JOIN teams t ON t.id = a.team_id
WHERE %(team)s::int IS NULL OR a.team_id = %(team)s
ORDER BY a.id"""
TOKEN_GET = """
SELECT a.id, a.name, a.team_id, t.name, a.revoked_at FROM api_tokens a
JOIN teams t ON t.id = a.team_id
WHERE a.id = %(id)s AND (%(team)s::int IS NULL OR a.team_id = %(team)s)"""
TOKEN_REVOKE = "UPDATE api_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL"
TEAM_GET = "SELECT id, name FROM teams WHERE name = %s"
TEAM_INSERT = """
INSERT INTO teams (name, created_by) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING
RETURNING id, name"""
# Teams a caller may list: its own and those it created (NULL team: the operator, all).
TEAM_LIST = """
SELECT t.id, t.name, t.created_at, t.created_by,
       (SELECT count(*) FROM repos r WHERE r.team_id = t.id),
       (SELECT count(*) FROM api_tokens a WHERE a.team_id = t.id AND a.revoked_at IS NULL
          AND (a.expires_at IS NULL OR a.expires_at > now()))
FROM teams t
WHERE %(team)s::int IS NULL OR t.id = %(team)s OR t.created_by = %(actor)s
ORDER BY t.name"""
AUDIT_INSERT = """
INSERT INTO audit_log (team_id, actor, token_id, action, target, detail)
VALUES (%s, %s, %s, %s, %s, %s)"""
# A team's audit trail (NULL: every team's), newest first.
AUDIT_LIST = """
SELECT a.id, a.at, t.name, a.actor, a.action, a.target, a.detail
FROM audit_log a LEFT JOIN teams t ON t.id = a.team_id
WHERE %(team)s::int IS NULL OR a.team_id = %(team)s
ORDER BY a.id DESC LIMIT %(limit)s"""

# --- search ------------------------------------------------------------------------------
# The lexical ranker's plan, for its transaction: candidates from the GIN index, never from
# a sequential scan. The planner prices a tsvector match at one operator, so for a common
# word (a sixth of the chunks) it scanned the table, matching every row's tsvector, and
# where the scan started moved with the previous scan (synchronised scans of a large table),
# so which candidates the cap kept changed from one run to the next. On Apache Kafka the
# index path cut the statement's mean by a fifth and its slowest call from 128 to 70 ms.
LEXICAL_PLAN = "SELECT set_config('enable_seqscan', 'off', true)"
# With a filter (``search_lexical(filtered=True)``): bitmap scans only, so the indexes of a
# kind, of the contents under a path and of the words are scanned apart and intersected
# (an index scan over the contents under ``clients/**`` tested every tsvector there: 55
# against 31 ms for "setUp" on Apache Kafka), and a plan made for the values: a generic
# plan cannot leave out the filters that are not set.
LEXICAL_PLAN_FILTERED = """
SELECT set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true),
       set_config('plan_cache_mode', 'force_custom_plan', true)"""
# Whether more chunks than the cap hold a query term (counted up to one past it), for a query
# with a kind or exported filter whose estimate is over the cap
# (``codenav.search.chunks.capped``): the lexical ranker would keep only the first of them.
CANDIDATES_OVER_CAP = """
SELECT count(*) > %(cap)s FROM (
    SELECT 1 FROM chunks c WHERE c.tsv @@ %(any)s::tsquery LIMIT %(cap)s + 1) x"""
# Lexical ranker: candidates from the GIN index, scored by IDF-weighted per-group ts_rank
# with a length normalisation (BM25-like). Filters are optional (NULL means "any").
def search_lexical(n_groups: int, flat: bool = False, filtered: bool = False) -> sql.Composed:
    """The lexical ranker's statement for ``n_groups`` query groups (``%(q0)s``/``%(w0)s``...:
    each group's tsquery and weight); ``flat``: for a working tree (``flat_tree``). The
    score's sum over the groups is written out, one term per group: a subquery over the
    groups for each candidate cost 13 % more on Apache Kafka (mean 20.8 against 18.1 ms over
    the same 177 calls). ``filtered``: the filters are applied before the cap, to the
    candidates of the tree (``_SEARCH_LEXICAL_FILTERED``)."""
    score = sql.SQL(" + ").join(
        sql.SQL("{w}::float8 * ts_rank('{{0.1, 0.3, 0.6, 1.0}}', c.tsv, {q}::tsquery)").format(
            w=sql.Placeholder(f"w{i}"), q=sql.Placeholder(f"q{i}"))
        for i in range(int(n_groups)))
    if filtered:
        return sql.SQL((flat_tree if flat else str)(_SEARCH_LEXICAL_FILTERED)).format(
            score=score)
    return sql.SQL((flat_tree if flat else str)("""
WITH cand AS (
    SELECT c.id, c.content_id, c.kind, c.exported, c.n_terms, c.tsv
    FROM chunks c WHERE c.tsv @@ %(any)s::tsquery
    LIMIT %(cap)s
)
SELECT c.id, f.path, ({score}) / (0.6 + 0.4 * c.n_terms / %(avg_terms)s) AS score
FROM cand c
JOIN tree_files(%(tree)s) f ON f.content_id = c.content_id
  AND f.repo_id = ANY(%(visible)s::int[])
WHERE (%(language)s::text IS NULL OR f.language = %(language)s)
  AND (%(path_re)s::text IS NULL OR f.path ~ %(path_re)s)
  AND (%(kind)s::text IS NULL OR c.kind = %(kind)s)
  AND (NOT %(exported)s OR c.exported)
ORDER BY score DESC, f.path, c.id
LIMIT %(k)s""")).format(score=score)


# The lexical ranker with a filter, when the chunks holding the rarest terms gave too few
# (``codenav.search.chunks.lexical_ranking``): the candidates are the chunks the filters let
# through, so the cap counts only those. The kind goes to its index (``chunks_kind_idx``)
# and the files a language or path filter lets through go in as their contents (when
# ``%(files)s``), so the index scans meet before the table is read: a common word and a
# rare kind read only the rows of both. The plan is made for the values
# (``LEXICAL_PLAN_FILTERED``).
_SEARCH_LEXICAL_FILTERED = """
WITH f AS MATERIALIZED (
    SELECT path, content_id FROM tree_files(%(tree)s)
    WHERE repo_id = ANY(%(visible)s::int[])
      AND (%(language)s::text IS NULL OR language = %(language)s)
      AND (%(path_re)s::text IS NULL OR path ~ %(path_re)s)
), cand AS (
    SELECT c.id, c.content_id, c.n_terms, c.tsv
    FROM chunks c
    WHERE c.tsv @@ %(any)s::tsquery
      AND (%(kind)s::text IS NULL OR c.kind = %(kind)s)
      AND (NOT %(exported)s OR c.exported)
      AND (NOT %(files)s OR c.content_id = ANY(ARRAY(SELECT content_id FROM f)))
    LIMIT %(cap)s
)
SELECT c.id, f.path, ({score}) / (0.6 + 0.4 * c.n_terms / %(avg_terms)s) AS score
FROM cand c JOIN f ON f.content_id = c.content_id
ORDER BY score DESC, f.path, c.id
LIMIT %(k)s"""


# The files of the tree (those the caller sees, through the filters) that hold chunk c's
# content, looked up per chunk: the two symbol rankers below find tens of chunks, and a
# join hashed or sorted every file of the tree first (Apache Kafka: 6,452 files, 2-4 ms).
_FILES_OF_CHUNK = """JOIN LATERAL (
    SELECT f.path FROM tree_files(%(tree)s) f
    WHERE f.content_id = c.content_id AND f.repo_id = ANY(%(visible)s::int[])
      AND (%(language)s::text IS NULL OR f.language = %(language)s)
      AND (%(path_re)s::text IS NULL OR f.path ~ %(path_re)s)
    OFFSET 0) f ON true"""
# Declaration ranker: chunks that declare exactly a symbol the query names.
SEARCH_DECLARATIONS = """
SELECT c.id, f.path, c.symbol, c.parent, c.kind
FROM chunks c @FILES_OF_CHUNK@
WHERE lower(c.symbol) = ANY(%(names)s) AND c.part <= 1
  AND (%(kind)s::text IS NULL OR c.kind = %(kind)s)
  AND (NOT %(exported)s OR c.exported)
ORDER BY lower(coalesce(c.parent, '')) || '.' || lower(c.symbol) = ANY(%(qualified)s) DESC,
         c.kind = 'constructor', c.kind IN ('block', 'text', 'section'), length(f.path), f.path,
         c.id
LIMIT %(k)s""".replace("@FILES_OF_CHUNK@", _FILES_OF_CHUNK)

# Fuzzy symbol ranker: trigram similarity of symbol names (pg_trgm).
SEARCH_TRIGRAM = """
SELECT c.id, f.path, similarity(lower(c.symbol), %(name)s) AS sim
FROM chunks c @FILES_OF_CHUNK@
WHERE lower(c.symbol) %% %(name)s AND c.part <= 1
  AND (%(kind)s::text IS NULL OR c.kind = %(kind)s)
  AND (NOT %(exported)s OR c.exported)
ORDER BY sim DESC, length(f.path), f.path, c.id
LIMIT %(k)s""".replace("@FILES_OF_CHUNK@", _FILES_OF_CHUNK)

# Chunks by id, only of contents a file of the repository points at. ``OFFSET 0`` keeps
# the check per chunk (an index probe each): as a join it hashed every file of the tree
# first (Apache Kafka: 4-7 ms against 1-2 for the hundred ids of a search).
CHUNK_DETAILS = """
SELECT c.id, c.kind, c.symbol, c.parent, c.signature, c.doc, c.start_line, c.end_line, c.body,
       c.part, c.exported, co.language, co.size, co.line_count
FROM chunks c JOIN contents co ON co.id = c.content_id
WHERE c.id = ANY(%(ids)s) AND EXISTS (
    SELECT 1 FROM tree_files(%(tree)s) f WHERE f.content_id = c.content_id
      AND f.repo_id = ANY(%(visible)s::int[]) OFFSET 0)"""

FILE_META = """
SELECT f.path, f.size, f.mtime_ns, f.sha, f.language, co.line_count, f.indexed_at
FROM tree_files(%(tree)s) f JOIN contents co ON co.id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = ANY(%(paths)s)"""

# The best chunks of find_files' candidate files (``paths``: the files whole-file BM25
# ranked best), with the query groups each contains.
FIND_CHUNKS = """
WITH g AS (
    SELECT q, w, i FROM unnest(%(tsqs)s::tsquery[], %(weights)s::float8[])
        WITH ORDINALITY AS g(q, w, i)
)
SELECT f.path, c.symbol, c.kind,
       array(SELECT g.i FROM g WHERE c.tsv @@ g.q) AS groups,
       (SELECT sum(g.w * ts_rank('{0.1, 0.3, 0.6, 1.0}', c.tsv, g.q)) FROM g)
           / (0.6 + 0.4 * c.n_terms / %(avg_terms)s) AS score
FROM tree_files(%(tree)s) f JOIN chunks c ON c.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = ANY(%(paths)s)
  AND c.tsv @@ %(any)s::tsquery
ORDER BY score DESC, f.path, c.ord  -- ties in file order, whatever the rows' order on disk
LIMIT %(k)s"""


# --- navigation --------------------------------------------------------------------------
FILE_BY_PATH = """
SELECT f.path, f.content_id, f.size, f.mtime_ns, f.language, co.line_count, co.imports,
       f.indexed_at, co.parse_error, co.redactions
FROM tree_files(%(tree)s) f JOIN contents co ON co.id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = %(path)s"""
# A file's body and symbols by content, only while a file of the repository points at it.
FILE_BODY = """
SELECT co.body FROM contents co WHERE co.id = %(content)s AND EXISTS (
    SELECT 1 FROM tree_files(%(tree)s) f WHERE f.content_id = co.id
      AND f.repo_id = ANY(%(visible)s::int[]))"""
FILE_SYMBOLS = """
SELECT s.name, s.qualname, s.kind, s.parent, s.depth, s.start_line, s.end_line, s.signature,
       s.doc, s.exported, s.bases
FROM symbols s WHERE s.content_id = %(content)s AND EXISTS (
    SELECT 1 FROM tree_files(%(tree)s) f WHERE f.content_id = s.content_id
      AND f.repo_id = ANY(%(visible)s::int[]))
ORDER BY s.start_line, s.depth, s.ord"""
SYMBOL_LOCATE = """
SELECT f.path, s.name, s.qualname, s.kind, s.start_line, s.end_line, f.content_id
FROM symbols s JOIN tree_files(%(tree)s) f ON f.content_id = s.content_id
  AND f.repo_id = ANY(%(visible)s::int[])
WHERE (lower(s.name) = %(name)s OR lower(s.qualname) = %(qual)s)
  AND (%(path)s::text IS NULL OR f.path = %(path)s)
ORDER BY lower(s.qualname) = %(qual)s DESC, s.depth, length(f.path), f.path
LIMIT 20"""
PATH_EXISTS = """
SELECT 1 FROM tree_files(%(tree)s) WHERE repo_id = ANY(%(visible)s::int[]) AND path ~ %(regex)s
LIMIT 1"""
SKIPPED_FOR = """
SELECT reason, detail FROM skipped
WHERE tree_id = %(tree)s AND repo_id = ANY(%(visible)s::int[]) AND path = %(path)s"""
SIMILAR_PATHS = """
SELECT path FROM tree_files(%(tree)s) WHERE repo_id = ANY(%(visible)s::int[])
ORDER BY similarity(path, %(path)s) DESC LIMIT 3"""

# --- status ------------------------------------------------------------------------------
REPO_COUNTS = """
SELECT count(*), coalesce(sum(f.size), 0), count(DISTINCT f.content_id)
FROM tree_files(%(tree)s) f WHERE f.repo_id = ANY(%(visible)s::int[])"""
# The tree's files whose bodies a first index left out of the grep index (the graph job
# puts them in; contents_grep_pending keeps this cheap once it has).
REPO_GREP_PENDING = """
SELECT count(*) FROM tree_files(%(tree)s) f JOIN contents co ON co.id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND NOT co.grep_ready"""
REPO_LANGUAGES = """
SELECT language, count(*) FROM tree_files(%(tree)s) WHERE repo_id = ANY(%(visible)s::int[])
GROUP BY language ORDER BY 2 DESC"""
REPO_CHUNKS = """
SELECT count(*) FROM chunks c WHERE c.content_id IN (
    SELECT content_id FROM tree_files(%(tree)s) WHERE repo_id = ANY(%(visible)s::int[]))"""
SKIPPED_SUMMARY = """
SELECT reason, count(*) FROM skipped WHERE tree_id = %(tree)s AND repo_id = ANY(%(visible)s::int[])
GROUP BY reason ORDER BY 2 DESC"""
SKIPPED_LIST = """
SELECT path, reason, detail FROM skipped WHERE tree_id = %(tree)s AND repo_id = ANY(%(visible)s::int[])
ORDER BY reason, path LIMIT %(k)s"""
REPO_GITIGNORED = "SELECT gitignored FROM trees WHERE id = %(tree)s AND repo_id = ANY(%(visible)s::int[])"
# Files indexed as plain text because their structure could not be read (a parse error, or
# a parser that stalled on them), with the reason.
REPO_AS_TEXT = """
SELECT f.path, co.parse_error, count(*) OVER ()
FROM tree_files(%(tree)s) f JOIN contents co ON co.id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND co.parse_error <> ''
ORDER BY f.path LIMIT %(k)s"""
# Files whose secrets were redacted, with each redaction (line and kind).
REPO_REDACTIONS = """
SELECT f.path, co.redactions, count(*) OVER (), sum(jsonb_array_length(co.redactions)) OVER ()
FROM tree_files(%(tree)s) f JOIN contents co ON co.id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND co.redactions <> '[]'::jsonb
ORDER BY f.path LIMIT %(k)s"""

# --- grep (codenav.search.grep) -------------------------------------------------------------------
# The search's time budget: every statement of the grep transaction stops at it.
GREP_TIMEOUT = "SELECT set_config('statement_timeout', %(ms)s, true)"


def grep_candidates(n_literals: int, case_sensitive: bool) -> sql.Composed:
    """The files grep reads: the repository's, narrowed by language and path regex, and by
    ``n_literals`` literals each body must contain (``%(lit0)s``... as LIKE patterns),
    found through the trigram index on contents.body for the contents in it
    (``grep_ready``). Path order."""
    op = sql.SQL("LIKE" if case_sensitive else "ILIKE")
    likes = sql.SQL("").join(
        sql.SQL("\n  AND co.body {op} {lit}").format(op=op, lit=sql.Placeholder(f"lit{i}"))
        for i in range(int(n_literals)))
    files = sql.SQL("""
SELECT f.path, f.content_id, f.language, f.size
FROM tree_files(%(tree)s) f JOIN contents co ON co.id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[])
  AND (%(language)s::text IS NULL OR f.language = %(language)s)
  AND (%(path_re)s::text IS NULL OR f.path ~ %(path_re)s)""")
    if not n_literals:
        return sql.SQL("{files}\nORDER BY f.path\nLIMIT %(cap)s").format(files=files)
    # The index holds the contents whose grep_ready is on; a first index's contents wait
    # for the graph job, and are matched here without it (contents_grep_pending).
    return sql.SQL("""{files}
  AND co.grep_ready{likes}
UNION ALL{files}
  AND NOT co.grep_ready{likes}
ORDER BY path
LIMIT %(cap)s""").format(files=files, likes=likes)


# Bodies of candidate contents, while a file of the repository points at them.
GREP_BODIES = """
SELECT co.id, co.body FROM contents co WHERE co.id = ANY(%(ids)s) AND EXISTS (
    SELECT 1 FROM tree_files(%(tree)s) f WHERE f.content_id = co.id
      AND f.repo_id = ANY(%(visible)s::int[]))"""

# --- token economy (codenav.usage) -------------------------------------------------------
# Sums of answers' _stats, added to the day's row (several API processes add up). A
# repository deleted since its answers were counted takes its figures with it.
USAGE_FLUSH = """
INSERT INTO usage_daily AS u (day, team_id, repo_id, tool, calls, empty, tokens_returned,
                              tokens_full_files, duration_ms)
SELECT n.day, n.team, n.repo, n.tool, n.calls, n.empty, n.returned, n.whole, n.ms
FROM unnest(%(day)s::date[], %(team)s::int[], %(repo)s::int[], %(tool)s::text[],
            %(calls)s::bigint[], %(empty)s::bigint[], %(returned)s::bigint[],
            %(full)s::bigint[], %(ms)s::float8[])
     AS n(day, team, repo, tool, calls, empty, returned, whole, ms)
WHERE EXISTS (SELECT 1 FROM teams t WHERE t.id = n.team)
  AND (n.repo IS NULL OR EXISTS (SELECT 1 FROM repos r WHERE r.id = n.repo))
ON CONFLICT (day, team_id, (coalesce(repo_id, 0)), tool) DO UPDATE SET
    calls = u.calls + EXCLUDED.calls, empty = u.empty + EXCLUDED.empty,
    tokens_returned = u.tokens_returned + EXCLUDED.tokens_returned,
    tokens_full_files = u.tokens_full_files + EXCLUDED.tokens_full_files,
    duration_ms = u.duration_ms + EXCLUDED.duration_ms"""
# Per day and tool, within what the caller sees: its visible repositories, its team's
# answers about no single repository (a token of the whole team), or all (the operator).
USAGE_SUMMARY = """
SELECT u.day, u.tool, sum(u.calls)::bigint, sum(u.empty)::bigint,
       sum(u.tokens_returned)::bigint, sum(u.tokens_full_files)::bigint, sum(u.duration_ms)
FROM usage_daily u
WHERE u.day >= %(since)s
  AND (u.repo_id = ANY(%(visible)s::int[])
       OR (u.repo_id IS NULL AND %(team_wide)s AND u.team_id = %(team)s)
       OR %(all)s)
GROUP BY u.day, u.tool
ORDER BY u.day DESC, sum(u.calls) DESC, u.tool"""

# --- benchmarks --------------------------------------------------------------------------

# --- embeddings --------------------------------------------------------------------------
# The text a chunk is embedded as: its context (path, kind, symbol, parent, signature, doc)
# then its code. Keyed by sha256 of this text and the model, so an unchanged chunk is never
# embedded twice, in any repo or branch. Expects aliases f (files) and c (chunks).
EMBED_TEXT = """(f.path || E'\\n' || c.kind || coalesce(' ' || c.symbol, '')
    || coalesce(' in ' || c.parent, '') || E'\\n'
    || CASE WHEN c.signature <> '' THEN c.signature || E'\\n' ELSE '' END
    || CASE WHEN c.doc <> '' THEN c.doc || E'\\n' ELSE '' END
    || c.body)"""
EMBED_MODEL_GET = "SELECT id, dim FROM embed_models WHERE name = %s"
EMBED_MODEL_NAMES = "SELECT name FROM embed_models ORDER BY id"
EMBED_MODEL_INSERT = """
INSERT INTO embed_models (name, dim) VALUES (%s, %s)
ON CONFLICT (name) DO NOTHING RETURNING id, dim"""
# The text of a (chunk, path) is shared by every tree holding that file. Released when no
# file holds the pair any more (path and content given in two arrays); returns the text
# hashes released, whose vectors EMBED_GC may then collect.
CHUNK_TEXTS_RELEASE = """
DELETE FROM chunk_texts ct USING chunks c, unnest(%s::text[], %s::bigint[]) AS g(path, content_id)
WHERE c.content_id = g.content_id AND ct.chunk_id = c.id AND ct.path = g.path
  AND NOT EXISTS (SELECT 1 FROM files f WHERE f.content_id = g.content_id AND f.path = g.path)
RETURNING ct.text_hash"""
# Which chunks get a vector: those of at least EMBED_MIN_LINES lines. Shorter ones (field
# groups, getters, one-line wrappers, import blocks) are found by name through the lexical
# rankers; on the development suite leaving them out raised hybrid find_files hit@5 from
# 79.0 to 79.6 with 27% fewer texts to embed (bench/README.md, "chunks of 5 lines or
# fewer"). Expects alias c (chunks).
EMBED_MIN_LINES = 6
EMBEDDABLE = f"(c.end_line - c.start_line + 1 >= {EMBED_MIN_LINES})"
# The statements below splice the constants EMBED_TEXT and EMBEDDABLE in at import time
# (no input).
CHUNK_TEXTS_BACKFILL = """
INSERT INTO chunk_texts (chunk_id, path, text_hash)
SELECT c.id, f.path, sha256(convert_to(@EMBED_TEXT@, 'UTF8'))
FROM files f JOIN chunks c ON c.content_id = f.content_id
WHERE f.tree_id = %s AND @EMBEDDABLE@
  AND NOT EXISTS (SELECT 1 FROM chunk_texts ct WHERE ct.chunk_id = c.id AND ct.path = f.path)
ON CONFLICT DO NOTHING""".replace("@EMBED_TEXT@", EMBED_TEXT).replace("@EMBEDDABLE@", EMBEDDABLE)
# A tree's texts still to embed, in hash order after the hash ``after`` (b"": from the
# start), skipping the files in ``later`` (embedded in a second pass). A store from before
# EMBEDDABLE may hold texts of shorter chunks: they are not embedded.
EMBED_BACKLOG = """
SELECT DISTINCT ON (ct.text_hash) ct.text_hash, @EMBED_TEXT@
FROM tree_files(%(tree)s) f JOIN chunks c ON c.content_id = f.content_id
JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path
WHERE NOT (f.path = ANY(%(later)s::text[])) AND @EMBEDDABLE@
  AND ct.text_hash > %(after)s::bytea
  AND NOT EXISTS (
    SELECT 1 FROM embeddings e WHERE e.model_id = %(model)s AND e.text_hash = ct.text_hash)
ORDER BY ct.text_hash
LIMIT %(k)s""".replace("@EMBED_TEXT@", EMBED_TEXT).replace("@EMBEDDABLE@", EMBEDDABLE)
# The trees of a repository whose vectors may be incomplete for a model: each records the
# state it was last embedded at ("model:files_version"); the default tree first.
EMBED_TREES = """
SELECT t.id, t.files_version FROM trees t JOIN repos r ON r.id = t.repo_id
WHERE t.repo_id = %(repo)s AND (t.ready OR t.kind = 'worktree')
  AND t.embed_state IS DISTINCT FROM %(model)s::text || ':' || t.files_version
ORDER BY (t.kind = 'worktree') = (r.default_ref IS NULL) DESC,
         t.id IN (SELECT tree_id FROM repo_refs WHERE repo_id = t.repo_id) DESC, t.id DESC"""
EMBED_TREE_DONE = """
UPDATE trees SET embed_state = %(model)s::text || ':' || files_version
WHERE id = %(tree)s AND files_version = %(version)s"""
EMBED_STAGE_CREATE = """
CREATE TEMP TABLE IF NOT EXISTS stage_embeddings (text_hash bytea, vec vector)
ON COMMIT DELETE ROWS"""
EMBED_STAGE_COPY = "COPY stage_embeddings (text_hash, vec) FROM STDIN"
EMBED_STAGE_INSERT = """
INSERT INTO embeddings (model_id, text_hash, vec)
SELECT %s, text_hash, vec FROM stage_embeddings
ON CONFLICT (model_id, text_hash) DO NOTHING"""
# Coverage counts the chunks that get a vector (EMBEDDABLE), embedded or not.
EMBED_COVERAGE = """
SELECT count(*), count(e.text_hash)
FROM tree_files(%(tree)s) f JOIN chunks c ON c.content_id = f.content_id
JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path
LEFT JOIN embeddings e ON e.model_id = %(model)s AND e.text_hash = ct.text_hash
WHERE f.repo_id = ANY(%(visible)s::int[]) AND @EMBEDDABLE@""".replace("@EMBEDDABLE@", EMBEDDABLE)
EMBED_REPO_CHUNKS = """
SELECT count(*) FROM tree_files(%(tree)s) f JOIN chunks c ON c.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND @EMBEDDABLE@""".replace("@EMBEDDABLE@", EMBEDDABLE)
EMBED_MODEL_COUNT = "SELECT count(*) FROM embeddings WHERE model_id = %s"
INDEX_EXISTS = "SELECT 1 FROM pg_indexes WHERE indexname = %s"
# Vectors of texts no chunk is embedded as any more (after a tree or repository went).
EMBED_GC = """
DELETE FROM embeddings e
WHERE e.text_hash = ANY(%s)
  AND NOT EXISTS (SELECT 1 FROM chunk_texts ct WHERE ct.text_hash = e.text_hash)"""
# Per session, before every k-NN (codenav.embed.vectors.knn): keep scanning the HNSW graph
# until k rows pass the filters (up to hnsw.max_scan_tuples), instead of stopping at
# hnsw.ef_search candidates.
SESSION_VECTOR_SETUP = "SET hnsw.iterative_scan = relaxed_order"


def hnsw_index_name(model_id: int) -> str:
    return f"embeddings_hnsw_m{int(model_id)}"


def create_hnsw(model_id: int, dim: int) -> sql.Composed:
    """The HNSW (cosine) index of one model: a partial expression index, because the
    dimension is a type modifier and each model has its own."""
    return sql.SQL(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON embeddings USING hnsw "
        "((vec::vector({dim})) vector_cosine_ops) WHERE model_id = {model}"
    ).format(name=sql.Identifier(hnsw_index_name(model_id)), dim=sql.Literal(int(dim)),
             model=sql.Literal(int(model_id)))


# The k-NN filters, shared by its two passes so that they always agree on what may be
# returned (each writes its own join with the caller's visible set, where the check of
# tests/core/db/test_visibility_sql.py reads it).
KNN_FILTERS = """(%(language)s::text IS NULL OR f.language = %(language)s)
  AND (%(path_re)s::text IS NULL OR f.path ~ %(path_re)s)
  AND (%(kind)s::text IS NULL OR c.kind = %(kind)s)
  AND (NOT %(exported)s OR c.exported)"""


def semantic_nearest(model_id: int, dim: int, flat: bool = False) -> sql.Composed:
    """The first pass of a k-NN: the ``scan`` nearest vectors of the model, whatever their
    repository (the HNSW index reads a few hundred), then the chunks of the request's tree
    among them. ``semantic_search`` walks further when fewer than k pass the filters. The
    whole join under one ORDER BY ... LIMIT is planned as an exact scan on a large
    repository: the planner expects a dozen rows from chunk texts joined to the tree's
    chunks and files (two correlated keys), where every embedded chunk passes."""
    return sql.SQL((flat_tree if flat else str)("""
SELECT ct.chunk_id, ct.path, e.dist, c.start_line
FROM (SELECT v.text_hash, (v.vec::vector({dim})) <=> %(q)s::vector({dim}) AS dist
      FROM embeddings v
      WHERE v.model_id = {model}
      ORDER BY (v.vec::vector({dim})) <=> %(q)s::vector({dim})
      LIMIT %(scan)s) e
JOIN chunk_texts ct ON ct.text_hash = e.text_hash
JOIN chunks c ON c.id = ct.chunk_id
JOIN tree_files(%(tree)s) f ON f.path = ct.path AND f.content_id = c.content_id
  AND f.repo_id = ANY(%(visible)s::int[])
WHERE {filters}
ORDER BY e.dist
LIMIT %(k)s""")).format(dim=sql.Literal(int(dim)), model=sql.Literal(int(model_id)),
                       filters=sql.SQL(KNN_FILTERS))


def semantic_search(model_id: int, dim: int, flat: bool = False) -> sql.Composed:
    """k-NN over one model's vectors, filtered to a repo (and optional language, path glob,
    kind); iterative index scans keep it returning k rows when the filter is selective.
    Model and dimension are literals so the planner matches the partial index. Rows carry
    the chunk's start line: chunks with the same text share a vector, and the caller breaks
    their ties by (path, line), which every store agrees on. ``flat``: for a working tree
    (``flat_tree``)."""
    return sql.SQL((flat_tree if flat else str)("""
SELECT ct.chunk_id, ct.path, (e.vec::vector({dim})) <=> %(q)s::vector({dim}) AS dist,
       c.start_line
FROM embeddings e
JOIN chunk_texts ct ON ct.text_hash = e.text_hash
JOIN chunks c ON c.id = ct.chunk_id
JOIN tree_files(%(tree)s) f ON f.path = ct.path AND f.content_id = c.content_id
  AND f.repo_id = ANY(%(visible)s::int[])
WHERE e.model_id = {model}
  AND {filters}
ORDER BY (e.vec::vector({dim})) <=> %(q)s::vector({dim})
LIMIT %(k)s""")).format(dim=sql.Literal(int(dim)), model=sql.Literal(int(model_id)),
                       filters=sql.SQL(KNN_FILTERS))

# --- code graph: per-content facts (parser processes) --------------------------------------
# Binary, as chunks and symbols: the client writes a row in half the CPU of text (a graph's
# 1.27 million refs on Apache Kafka: 0.9 s less; bench/README.md, "symbols and refs in
# binary too").
REFS_COPY = """
COPY refs (content_id, ord, kind, name, qualifier, alias, line, scope) FROM STDIN (FORMAT BINARY)"""
REFS_TYPES = ["int8", "int4", "text", "text", "text", "text", "int4", "text"]

# --- code graph: building a tree's graph (codenav.graph.build) -----------------------------
# A tree's graph is read through tree_imports/tree_edges/tree_links (its own rows, and its
# base's for the paths it does not hold itself: migration 0010) and written to its own rows.
GRAPH_STATE_GET = "SELECT version FROM graph_state WHERE tree_id = %s"
GRAPH_STATE_PUT = """
INSERT INTO graph_state (repo_id, tree_id, version, built_at, full_build, files_resolved, seconds)
SELECT repo_id, id, %s, now(), %s, %s, %s FROM trees WHERE id = %s
ON CONFLICT (tree_id) DO UPDATE SET version = EXCLUDED.version, built_at = now(),
    full_build = EXCLUDED.full_build, files_resolved = EXCLUDED.files_resolved,
    seconds = EXCLUDED.seconds"""
GRAPH_TREE = "SELECT repo_id, base_id, mid_id FROM trees WHERE id = %s"
# Every file with its language and package line (the package row sorts first in refs).
GRAPH_FILES = """
SELECT f.path, f.language, coalesce(r.name, ''), f.content_id
FROM tree_files(%s) f
LEFT JOIN refs r ON r.content_id = f.content_id AND r.ord = 0 AND r.kind = 'package'"""
GRAPH_CONFIGS = """
SELECT f.path, c.body FROM tree_files(%s) f JOIN contents c ON c.id = f.content_id
WHERE f.path ~ %s"""
# By content id (the build knows each file's): index scans however the planner estimates.
GRAPH_SYMBOLS = """
SELECT content_id, name, qualname, kind, depth, exported, start_line
FROM symbols WHERE content_id = ANY(%s)"""
GRAPH_FACTS = """
SELECT content_id, ord, kind, name, qualifier, alias, line, scope
FROM refs WHERE content_id = ANY(%s) AND kind = ANY(%s)"""
GRAPH_STORED_BASES = """
SELECT src_path, src_scope, dst_path, dst_qual FROM tree_edges(%s)
WHERE src_path = ANY(%s) AND kind IN ('extends', 'implements') AND verified"""
GRAPH_DEFINITIONS = """
SELECT f.path, s.name, s.qualname, s.kind, s.depth, s.exported, s.start_line
FROM symbols s JOIN tree_files(%s) f ON f.content_id = s.content_id
WHERE lower(s.name) = ANY(%s) AND f.language = ANY(%s)"""
GRAPH_IMPORTERS = """
SELECT DISTINCT src_path FROM tree_imports(%s) WHERE dst_path = ANY(%s)"""
GRAPH_WILDCARD_IMPORTERS = """
SELECT DISTINCT src_path FROM tree_imports(%s) WHERE dst_path = ANY(%s) AND spec LIKE '%%*'"""
GRAPH_UNRESOLVED_IMPORTERS = """
SELECT DISTINCT src_path FROM tree_imports(%s) WHERE dst_path IS NULL AND spec LIKE ANY(%s)"""
GRAPH_REFERRERS = """
SELECT DISTINCT src_path FROM tree_edges(%s) WHERE dst_path = ANY(%s)"""
GRAPH_SUBCLASS_FILES = """
SELECT DISTINCT src_path FROM tree_edges(%s)
WHERE dst_path = ANY(%s) AND kind IN ('extends', 'implements')"""
GRAPH_KNOWN = "SELECT path FROM tree_ranks(%s) WHERE path = ANY(%s)"
# What other files' resolution can read of a content (its interface): its declarations and
# the facts another file follows into it (imports and re-exports, heritage, return types,
# package, and variables and declarations of module or class scope), without line numbers.
# Two versions of a file with the same key resolve every other file the same way. NULL:
# its facts are not extracted yet (unknown).
GRAPH_INTERFACE_KEYS = """
SELECT c.id, CASE WHEN EXISTS (SELECT 1 FROM pending_facts p WHERE p.content_id = c.id)
                  THEN NULL ELSE md5(coalesce((
    SELECT string_agg(x, E'\n' ORDER BY x) FROM (
        SELECT concat_ws('|', 's', s.name, s.qualname, s.kind, s.depth, s.exported,
                         array_to_string(s.bases, ','))
        FROM symbols s WHERE s.content_id = c.id
        UNION ALL
        SELECT concat_ws('|', 'f', r.kind, r.name, r.qualifier, r.alias, r.scope)
        FROM refs r WHERE r.content_id = c.id AND r.kind = ANY(%(kinds)s)
          AND (r.kind NOT IN ('var', 'decl') OR r.scope = '' OR r.scope IN (
              SELECT k.qualname FROM symbols k WHERE k.content_id = c.id
                AND k.kind = ANY(%(classes)s)))) t(x)), '')) END
FROM contents c WHERE c.id = ANY(%(ids)s)"""
GRAPH_PAIRS = """
SELECT src_path, dst_path, imports, refs FROM tree_links(%s) WHERE src_path = ANY(%s)"""
# The effective rows of some files (a layered build compares what it resolved with them,
# and keeps its own rows only for the files whose rows differ from its base's).
GRAPH_IMPORT_ROWS = """
SELECT src_path, ord, spec, line, dst_path FROM tree_imports(%s) WHERE src_path = ANY(%s)"""
GRAPH_EDGE_ROWS = """
SELECT src_path, ord, line, src_scope, kind, dst_path, dst_qual, verified, how
FROM tree_edges(%s) WHERE src_path = ANY(%s)"""
GRAPH_IMPORTS_CLEAR = "DELETE FROM graph_imports WHERE tree_id = %s"
GRAPH_IMPORTS_DELETE = "DELETE FROM graph_imports WHERE tree_id = %s AND src_path = ANY(%s)"
GRAPH_EDGES_CLEAR = "DELETE FROM graph_edges WHERE tree_id = %s"
GRAPH_EDGES_DELETE = "DELETE FROM graph_edges WHERE tree_id = %s AND src_path = ANY(%s)"
GRAPH_LINKS_CLEAR = "DELETE FROM graph_links WHERE tree_id = %s"
GRAPH_LINKS_DELETE = "DELETE FROM graph_links WHERE tree_id = %s AND src_path = ANY(%s)"
# A layered tree: the paths it holds itself; a full build makes it hold all (no base).
GRAPH_LAYER_ADD = """
INSERT INTO graph_layer (tree_id, path) SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING"""
GRAPH_LAYER_CLEAR = "DELETE FROM graph_layer WHERE tree_id = %s"
GRAPH_LAYER_SIZE = "SELECT count(*) FROM graph_layer WHERE tree_id = %s"
GRAPH_UNLAYER = "UPDATE trees SET base_id = NULL, mid_id = NULL WHERE id = %s"
TREES_ON_MID = "SELECT id FROM trees WHERE mid_id = %s"
# Copy what a layered tree reads below itself (its mid's and base's rows) into its own
# rows: it stops depending on them.
GRAPH_FLATTEN = """
WITH i AS (
    INSERT INTO graph_imports (repo_id, tree_id, src_path, ord, spec, line, dst_path)
    SELECT g.repo_id, %(tree)s, g.src_path, g.ord, g.spec, g.line, g.dst_path
    FROM tree_imports(%(tree)s) g WHERE g.tree_id <> %(tree)s),
e AS (
    INSERT INTO graph_edges (repo_id, tree_id, src_path, ord, line, src_scope, kind, dst_path,
                             dst_qual, verified, how)
    SELECT g.repo_id, %(tree)s, g.src_path, g.ord, g.line, g.src_scope, g.kind, g.dst_path,
           g.dst_qual, g.verified, g.how
    FROM tree_edges(%(tree)s) g WHERE g.tree_id <> %(tree)s)
INSERT INTO graph_links (repo_id, tree_id, src_path, dst_path, imports, refs)
SELECT g.repo_id, %(tree)s, g.src_path, g.dst_path, g.imports, g.refs
FROM tree_links(%(tree)s) g WHERE g.tree_id <> %(tree)s"""
GRAPH_LINKS_COPY = """
COPY graph_links (repo_id, tree_id, src_path, dst_path, imports, refs) FROM STDIN (FORMAT BINARY)"""
GRAPH_LINKS_TYPES = ["int4", "int4", "text", "text", "int4", "int4"]
GRAPH_IMPORTS_COPY = """
COPY graph_imports (repo_id, tree_id, src_path, ord, spec, line, dst_path) FROM STDIN (FORMAT BINARY)"""
GRAPH_IMPORTS_TYPES = ["int4", "int4", "text", "int4", "text", "int4", "text"]
GRAPH_EDGES_COPY = """
COPY graph_edges (repo_id, tree_id, src_path, ord, line, src_scope, kind, dst_path, dst_qual,
                  verified, how) FROM STDIN (FORMAT BINARY)"""
GRAPH_EDGES_TYPES = ["int4", "int4", "text", "int4", "int4", "text", "text", "text", "text",
                     "bool", "text"]
# Links between files for PageRank: imports and verified references, counted.
GRAPH_LINKS = "SELECT src_path, dst_path, imports, refs FROM tree_links(%s)"
GRAPH_PATHS = "SELECT path, language FROM tree_files(%s)"
# The ranks a layered tree reads of its base (it keeps its own only where they differ).
GRAPH_BASE_RANKS = """
SELECT g.path, g.prior, g.imported_by FROM tree_ranks(%(tree)s) g WHERE g.tree_id <> %(tree)s"""
GRAPH_RANK_CLEAR = "DELETE FROM graph_files WHERE tree_id = %s"
GRAPH_RANK_COPY = "COPY graph_files (repo_id, tree_id, path, rank, prior, imported_by) FROM STDIN"
GRAPH_ANALYZE = "ANALYZE refs, graph_imports, graph_edges, graph_links, graph_files"
FACTS_ANALYZE = "ANALYZE refs"

# --- file-level ranking for long queries (codenav.search.bm25) ---------------------------------
# A whole-file ranking runs over the files a search's language and path filters let through
# (both NULL: every file); its statistics, postings and path matches alike.
_WITHIN = """(%(language)s::text IS NULL OR language = %(language)s)
  AND (%(path_re)s::text IS NULL OR path ~ %(path_re)s)"""
# The paths matching each query group: one match of every path against all the groups' terms
# (``any``), then each group's own on the few that pass (one pass per group over every path
# took nearly three times as long on Apache Kafka). One row of two arrays (group number from
# 1, path), read in binary: a short query's groups match a thousand paths on Apache Kafka.
FILE_GROUP_PATHS = """
SELECT array_agg(g.i::int), array_agg(f.path)
FROM (SELECT t.path, t.path_tsv FROM tree_files(%(tree)s) t
      WHERE t.repo_id = ANY(%(visible)s::int[]) AND t.path_tsv @@ %(any)s::tsquery
        AND @WITHIN@) f
CROSS JOIN LATERAL (SELECT g.i FROM unnest(%(tsqs)s::tsquery[]) WITH ORDINALITY AS g(q, i)
                    WHERE f.path_tsv @@ g.q) g""".replace("@WITHIN@", _WITHIN)
REPO_FILE_STATS = """
SELECT count(*), coalesce(avg(size), 1) FROM tree_files(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[]) AND @WITHIN@""".replace("@WITHIN@", _WITHIN)

# --- code graph: tools (codenav.graph.lookup, .impact, .skeleton) -------------------------
# Declarations by name or qualified name (a qualified name also matches as a suffix:
# `Svc.Get` finds `Acme.Services.Svc.Get`).
GRAPH_LOCATE = """
SELECT f.path, s.name, s.qualname, s.kind, s.parent, s.start_line, s.end_line, s.signature,
       s.doc, s.exported, s.bases, f.language, coalesce(pkg.name, '')
FROM symbols s JOIN tree_files(%(tree)s) f ON f.content_id = s.content_id
  AND f.repo_id = ANY(%(visible)s::int[])
LEFT JOIN refs pkg ON pkg.content_id = f.content_id AND pkg.ord = 0 AND pkg.kind = 'package'
WHERE lower(s.name) = %(name)s
  AND (%(qual)s::text IS NULL OR lower(s.qualname) = %(qual)s OR lower(s.qualname) LIKE %(suffix)s)
  AND (%(path)s::text IS NULL OR f.path = %(path)s)
  AND (%(kinds)s::text[] IS NULL OR s.kind = ANY(%(kinds)s))
ORDER BY lower(s.qualname) = coalesce(%(qual)s, lower(s.name)) DESC, s.depth, length(f.path),
         f.path, s.start_line
LIMIT %(k)s"""
GRAPH_LOCATE_COUNT = """
SELECT count(*) FROM symbols s JOIN tree_files(%(tree)s) f ON f.content_id = s.content_id
  AND f.repo_id = ANY(%(visible)s::int[])
WHERE lower(s.name) = %(name)s
  AND (%(qual)s::text IS NULL OR lower(s.qualname) = %(qual)s OR lower(s.qualname) LIKE %(suffix)s)
  AND (%(path)s::text IS NULL OR f.path = %(path)s)
  AND (%(kinds)s::text[] IS NULL OR s.kind = ANY(%(kinds)s))"""
# A layered tree's rows (``tree_edges(t)``: a union of its own rows and its layers') are
# never probed by a join key: Postgres plans no parameterized path into the union, so a
# join with the names asked for hashed all of the base's edges. On Apache Kafka (494,267
# edges) ``references`` on a tree layered on the working tree took 1.8 s and ``impact`` 3.7 s
# against 5 and 4 ms on the working tree itself (and ``impact``'s second level, 5,374 names,
# 1.4 s on a commit tree with no layers). The keys therefore go into a LATERAL
# subquery (``OFFSET 0`` keeps it from being flattened back into a join), and anti-joins
# into a correlated ``NOT EXISTS (... OFFSET 0)``: each branch of the union is then probed by
# its index.
# Edges into a set of declarations, from files that still exist.
GRAPH_EDGES_TO = """
SELECT e.src_path, e.line, e.src_scope, e.kind, e.how, e.dst_path, e.dst_qual, e.verified,
       count(*) OVER () AS total
FROM (
    SELECT g.* FROM unnest(%(paths)s::text[], %(quals)s::text[]) AS t(path, qual)
    CROSS JOIN LATERAL (
        SELECT x.* FROM tree_edges(%(tree)s) x
        WHERE x.dst_path = t.path AND x.dst_qual = t.qual OFFSET 0) g
    WHERE g.repo_id = ANY(%(visible)s::int[])
      AND (%(verified)s::boolean IS NULL OR g.verified = %(verified)s)
      AND (%(kinds)s::text[] IS NULL OR g.kind = ANY(%(kinds)s))
    OFFSET 0) e  -- the files' check once for all the edges, not once per name asked for
WHERE EXISTS (SELECT 1 FROM tree_files(%(tree)s) f WHERE f.path = e.src_path)
ORDER BY e.verified DESC, e.src_path, e.line, e.kind, e.dst_path, e.dst_qual, e.src_scope, e.how
LIMIT %(k)s"""
# References of a name that resolved to nothing: potential matches, with what they were
# called on (the reason is derived from it).
GRAPH_UNRESOLVED = """
SELECT f.path, r.line, r.scope, r.kind, r.qualifier, count(*) OVER () AS total
FROM refs r JOIN tree_files(%(tree)s) f ON f.content_id = r.content_id
  AND f.repo_id = ANY(%(visible)s::int[])
WHERE r.name = %(name)s AND r.kind IN ('call', 'type', 'extends', 'implements')
  AND r.kind = ANY(%(kinds)s)
  AND NOT EXISTS (SELECT 1 FROM tree_edges(%(tree)s) e
                  WHERE e.src_path = f.path AND e.ord = r.ord OFFSET 0)
ORDER BY f.path, r.line
LIMIT %(k)s"""
# How many references of a name resolved to nothing, counted up to a cap (impact's note).
GRAPH_UNRESOLVED_COUNT = """
SELECT count(*) FROM (
    SELECT 1 FROM refs r JOIN tree_files(%(tree)s) f ON f.content_id = r.content_id
      AND f.repo_id = ANY(%(visible)s::int[])
    WHERE r.name = %(name)s AND r.kind IN ('call', 'type', 'extends', 'implements')
      AND NOT EXISTS (SELECT 1 FROM tree_edges(%(tree)s) e
                      WHERE e.src_path = f.path AND e.ord = r.ord OFFSET 0)
    LIMIT %(cap)s) x"""
# The type references of a declaration that resolved, with the declarations they name.
GRAPH_TYPES_OF = """
SELECT r.name, e.dst_path, e.dst_qual, s.kind, s.start_line, s.end_line, s.signature, s.doc
FROM tree_files(%(tree)s) f
JOIN refs r ON r.content_id = f.content_id
JOIN tree_edges(%(tree)s) e ON e.src_path = f.path AND e.ord = r.ord
JOIN tree_files(%(tree)s) df ON df.path = e.dst_path
JOIN symbols s ON s.content_id = df.content_id AND s.qualname = e.dst_qual
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = %(path)s
  AND r.scope = %(scope)s AND r.kind IN ('type', 'extends', 'implements') AND e.verified
ORDER BY r.line, r.ord"""
GRAPH_TYPE_REFS = """
SELECT r.ord, r.name FROM tree_files(%(tree)s) f JOIN refs r ON r.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = %(path)s
  AND r.scope = %(scope)s AND r.kind IN ('type', 'extends', 'implements')"""
GRAPH_RESOLVED_ORDS = """
SELECT DISTINCT ord FROM tree_edges(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[]) AND src_path = %(path)s AND ord = ANY(%(ords)s)"""
# Members (methods) of classes in some files.
GRAPH_MEMBERS = """
SELECT f.path, s.qualname, s.name, s.kind, s.start_line, s.signature
FROM tree_files(%(tree)s) f JOIN symbols s ON s.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = ANY(%(paths)s)
  AND s.kind IN ('method', 'function', 'constructor')
  AND s.parent IS NOT NULL
ORDER BY f.path, s.start_line"""
GRAPH_SUBCLASSES = """
SELECT e.src_path, e.src_scope, e.kind, e.line, e.dst_path, e.dst_qual, e.verified, e.how
FROM unnest(%(paths)s::text[], %(quals)s::text[]) AS t(path, qual)
CROSS JOIN LATERAL (
    SELECT g.* FROM tree_edges(%(tree)s) g
    WHERE g.dst_path = t.path AND g.dst_qual = t.qual AND g.kind IN ('extends', 'implements')
    OFFSET 0) e
WHERE e.repo_id = ANY(%(visible)s::int[])
ORDER BY e.verified DESC, e.src_path, e.line"""
GRAPH_SYMBOL_AT = """
SELECT f.path, s.qualname, s.kind, s.start_line, s.signature
FROM tree_files(%(tree)s) f JOIN symbols s ON s.content_id = f.content_id
JOIN unnest(%(paths)s::text[], %(quals)s::text[]) AS t(path, qual)
  ON f.path = t.path AND s.qualname = t.qual
WHERE f.repo_id = ANY(%(visible)s::int[])"""
# Go: types whose methods (in the same package directory) include every method of an
# interface: they satisfy it without saying so.
GRAPH_GO_METHODS = """
SELECT f.path, s.qualname, s.name
FROM tree_files(%(tree)s) f JOIN symbols s ON s.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.language = 'go' AND s.kind = 'method'
  AND s.name = ANY(%(names)s)"""
# File-level links out of (imports, references) and into (importers, users) some files.
GRAPH_LINKS_FROM = """
SELECT src_path, dst_path, imports, refs FROM tree_links(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[]) AND src_path = ANY(%(paths)s)
ORDER BY dst_path, src_path"""
GRAPH_LINKS_TO = """
SELECT src_path, dst_path, imports, refs FROM tree_links(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[]) AND dst_path = ANY(%(paths)s)
ORDER BY src_path, dst_path"""
GRAPH_IMPORT_SPECS = """
SELECT dst_path, min(spec) FROM tree_imports(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[]) AND src_path = %(path)s
  AND dst_path IS NOT NULL GROUP BY dst_path"""
GRAPH_EXTERNAL_OF = """
SELECT DISTINCT spec FROM tree_imports(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[]) AND src_path = %(path)s AND dst_path IS NULL
ORDER BY spec"""
# Per file: language and how many files import it (from the last graph build).
GRAPH_FILE_META = """
SELECT f.path, f.language, coalesce(g.imported_by, 0)
FROM tree_files(%(tree)s) f LEFT JOIN tree_ranks(%(tree)s) g ON g.path = f.path
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = ANY(%(paths)s)"""
# Exported declarations (not members) of some files, for their first exports.
GRAPH_EXPORTS = """
SELECT f.path, s.name, s.kind, s.depth, s.start_line
FROM tree_files(%(tree)s) f JOIN symbols s ON s.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = ANY(%(paths)s) AND s.exported
  AND s.kind NOT IN ('method', 'constructor', 'property')
ORDER BY f.path, s.start_line"""
# Skeleton: exported declarations of the files under a directory.
GRAPH_SKELETON = """
SELECT f.path, f.language, s.name, s.qualname, s.kind, s.start_line, s.parent
FROM tree_files(%(tree)s) f JOIN symbols s ON s.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[])
  AND (%(like)s::text IS NULL OR f.path LIKE %(like)s) AND s.exported AND s.kind NOT IN ('method', 'constructor', 'property')
ORDER BY f.path, s.start_line"""
GRAPH_SKELETON_CLASSES = """
SELECT f.path, s.qualname FROM tree_files(%(tree)s) f JOIN symbols s ON s.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[])
  AND (%(like)s::text IS NULL OR f.path LIKE %(like)s) AND s.kind IN ('class', 'interface', 'enum', 'function', 'method')"""
# What an answer could not see: skipped files, code in languages without a graph, files
# whose structure failed to parse, and whether the graph is current.
GRAPH_COVERAGE = """
SELECT (SELECT count(*) FROM skipped WHERE tree_id = %(tree)s AND repo_id = %(repo)s
          AND repo_id = ANY(%(visible)s::int[])),
       (SELECT count(*) FROM tree_files(%(tree)s) WHERE repo_id = %(repo)s
          AND repo_id = ANY(%(visible)s::int[])
          AND language <> ALL(%(graphed)s) AND language <> ALL(%(noncode)s)),
       (SELECT coalesce(array_agg(DISTINCT language), '{}') FROM tree_files(%(tree)s)
          WHERE repo_id = %(repo)s AND repo_id = ANY(%(visible)s::int[])
          AND language <> ALL(%(graphed)s) AND language <> ALL(%(noncode)s)),
       (SELECT count(*) FROM tree_files(%(tree)s) f JOIN contents c ON c.id = f.content_id
          WHERE f.repo_id = %(repo)s AND f.repo_id = ANY(%(visible)s::int[])
          AND c.parse_error <> ''),
       (SELECT version FROM graph_state WHERE tree_id = %(tree)s AND repo_id = %(repo)s
          AND repo_id = ANY(%(visible)s::int[]))"""
GRAPH_PRIORS = """
SELECT path, prior FROM tree_ranks(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[]) AND path = ANY(%(paths)s)"""
# Chunk ranking inside the files a long query ranked best (see filerank).
SEARCH_IN_FILES = """
WITH g AS (
    SELECT q, w FROM unnest(%(tsqs)s::tsquery[], %(weights)s::float8[]) AS g(q, w)
)
SELECT c.id, f.path,
       (SELECT sum(g.w * ts_rank('{0.1, 0.3, 0.6, 1.0}', c.tsv, g.q)) FROM g)
           / (0.6 + 0.4 * c.n_terms / %(avg_terms)s) AS score
FROM tree_files(%(tree)s) f JOIN chunks c ON c.content_id = f.content_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = ANY(%(paths)s)
  AND c.tsv @@ %(any)s::tsquery
  AND (%(language)s::text IS NULL OR f.language = %(language)s)
  AND (%(path_re)s::text IS NULL OR f.path ~ %(path_re)s)
  AND (%(kind)s::text IS NULL OR c.kind = %(kind)s)
  AND (NOT %(exported)s OR c.exported)
ORDER BY score DESC, f.path, c.id
LIMIT %(k)s"""
FILE_TERMS_COPY = "COPY file_terms (term, content_id, tf) FROM STDIN"
# Whole-file term frequencies of the query's terms in a repository's files.
# Both sides are read whole and hashed (OFFSET 0 keeps them apart): thousands of postings
# against every file of the tree, where a merge join sorted the tree's files each query.
# One row of four arrays (term, path, tf, size), read in binary: thousands of postings as
# rows cost a tuple each and a pass to make columns of them (Apache Kafka, 193 queries,
# median 5.2 against 4.4 ms).
FILE_TERM_POSTINGS = """
SELECT array_agg(t.term), array_agg(f.path), array_agg(t.tf), array_agg(f.size)
FROM (SELECT term, content_id, tf FROM file_terms WHERE term = ANY(%(terms)s) OFFSET 0) t
JOIN (SELECT content_id, path, size FROM tree_files(%(tree)s)
      WHERE repo_id = ANY(%(visible)s::int[]) AND @WITHIN@ OFFSET 0) f
  ON f.content_id = t.content_id""".replace("@WITHIN@", _WITHIN)
# The same while contents have no postings yet (STATS_QUERY says so): for those, a term's
# frequency in a file is the number of its chunks that hold it (a presence per chunk,
# through the chunks' vector index, as STATS_PENDING_DF).
FILE_TERM_POSTINGS_PENDING = """
SELECT array_agg(t.term), array_agg(f.path), array_agg(t.tf), array_agg(f.size)
FROM (SELECT term, content_id, tf FROM file_terms WHERE term = ANY(%(terms)s)
      UNION ALL
      SELECT x.t, c.content_id, count(*)::int
      FROM unnest(%(terms)s::text[]) x(t)
      CROSS JOIN LATERAL (
          SELECT c.content_id FROM chunks c
          WHERE c.tsv @@ to_tsquery('simple', quote_literal(x.t))
            AND c.content_id IN (SELECT content_id FROM pending_terms)) c
      WHERE length(x.t) > 1 AND NOT (length(x.t) = 2 AND x.t ~ '^[0-9]+$')
      GROUP BY 1, 2
      OFFSET 0) t
JOIN (SELECT content_id, path, size FROM tree_files(%(tree)s)
      WHERE repo_id = ANY(%(visible)s::int[]) AND @WITHIN@ OFFSET 0) f
  ON f.content_id = t.content_id""".replace("@WITHIN@", _WITHIN)

# Files that declare names a long query spells out (top-level or class members).
# The tree's files of each matching declaration are looked up by content (OFFSET 0 keeps
# the lookup a parameterised index scan): a hash join hashed every file of the tree for a
# few dozen declarations.
DECLARING_FILES = """
SELECT f.path, count(DISTINCT lower(s.name))
FROM symbols s CROSS JOIN LATERAL (
    SELECT t.path FROM tree_files(%(tree)s) t
    WHERE t.content_id = s.content_id AND t.repo_id = ANY(%(visible)s::int[]) OFFSET 0) f
WHERE lower(s.name) = ANY(%(names)s) AND s.depth <= 1
GROUP BY f.path"""

# --- find_files: per-candidate features (codenav.search.features) --------------------------------
# Declared names (and the start of their doc comments) of candidate files: the symbol and
# doc fields of fielded file scoring. Only rows holding a query term (``likes``: each
# '%term%') can count, so only those are sent: a fifth of them on Apache Kafka. A doc
# comment is sent only where it holds one (the caller looks for whole words in it).
FILE_DECLARED = """
SELECT f.path, s.name, s.depth, CASE WHEN d.hit THEN d.doc END
FROM tree_files(%(tree)s) f JOIN symbols s ON s.content_id = f.content_id
CROSS JOIN LATERAL (SELECT left(s.doc, 400) AS doc) d0
CROSS JOIN LATERAL (SELECT d0.doc, lower(d0.doc) LIKE ANY(%(likes)s) AS hit) d
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = ANY(%(paths)s)
  AND s.depth <= 2
  AND (lower(s.name) LIKE ANY(%(likes)s) OR d.hit)
LIMIT %(k)s"""
# Line count, size, centrality and importer count of candidate files, in one statement
# (prior and importers are NULL where the graph has not ranked the file).
FILE_FACTS = """
SELECT f.path, co.line_count, f.size, g.prior, g.imported_by, h.commits, h.age,
       hh.files > 0  -- a history that says nothing (a shallow clone's one commit) is none
FROM tree_files(%(tree)s) f JOIN contents co ON co.id = f.content_id
LEFT JOIN tree_ranks(%(tree)s) g ON g.path = f.path AND g.repo_id = ANY(%(visible)s::int[])
  AND g.path = ANY(%(paths)s)  -- lets the ranks be looked up by path, not scanned whole
LEFT JOIN file_history h ON h.repo_id = f.repo_id AND h.path = f.path
LEFT JOIN history_heads hh ON hh.repo_id = f.repo_id
WHERE f.repo_id = ANY(%(visible)s::int[]) AND f.path = ANY(%(paths)s)"""
# File-level links touching the strongest candidates (their graph neighbours).
FILE_NEIGHBOURS = """
SELECT src_path, dst_path, imports + refs FROM tree_links(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[])
  AND (src_path = ANY(%(paths)s) OR dst_path = ANY(%(paths)s))
ORDER BY imports + refs DESC, src_path, dst_path
LIMIT %(k)s"""
# The files that declare a version (``codenav.search.query.VERSION_DECLARED``), shallowest
# first: what a release query changes. Only chunks holding the word (the GIN index) are
# matched against the pattern, not whole bodies.
VERSION_FILES = """
SELECT f.path FROM tree_files(%(tree)s) f
WHERE f.repo_id = ANY(%(visible)s::int[]) AND EXISTS (
    SELECT 1 FROM chunks c WHERE c.content_id = f.content_id AND c.tsv @@ %(word)s::tsquery
      AND c.body ~* %(pattern)s)
ORDER BY array_length(string_to_array(f.path, '/'), 1), length(f.path), f.path
LIMIT %(k)s"""
# Files whose path the query spells out (a stack frame, a module path, a file name).
FILE_PATHS_LIKE = """
SELECT path FROM tree_files(%(tree)s)
WHERE repo_id = ANY(%(visible)s::int[]) AND path LIKE ANY(%(patterns)s)
ORDER BY path
LIMIT %(k)s"""

# --- snapshots (codenav.snapshot) ----------------------------------------------------------
# A snapshot is one binary COPY per section. Export reads the trees in %(trees)s (those of
# the repositories asked for, among those the caller sees, or one ref's) in one REPEATABLE
# READ transaction. Surrogate ids travel as they are (the archive's own keys: src ids);
# import stages each section in a temporary table of the same columns and types, then
# merges by content address (contents by sha, language and chunker; chunks by content and
# ord; vectors by model name and text hash), remapping every id, in one transaction.
SNAPSHOT_READ_ONLY = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
SNAPSHOT_REPOS = """
SELECT r.id, r.name, t.name, r.root, r.index_enabled, r.source, r.default_ref, r.follow, r.keep
FROM repos r JOIN teams t ON t.id = r.team_id
WHERE r.id = ANY(%(visible)s::int[]) ORDER BY r.id"""
# Every tree of the repositories (the ready ones, and the working trees); never a
# developer's overlay.
SNAPSHOT_TREE_IDS = """
SELECT id FROM trees WHERE repo_id = ANY(%(visible)s::int[]) AND (ready OR kind = 'worktree')
  AND kind <> 'overlay'
ORDER BY id"""
# A tree and the tree its graph is layered on.
SNAPSHOT_TREE_WITH_BASE = "SELECT id, base_id, mid_id FROM trees WHERE id = %s"
SNAPSHOT_TREE_LIST = """
SELECT t.id, r.name, t.kind, t.commit, t.indexed_at,
       coalesce((SELECT array_agg(rr.name ORDER BY rr.name) FROM repo_refs rr
                 WHERE rr.tree_id = t.id), '{}')
FROM trees t JOIN repos r ON r.id = t.repo_id
WHERE t.id = ANY(%(trees)s::int[]) AND t.repo_id = ANY(%(visible)s::int[]) ORDER BY t.id"""
SNAPSHOT_MODELS = """
SELECT m.id, m.name, m.dim FROM embed_models m
WHERE EXISTS (SELECT 1 FROM files f JOIN chunks c ON c.content_id = f.content_id
              JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path
              JOIN embeddings e ON e.text_hash = ct.text_hash AND e.model_id = m.id
              WHERE f.tree_id = ANY(%(trees)s::int[]))
ORDER BY m.id"""
# (section, the columns and their types): the staging table of a section has exactly the
# columns its export writes, in order, so a binary COPY reads back what it wrote.
SNAPSHOT_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "contents": (("src_id", "bigint"), ("sha", "text"), ("language", "text"),
                 ("chunker", "integer"), ("size", "bigint"), ("line_count", "integer"),
                 ("body", "text"), ("imports", "text[]"), ("parse_error", "text"),
                 ("facts_pending", "boolean"), ("redactions", "jsonb")),
    "chunks": (("src_id", "bigint"), ("content_src", "bigint"), ("ord", "integer"),
               ("kind", "text"), ("symbol", "text"), ("parent", "text"), ("signature", "text"),
               ("doc", "text"), ("exported", "boolean"), ("start_line", "integer"),
               ("end_line", "integer"), ("part", "integer"), ("body", "text"),
               ("n_terms", "integer"), ("tsv", "tsvector")),
    "symbols": (("content_src", "bigint"), ("ord", "integer"), ("name", "text"),
                ("qualname", "text"), ("kind", "text"), ("parent", "text"), ("depth", "integer"),
                ("start_line", "integer"), ("end_line", "integer"), ("signature", "text"),
                ("doc", "text"), ("exported", "boolean"), ("bases", "text[]")),
    "refs": (("content_src", "bigint"), ("ord", "integer"), ("kind", "text"), ("name", "text"),
             ("qualifier", "text"), ("alias", "text"), ("line", "integer"), ("scope", "text")),
    "file_terms": (("term", "text"), ("content_src", "bigint"), ("tf", "integer")),
    "trees": (("src_id", "integer"), ("repo_src", "integer"), ("kind", "text"),
              ("commit", "text"), ("base_src", "integer"), ("mid_src", "integer"),
              ("ready", "boolean"),
              ("created_at", "timestamptz"), ("indexed_at", "timestamptz"),
              ("gitignored", "integer")),
    "repo_refs": (("repo_src", "integer"), ("name", "text"), ("tree_src", "integer"),
                  ("commit", "text"), ("moved_at", "timestamptz"), ("moved_by", "text")),
    "ref_history": (("repo_src", "integer"), ("name", "text"), ("tree_src", "integer"),
                    ("commit", "text"), ("moved_at", "timestamptz")),
    "files": (("tree_src", "integer"), ("path", "text"), ("content_src", "bigint"),
              ("sha", "text"), ("language", "text"), ("size", "bigint"), ("mtime_ns", "bigint"),
              ("path_tsv", "tsvector"), ("indexed_at", "timestamptz")),
    "skipped": (("tree_src", "integer"), ("path", "text"), ("reason", "text"),
                ("detail", "text"), ("size", "bigint"), ("mtime_ns", "bigint")),
    "graph_imports": (("tree_src", "integer"), ("src_path", "text"), ("ord", "integer"),
                      ("spec", "text"), ("line", "integer"), ("dst_path", "text")),
    "graph_edges": (("tree_src", "integer"), ("src_path", "text"), ("ord", "integer"),
                    ("line", "integer"), ("src_scope", "text"), ("kind", "text"),
                    ("dst_path", "text"), ("dst_qual", "text"), ("verified", "boolean"),
                    ("how", "text")),
    "graph_links": (("tree_src", "integer"), ("src_path", "text"), ("dst_path", "text"),
                    ("imports", "integer"), ("refs", "integer")),
    "graph_layer": (("tree_src", "integer"), ("path", "text")),
    "file_layer": (("tree_src", "integer"), ("path", "text")),
    "graph_files": (("tree_src", "integer"), ("path", "text"), ("rank", "double precision"),
                    ("prior", "double precision"), ("imported_by", "integer")),
    "graph_state": (("tree_src", "integer"), ("version", "integer"), ("built_at", "timestamptz"),
                    ("full_build", "boolean"), ("files_resolved", "integer"),
                    ("seconds", "double precision")),
    "embeddings": (("model_src", "integer"), ("text_hash", "bytea"), ("vec", "vector")),
    "vectors": (("text_hash", "bytea"), ("vec", "vector"), ("body", "text")),
    "chunk_texts": (("chunk_src", "bigint"), ("path", "text"), ("text_hash", "bytea")),
}
_IN_TREES = "(SELECT f.content_id FROM files f WHERE f.tree_id = ANY(%(trees)s::int[]))"
SNAPSHOT_EXPORT: dict[str, str] = {
    "contents": """
COPY (SELECT c.id, c.sha, c.language, c.chunker, c.size, c.line_count, c.body, c.imports,
             c.parse_error,
             EXISTS (SELECT 1 FROM pending_facts p WHERE p.content_id = c.id), c.redactions
      FROM contents c WHERE c.id IN @IN@ ORDER BY c.id) TO STDOUT (FORMAT binary)""",
    "chunks": """
COPY (SELECT c.id, c.content_id, c.ord, c.kind, c.symbol, c.parent, c.signature, c.doc,
             c.exported, c.start_line, c.end_line, c.part, c.body, c.n_terms, c.tsv
      FROM chunks c WHERE c.content_id IN @IN@) TO STDOUT (FORMAT binary)""",
    "symbols": """
COPY (SELECT s.content_id, s.ord, s.name, s.qualname, s.kind, s.parent, s.depth, s.start_line,
             s.end_line, s.signature, s.doc, s.exported, s.bases
      FROM symbols s WHERE s.content_id IN @IN@) TO STDOUT (FORMAT binary)""",
    "refs": """
COPY (SELECT r.content_id, r.ord, r.kind, r.name, r.qualifier, r.alias, r.line, r.scope
      FROM refs r WHERE r.content_id IN @IN@) TO STDOUT (FORMAT binary)""",
    "file_terms": """
COPY (SELECT t.term, t.content_id, t.tf
      FROM file_terms t WHERE t.content_id IN @IN@) TO STDOUT (FORMAT binary)""",
    "trees": """
COPY (SELECT t.id, t.repo_id, t.kind, t.commit, t.base_id, t.mid_id, t.ready, t.created_at,
             t.indexed_at, t.gitignored
      FROM trees t WHERE t.id = ANY(%(trees)s::int[]) ORDER BY t.id) TO STDOUT (FORMAT binary)""",
    "repo_refs": """
COPY (SELECT rr.repo_id, rr.name, rr.tree_id, rr.commit, rr.moved_at, rr.moved_by
      FROM repo_refs rr WHERE rr.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "ref_history": """
COPY (SELECT h.repo_id, h.name, h.tree_id, h.commit, h.moved_at
      FROM ref_history h WHERE h.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "files": """
COPY (SELECT f.tree_id, f.path, f.content_id, f.sha, f.language, f.size, f.mtime_ns, f.path_tsv,
             f.indexed_at
      FROM files f WHERE f.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "skipped": """
COPY (SELECT s.tree_id, s.path, s.reason, s.detail, s.size, s.mtime_ns
      FROM skipped s WHERE s.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "graph_imports": """
COPY (SELECT g.tree_id, g.src_path, g.ord, g.spec, g.line, g.dst_path
      FROM graph_imports g WHERE g.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "graph_edges": """
COPY (SELECT g.tree_id, g.src_path, g.ord, g.line, g.src_scope, g.kind, g.dst_path, g.dst_qual,
             g.verified, g.how
      FROM graph_edges g WHERE g.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "graph_links": """
COPY (SELECT g.tree_id, g.src_path, g.dst_path, g.imports, g.refs
      FROM graph_links g WHERE g.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "graph_layer": """
COPY (SELECT g.tree_id, g.path
      FROM graph_layer g WHERE g.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "file_layer": """
COPY (SELECT g.tree_id, g.path
      FROM file_layer g WHERE g.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "graph_files": """
COPY (SELECT g.tree_id, g.path, g.rank, g.prior, g.imported_by
      FROM graph_files g WHERE g.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    "graph_state": """
COPY (SELECT g.tree_id, g.version, g.built_at, g.full_build, g.files_resolved, g.seconds
      FROM graph_state g WHERE g.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
    # the vectors the trees' chunks are embedded as (one row per model and text)
    "embeddings": """
COPY (SELECT e.model_id, e.text_hash, e.vec FROM embeddings e
      WHERE e.text_hash IN (SELECT ct.text_hash FROM files f
                            JOIN chunks c ON c.content_id = f.content_id
                            JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path
                            WHERE f.tree_id = ANY(%(trees)s::int[]))) TO STDOUT (FORMAT binary)""",
    "chunk_texts": """
COPY (SELECT DISTINCT ct.chunk_id, ct.path, ct.text_hash FROM files f
      JOIN chunks c ON c.content_id = f.content_id
      JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path
      WHERE f.tree_id = ANY(%(trees)s::int[])) TO STDOUT (FORMAT binary)""",
}
SNAPSHOT_EXPORT_TEMPLATE = dict(SNAPSHOT_EXPORT)
"""The export statements with ``@IN@`` where the content ids they cover go."""
SNAPSHOT_EXPORT = {k: v.replace("@IN@", _IN_TREES) for k, v in SNAPSHOT_EXPORT.items()}
SNAPSHOT_SECTIONS = tuple(SNAPSHOT_EXPORT)
"""Sections in the order they are written and read."""
def snapshot_stage_create(section: str) -> sql.Composed:
    """The temporary staging table of a section (dropped at commit)."""
    columns = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(kind))  # kinds: constants above
        for name, kind in SNAPSHOT_COLUMNS[section])
    return sql.SQL("CREATE TEMP TABLE {} ({}) ON COMMIT DROP").format(
        sql.Identifier(f"snap_{section}"), columns)


def snapshot_stage_copy(section: str) -> sql.Composed:
    return sql.SQL("COPY {} FROM STDIN (FORMAT binary)").format(
        sql.Identifier(f"snap_{section}"))


def snapshot_stage_count(section: str) -> sql.Composed:
    return sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(f"snap_{section}"))


# The bulk path of an import into empty tables: their secondary indexes (not those behind a
# primary key or unique constraint) are dropped before the merge and built again after it,
# in the same transaction: one sorted build instead of a million index insertions. The
# definitions come from the catalog (pg_get_indexdef), never from input.
SNAPSHOT_SECONDARY_INDEXES = """
SELECT ic.relname, pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class tc ON tc.oid = i.indrelid
JOIN pg_namespace n ON n.oid = tc.relnamespace AND n.nspname = current_schema()
WHERE tc.relname = ANY(%s)
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
ORDER BY ic.relname"""
SNAPSHOT_BULK_MEMORY = "SET LOCAL maintenance_work_mem = '512MB'"
# ...and their foreign keys: re-adding one checks every row in one join, where a kept one
# checks each inserted row on its own (a million lookups for refs or file_terms).
SNAPSHOT_FOREIGN_KEYS = """
SELECT tc.relname, k.conname, pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN pg_class tc ON tc.oid = k.conrelid
JOIN pg_namespace n ON n.oid = tc.relnamespace AND n.nspname = current_schema()
WHERE k.contype = 'f' AND tc.relname = ANY(%s)
ORDER BY tc.relname, k.conname"""


def snapshot_drop_constraint(table: str, name: str) -> sql.Composed:
    return sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(sql.Identifier(table),
                                                               sql.Identifier(name))


def snapshot_add_constraint(table: str, name: str, definition: str) -> sql.Composed:
    """``definition``: the catalog's own text (pg_get_constraintdef) of a dropped key."""
    return sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} {}").format(
        sql.Identifier(table), sql.Identifier(name), sql.SQL(definition))


def snapshot_drop_index(name: str) -> sql.Composed:
    return sql.SQL("DROP INDEX {}").format(sql.Identifier(name))


def snapshot_table_has_rows(table: str) -> sql.Composed:
    return sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(table))


# A team admin's import keeps only contents whose body hashes to their address (the store
# shares contents between teams by address: a forged body must never reach another team).
SNAPSHOT_STAGED_BODIES = "SELECT src_id, sha, body, redactions = '[]'::jsonb FROM snap_contents"
SNAPSHOT_STAGED_DROP = "DELETE FROM snap_contents WHERE src_id = ANY(%s)"
SNAPSHOT_SESSION = "SET temp_buffers = '256MB'"
SNAPSHOT_SYNC_OFF = "SET LOCAL synchronous_commit = off"
SNAPSHOT_MAPS_CREATE = """
CREATE TEMP TABLE snap_repo_map (src_id integer PRIMARY KEY, id integer NOT NULL) ON COMMIT DROP;
CREATE TEMP TABLE snap_tree_map (src_id integer PRIMARY KEY, id integer NOT NULL) ON COMMIT DROP;
CREATE TEMP TABLE snap_model_map (src_id integer PRIMARY KEY, id integer NOT NULL) ON COMMIT DROP;
CREATE TEMP TABLE snap_new (src_id bigint PRIMARY KEY, id bigint NOT NULL) ON COMMIT DROP;
CREATE TEMP TABLE snap_content_map (src_id bigint PRIMARY KEY, id bigint NOT NULL) ON COMMIT DROP;
CREATE TEMP TABLE snap_chunk_map (src_id bigint PRIMARY KEY, id bigint NOT NULL) ON COMMIT DROP"""
SNAPSHOT_ANALYZE_STAGE = "ANALYZE snap_contents, snap_chunks, snap_files, snap_chunk_texts, snap_embeddings"
SNAPSHOT_REPO_FIND = "SELECT id, root FROM repos WHERE team_id = %s AND name = %s"
SNAPSHOT_REPO_INSERT = """
INSERT INTO repos (name, root, team_id, index_enabled, source, default_ref, follow, keep)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"""
SNAPSHOT_REPO_UPDATE = """
UPDATE repos SET root = %s, source = %s, default_ref = %s, follow = %s, keep = %s WHERE id = %s"""
SNAPSHOT_REPO_MAP = "INSERT INTO snap_repo_map (src_id, id) VALUES (%s, %s)"
# A repository of the same name is replaced: its trees (file lists, skips, graphs) and refs
# go, atomically with the import.
SNAPSHOT_REPO_UNREF = "DELETE FROM repo_refs WHERE repo_id = %s"
SNAPSHOT_REPO_UNHISTORY = "DELETE FROM ref_history WHERE repo_id = %s"
SNAPSHOT_REPO_UNLAYER = "UPDATE trees SET base_id = NULL WHERE repo_id = %s"
SNAPSHOT_REPO_CLEAR = "DELETE FROM trees WHERE repo_id = %s"
SNAPSHOT_MODEL_MAP = "INSERT INTO snap_model_map (src_id, id) VALUES (%s, %s)"
# After a merge's insert of contents (``ins``): the snapshot's ids mapped to the new ones,
# and the contents whose graph facts the snapshot left for later marked so here too.
_MERGED_CONTENTS = """,
  new AS MATERIALIZED (
    SELECT s.src_id, ins.id, s.facts_pending FROM ins
    JOIN snap_contents s ON s.sha = ins.sha AND s.language = ins.language
      AND s.chunker = ins.chunker),
  pending AS (INSERT INTO pending_facts (content_id) SELECT id FROM new WHERE facts_pending)
INSERT INTO snap_new (src_id, id) SELECT src_id, id FROM new"""
SNAPSHOT_MERGE_CONTENTS = """
WITH ins AS (
    INSERT INTO contents (sha, language, chunker, size, line_count, body, imports, parse_error,
                          redactions)
    SELECT sha, language, chunker, size, line_count, body, imports, parse_error, redactions
    FROM snap_contents
    ON CONFLICT (sha, language, chunker, (coalesce(origin_team, 0))) DO NOTHING
    RETURNING id, sha, language, chunker)@MERGED@""".replace("@MERGED@", _MERGED_CONTENTS)
SNAPSHOT_MAP_CONTENTS = """
INSERT INTO snap_content_map (src_id, id)
SELECT s.src_id, c.id FROM snap_contents s
JOIN contents c ON c.sha = s.sha AND c.language = s.language AND c.chunker = s.chunker
  AND c.origin_team IS NULL"""
# Rows per content go in only for contents this import created: a content the store had
# already holds the same rows (same address, same chunker). ``tsv || ''`` is a fresh copy,
# stored uncompressed as chunks.tsv is (the staged value may be compressed, and a value
# inserted as it is keeps its compression).
SNAPSHOT_MERGE_CHUNKS = """
INSERT INTO chunks (content_id, ord, kind, symbol, parent, signature, doc, exported, start_line,
                    end_line, part, body, n_terms, tsv)
SELECT n.id, s.ord, s.kind, s.symbol, s.parent, s.signature, s.doc, s.exported, s.start_line,
       s.end_line, s.part, s.body, s.n_terms, s.tsv || ''::tsvector
FROM snap_chunks s JOIN snap_new n ON n.src_id = s.content_src"""
SNAPSHOT_MAP_CHUNKS = """
INSERT INTO snap_chunk_map (src_id, id)
SELECT s.src_id, c.id FROM snap_chunks s
JOIN snap_content_map m ON m.src_id = s.content_src
JOIN chunks c ON c.content_id = m.id AND c.ord = s.ord"""
SNAPSHOT_MERGE_SYMBOLS = """
INSERT INTO symbols (content_id, ord, name, qualname, kind, parent, depth, start_line, end_line,
                     signature, doc, exported, bases)
SELECT n.id, s.ord, s.name, s.qualname, s.kind, s.parent, s.depth, s.start_line, s.end_line,
       s.signature, s.doc, s.exported, s.bases
FROM snap_symbols s JOIN snap_new n ON n.src_id = s.content_src"""
SNAPSHOT_MERGE_REFS = """
INSERT INTO refs (content_id, ord, kind, name, qualifier, alias, line, scope)
SELECT n.id, s.ord, s.kind, s.name, s.qualifier, s.alias, s.line, s.scope
FROM snap_refs s JOIN snap_new n ON n.src_id = s.content_src"""
SNAPSHOT_MERGE_FILE_TERMS = """
INSERT INTO file_terms (term, content_id, tf)
SELECT s.term, n.id, s.tf FROM snap_file_terms s JOIN snap_new n ON n.src_id = s.content_src
ORDER BY s.term, n.id"""
# Trees get their ids first (their bases are trees of the same archive).
SNAPSHOT_MAP_TREES = """
INSERT INTO snap_tree_map (src_id, id)
SELECT s.src_id, nextval(pg_get_serial_sequence('trees', 'id')) FROM snap_trees s
JOIN snap_repo_map r ON r.src_id = s.repo_src"""
SNAPSHOT_MERGE_TREES = """
INSERT INTO trees (id, repo_id, kind, commit, base_id, mid_id, ready, created_at, indexed_at,
                   gitignored)
SELECT m.id, r.id, s.kind, s.commit, b.id, d.id, s.ready, s.created_at, s.indexed_at,
       s.gitignored
FROM snap_trees s JOIN snap_tree_map m ON m.src_id = s.src_id
JOIN snap_repo_map r ON r.src_id = s.repo_src
LEFT JOIN snap_tree_map b ON b.src_id = s.base_src
LEFT JOIN snap_tree_map d ON d.src_id = s.mid_src
ORDER BY s.base_src IS NOT NULL, s.mid_src IS NOT NULL, s.src_id"""
SNAPSHOT_MERGE_REPO_REFS = """
INSERT INTO repo_refs (repo_id, name, tree_id, commit, moved_at, moved_by)
SELECT r.id, s.name, m.id, s.commit, s.moved_at, s.moved_by
FROM snap_repo_refs s JOIN snap_repo_map r ON r.src_id = s.repo_src
JOIN snap_tree_map m ON m.src_id = s.tree_src"""
SNAPSHOT_MERGE_REF_HISTORY = """
INSERT INTO ref_history (repo_id, name, tree_id, commit, moved_at)
SELECT r.id, s.name, m.id, s.commit, s.moved_at
FROM snap_ref_history s JOIN snap_repo_map r ON r.src_id = s.repo_src
JOIN snap_tree_map m ON m.src_id = s.tree_src"""
SNAPSHOT_MERGE_FILES = """
INSERT INTO files (repo_id, tree_id, path, content_id, sha, language, size, mtime_ns, path_tsv,
                   indexed_at)
SELECT t.repo_id, t.id, s.path, m.id, s.sha, s.language, s.size, s.mtime_ns, s.path_tsv,
       s.indexed_at
FROM snap_files s JOIN snap_tree_map tm ON tm.src_id = s.tree_src JOIN trees t ON t.id = tm.id
JOIN snap_content_map m ON m.src_id = s.content_src"""


def _tree_rows(table: str, columns: str) -> str:
    """Merge a per-tree table's snapshot rows, each moved to its tree's id in this store."""
    cols = columns.split(", ")
    return (f"INSERT INTO {table} (repo_id, tree_id, {columns})\n"
            f"SELECT t.repo_id, t.id, {', '.join('s.' + c for c in cols)}\n"
            f"FROM snap_{table} s JOIN snap_tree_map tm ON tm.src_id = s.tree_src\n"
            "JOIN trees t ON t.id = tm.id")


def _layer_rows(table: str) -> str:
    """Merge a layer's snapshot rows (the paths a layered tree replaces)."""
    return (f"INSERT INTO {table} (tree_id, path)\n"
            f"SELECT tm.id, s.path FROM snap_{table} s "
            "JOIN snap_tree_map tm ON tm.src_id = s.tree_src")


SNAPSHOT_MERGE_SKIPPED = _tree_rows("skipped", "path, reason, detail, size, mtime_ns")
SNAPSHOT_MERGE_GRAPH_IMPORTS = _tree_rows("graph_imports", "src_path, ord, spec, line, dst_path")
SNAPSHOT_MERGE_GRAPH_EDGES = _tree_rows(
    "graph_edges", "src_path, ord, line, src_scope, kind, dst_path, dst_qual, verified, how")
SNAPSHOT_MERGE_GRAPH_LINKS = _tree_rows("graph_links", "src_path, dst_path, imports, refs")
SNAPSHOT_MERGE_GRAPH_LAYER = _layer_rows("graph_layer")
SNAPSHOT_MERGE_GRAPH_FILES = _tree_rows("graph_files", "path, rank, prior, imported_by")
SNAPSHOT_MERGE_FILE_LAYER = _layer_rows("file_layer")
SNAPSHOT_MERGE_GRAPH_STATE = _tree_rows(
    "graph_state", "version, built_at, full_build, files_resolved, seconds")
SNAPSHOT_MERGE_EMBEDDINGS = """
INSERT INTO embeddings (model_id, text_hash, vec)
SELECT m.id, s.text_hash, s.vec FROM snap_embeddings s JOIN snap_model_map m ON m.src_id = s.model_src
ON CONFLICT (model_id, text_hash) DO NOTHING"""
SNAPSHOT_MERGE_CHUNK_TEXTS = """
INSERT INTO chunk_texts (chunk_id, path, text_hash)
SELECT c.id, s.path, s.text_hash
FROM snap_chunk_texts s JOIN snap_chunk_map c ON c.src_id = s.chunk_src
ON CONFLICT DO NOTHING"""
SNAPSHOT_MERGE: tuple[tuple[str, str], ...] = (
    ("contents", SNAPSHOT_MERGE_CONTENTS), ("content_map", SNAPSHOT_MAP_CONTENTS),
    ("chunks", SNAPSHOT_MERGE_CHUNKS), ("chunk_map", SNAPSHOT_MAP_CHUNKS),
    ("symbols", SNAPSHOT_MERGE_SYMBOLS), ("refs", SNAPSHOT_MERGE_REFS),
    ("file_terms", SNAPSHOT_MERGE_FILE_TERMS), ("tree_map", SNAPSHOT_MAP_TREES),
    ("trees", SNAPSHOT_MERGE_TREES), ("repo_refs", SNAPSHOT_MERGE_REPO_REFS),
    ("ref_history", SNAPSHOT_MERGE_REF_HISTORY), ("files", SNAPSHOT_MERGE_FILES),
    ("skipped", SNAPSHOT_MERGE_SKIPPED), ("graph_imports", SNAPSHOT_MERGE_GRAPH_IMPORTS),
    ("graph_edges", SNAPSHOT_MERGE_GRAPH_EDGES), ("graph_links", SNAPSHOT_MERGE_GRAPH_LINKS),
    ("graph_layer", SNAPSHOT_MERGE_GRAPH_LAYER), ("file_layer", SNAPSHOT_MERGE_FILE_LAYER),
    ("graph_files", SNAPSHOT_MERGE_GRAPH_FILES), ("graph_state", SNAPSHOT_MERGE_GRAPH_STATE),
    ("embeddings", SNAPSHOT_MERGE_EMBEDDINGS), ("chunk_texts", SNAPSHOT_MERGE_CHUNK_TEXTS),
)
"""The merge, in order (each name: the table it fills, and how many rows went in)."""
SNAPSHOT_TABLES = ("repos", "trees", "repo_refs", "ref_history", "contents", "chunks",
                   "symbols", "refs", "file_terms", "files", "skipped", "graph_imports",
                   "graph_edges", "graph_links", "graph_layer", "file_layer", "graph_files",
                   "graph_state",
                   "embed_models", "embeddings", "chunk_texts")
"""The columns of SNAPSHOT_TABLE_COUNTS, in order."""
SNAPSHOT_TABLE_COUNTS = """
SELECT (SELECT count(*) FROM repos), (SELECT count(*) FROM trees), (SELECT count(*) FROM repo_refs),
       (SELECT count(*) FROM ref_history), (SELECT count(*) FROM contents),
       (SELECT count(*) FROM chunks), (SELECT count(*) FROM symbols), (SELECT count(*) FROM refs),
       (SELECT count(*) FROM file_terms), (SELECT count(*) FROM files),
       (SELECT count(*) FROM skipped), (SELECT count(*) FROM graph_imports),
       (SELECT count(*) FROM graph_edges), (SELECT count(*) FROM graph_links),
       (SELECT count(*) FROM graph_layer), (SELECT count(*) FROM file_layer),
       (SELECT count(*) FROM graph_files),
       (SELECT count(*) FROM graph_state), (SELECT count(*) FROM embed_models),
       (SELECT count(*) FROM embeddings), (SELECT count(*) FROM chunk_texts)"""

# --- CI publishing (codenav.publish) -----------------------------------------------------
# A CI job's local store writes a bundle of the contents the server lacks, with the same
# sections (and columns) a snapshot has for them; the server stages them like a snapshot's
# and merges them as the uploading team's own (origin_team): found by address only for it.
PUBLISH_EXPORT: dict[str, str] = {
    section: SNAPSHOT_EXPORT_TEMPLATE[section].replace("@IN@", "(SELECT unnest(%(contents)s::bigint[]))")
    for section in ("contents", "chunks", "symbols", "refs", "file_terms")}
# ...and the vectors of some texts (one model), each with its text: the server checks every
# text against its hash and embeds a sample itself before it keeps any.
PUBLISH_EXPORT["vectors"] = """
COPY (SELECT DISTINCT ON (ct.text_hash) ct.text_hash, e.vec, @EMBED_TEXT@
      FROM chunk_texts ct JOIN chunks c ON c.id = ct.chunk_id
      JOIN embeddings e ON e.text_hash = ct.text_hash AND e.model_id = %(model)s
      CROSS JOIN LATERAL (SELECT ct.path) AS f(path)
      WHERE ct.text_hash = ANY(%(hashes)s::bytea[])
      ORDER BY ct.text_hash) TO STDOUT (FORMAT binary)""".replace("@EMBED_TEXT@", EMBED_TEXT)
PUBLISH_SECTIONS = tuple(PUBLISH_EXPORT)
# The local store of a CI job: the texts of a tree that have a vector of a model.
PUBLISH_VECTOR_KEYS = """
SELECT DISTINCT ct.text_hash FROM tree_files(%(tree)s) f
JOIN chunks c ON c.content_id = f.content_id
JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path
JOIN embeddings e ON e.model_id = %(model)s AND e.text_hash = ct.text_hash"""
# The server: which of some texts it holds a vector of (for a model by name).
PUBLISH_VECTORS_PRESENT = """
SELECT e.text_hash FROM embeddings e JOIN embed_models m ON m.id = e.model_id
WHERE m.name = %(model)s AND e.text_hash = ANY(%(hashes)s::bytea[])"""
PUBLISH_STAGED_VECTORS = "SELECT count(*) FROM snap_vectors"
# Every staged vector's text must hash to its key, and be of the model's dimension.
PUBLISH_VECTORS_BAD = """
SELECT count(*) FROM snap_vectors
WHERE sha256(convert_to(body, 'UTF8')) <> text_hash OR vector_dims(vec) <> %(dim)s"""
PUBLISH_VECTORS_SAMPLE = """
SELECT body, vec::text FROM snap_vectors ORDER BY random() LIMIT %(k)s"""
PUBLISH_MERGE_VECTORS = """
INSERT INTO embeddings (model_id, text_hash, vec)
SELECT %(model)s, text_hash, vec FROM snap_vectors
ON CONFLICT (model_id, text_hash) DO NOTHING"""
# Which of some addresses (sha and language, as arrays) the team finds: shared contents, or
# its own uploads.
PUBLISH_PRESENT = """
SELECT DISTINCT g.sha, g.language FROM unnest(%(shas)s::text[], %(languages)s::text[]) AS g(sha, language)
JOIN contents c ON c.sha = g.sha AND c.language = g.language AND c.chunker = %(chunker)s
  AND (c.origin_team IS NULL OR c.origin_team = %(team)s)"""
# Every staged content must be of this server's chunker, a git blob id and a plausible size.
PUBLISH_STAGED_BAD = """
SELECT count(*) FROM snap_contents
WHERE chunker <> %(chunker)s OR sha !~ '^[0-9a-f]{40}$' OR size < 0 OR size > %(max_bytes)s
   OR length(body) > %(max_bytes)s OR jsonb_typeof(redactions) <> 'array'"""
PUBLISH_STAGED_ORPHANS = """
SELECT (SELECT count(*) FROM snap_chunks s WHERE NOT EXISTS (
            SELECT 1 FROM snap_contents c WHERE c.src_id = s.content_src))
     + (SELECT count(*) FROM snap_symbols s WHERE NOT EXISTS (
            SELECT 1 FROM snap_contents c WHERE c.src_id = s.content_src))"""
PUBLISH_MAPS_CREATE = """
CREATE TEMP TABLE snap_new (src_id bigint PRIMARY KEY, id bigint NOT NULL) ON COMMIT DROP"""
PUBLISH_MERGE_CONTENTS = """
WITH ins AS (
    INSERT INTO contents (sha, language, chunker, size, line_count, body, imports, parse_error,
                          redactions, origin_team)
    SELECT sha, language, chunker, size, line_count, body, imports, parse_error, redactions, %(team)s
    FROM snap_contents
    ON CONFLICT (sha, language, chunker, (coalesce(origin_team, 0))) DO NOTHING
    RETURNING id, sha, language, chunker)@MERGED@""".replace("@MERGED@", _MERGED_CONTENTS)
PUBLISH_MERGE: tuple[tuple[str, str], ...] = (
    ("contents", PUBLISH_MERGE_CONTENTS), ("chunks", SNAPSHOT_MERGE_CHUNKS),
    ("symbols", SNAPSHOT_MERGE_SYMBOLS), ("refs", SNAPSHOT_MERGE_REFS),
    ("file_terms", SNAPSHOT_MERGE_FILE_TERMS))
# The content ids a published tree's files point at (shared first, else the team's own).
PUBLISH_CONTENT_IDS = """
SELECT DISTINCT ON (c.sha, c.language) c.sha, c.language, c.id
FROM unnest(%(shas)s::text[], %(languages)s::text[]) AS g(sha, language)
JOIN contents c ON c.sha = g.sha AND c.language = g.language AND c.chunker = %(chunker)s
  AND (c.origin_team IS NULL OR c.origin_team = %(team)s)
ORDER BY c.sha, c.language, c.origin_team NULLS FIRST"""
# The local store of a CI job: the files of the tree it indexed, with their contents.
PUBLISH_TREE_FILES = """
SELECT f.path, f.sha, f.language, f.size, f.content_id, length(c.body)
FROM tree_files(%s) f JOIN contents c ON c.id = f.content_id ORDER BY f.path"""
PUBLISH_TREE_SKIPS = "SELECT path, reason, detail, size FROM skipped WHERE tree_id = %s ORDER BY path"
PUBLISH_TREE_GITIGNORED = "SELECT gitignored FROM trees WHERE id = %s"

# --- overlays: a developer's uncommitted edits (codenav.overlays) ------------------------
# The trees an overlay may be based on: the ready commit trees (or working trees) of the
# caller's repositories at one of the commits the adapter named.
OVERLAY_BASES = """
SELECT t.id, t.kind, t.commit, t.repo_id,
       (SELECT min(rr.name) FROM repo_refs rr WHERE rr.tree_id = t.id)
FROM trees t
WHERE t.repo_id = ANY(%(visible)s::int[]) AND (%(repo)s::int IS NULL OR t.repo_id = %(repo)s)
  AND t.kind IN ('commit', 'worktree') AND (t.ready OR t.kind = 'worktree')
  AND t.commit = ANY(%(commits)s::text[])
ORDER BY t.kind = 'commit' DESC, t.id DESC"""
OVERLAY_TREE_INSERT = """
INSERT INTO trees (repo_id, kind, commit, ready)
SELECT %(repo)s, 'overlay', %(commit)s, false WHERE %(repo)s = ANY(%(visible)s::int[])
RETURNING id"""
OVERLAY_INSERT = """
INSERT INTO overlays (id, repo_id, token_id, base_tree, base_ref, tree_id, checkout,
                      base_version)
SELECT %(id)s, %(repo)s, %(token)s, %(base)s, %(ref)s, %(tree)s, %(checkout)s, b.files_version
FROM trees b WHERE b.id = %(base)s AND b.repo_id = ANY(%(visible)s::int[])"""
# An overlay as its owner sees it (another token's is not found).
OVERLAY_GET = """
SELECT o.id, o.repo_id, o.tree_id, o.base_tree, o.base_ref, b.kind, b.commit, b.indexed_at,
       o.version, o.stored, o.graph, o.over_limit, o.checkout, o.touched_at,
       (SELECT count(*) FROM overlay_files x
        WHERE x.overlay_id = o.id AND x.skip IS NULL AND x.sha IS NOT NULL),
       (SELECT count(*) FROM overlay_files x WHERE x.overlay_id = o.id AND x.sha IS NULL)
FROM overlays o JOIN trees b ON b.id = o.base_tree
WHERE o.id = %(overlay)s AND o.token_id IS NOT DISTINCT FROM %(token)s
  AND o.repo_id = ANY(%(visible)s::int[])"""
OVERLAY_TOUCH = """
UPDATE overlays SET touched_at = now()
WHERE id = %(overlay)s AND repo_id = ANY(%(visible)s::int[])
  AND touched_at < now() - interval '30 seconds'"""
# The base tree's files and skipped paths: what the adapter compares its checkout with.
OVERLAY_BASE_FILES = """
SELECT f.path, f.sha FROM tree_files(%(tree)s) f
WHERE f.repo_id = ANY(%(visible)s::int[]) ORDER BY f.path"""
OVERLAY_BASE_SKIPPED = """
SELECT s.path FROM skipped s
WHERE s.tree_id = %(tree)s AND s.repo_id = ANY(%(visible)s::int[]) ORDER BY s.path"""
# The overlay's files (its owner's): path, blob (NULL: deleted), why it is not indexed.
OVERLAY_FILES = """
SELECT x.path, x.sha, x.skip FROM overlay_files x JOIN overlays o ON o.id = x.overlay_id
WHERE o.id = %(overlay)s AND o.repo_id = ANY(%(visible)s::int[]) ORDER BY x.path"""
OVERLAY_FILES_CLEAR = """
DELETE FROM overlay_files x USING overlays o
WHERE x.overlay_id = o.id AND o.id = %(overlay)s AND o.repo_id = ANY(%(visible)s::int[])"""
OVERLAY_FILES_INSERT = """
INSERT INTO overlay_files (overlay_id, path, sha)
SELECT o.id, f.path, f.sha FROM overlays o,
       unnest(%(paths)s::text[], %(shas)s::text[]) AS f (path, sha)
WHERE o.id = %(overlay)s AND o.repo_id = ANY(%(visible)s::int[])"""
OVERLAY_SENT = """
UPDATE overlays SET version = version + 1, over_limit = %(over)s, touched_at = now()
WHERE id = %(overlay)s AND repo_id = ANY(%(visible)s::int[]) RETURNING version"""
OVERLAY_PROGRESS = """
SELECT o.stored, o.graph, o.over_limit FROM overlays o
WHERE o.id = %(overlay)s AND o.repo_id = ANY(%(visible)s::int[])"""
OVERLAY_DROP = """
DELETE FROM overlays o
WHERE o.id = %(overlay)s AND o.token_id IS NOT DISTINCT FROM %(token)s
  AND o.repo_id = ANY(%(visible)s::int[])
RETURNING o.tree_id"""
OVERLAY_LIST = """
SELECT o.id, o.checkout, o.base_ref, b.commit, o.created_at, o.touched_at,
       (SELECT count(*) FROM overlay_files x
        WHERE x.overlay_id = o.id AND x.skip IS NULL AND x.sha IS NOT NULL),
       o.over_limit
FROM overlays o JOIN trees b ON b.id = o.base_tree
WHERE o.repo_id = %(repo)s AND o.repo_id = ANY(%(visible)s::int[])
  AND o.token_id IS NOT DISTINCT FROM %(token)s
ORDER BY o.touched_at DESC"""
# Blobs: which the team's uploads or contents hold already, uploading, and reading them.
OVERLAY_BLOBS_HELD = """
SELECT sha FROM overlay_blobs WHERE team_id = %(team)s AND sha = ANY(%(shas)s::text[])"""
OVERLAY_CONTENTS_HELD = """
SELECT DISTINCT sha, language FROM contents
WHERE chunker = %(chunker)s AND sha = ANY(%(shas)s::text[])
  AND (origin_team IS NULL OR origin_team = %(team)s)"""
OVERLAY_BLOB_PUT = """
INSERT INTO overlay_blobs (team_id, sha, data) VALUES (%s, %s, %s)
ON CONFLICT (team_id, sha) DO UPDATE SET created_at = now()"""
OVERLAY_BLOBS_GET = """
SELECT sha, data FROM overlay_blobs WHERE team_id = %s AND sha = ANY(%s::text[])"""
OVERLAY_BLOBS_DROP = "DELETE FROM overlay_blobs WHERE team_id = %s AND sha = ANY(%s::text[])"
OVERLAY_BLOBS_EXPIRE = "DELETE FROM overlay_blobs WHERE created_at < now() - interval '1 hour'"
# The overlay job (a worker, one overlay at a time under its lock).
OVERLAY_LOCK = "SELECT pg_advisory_lock(7248300, hashtext(%s))"
OVERLAY_TRY_LOCK = "SELECT pg_try_advisory_lock(7248300, hashtext(%s))"
OVERLAY_UNLOCK = "SELECT pg_advisory_unlock(7248300, hashtext(%s))"
OVERLAY_STATE = """
SELECT o.repo_id, o.tree_id, o.base_tree, o.version, o.stored, o.graph, o.base_version,
       o.over_limit, b.files_version, r.team_id
FROM overlays o JOIN trees b ON b.id = o.base_tree JOIN repos r ON r.id = o.repo_id
WHERE o.id = %s"""
OVERLAY_WANTED = "SELECT path, sha FROM overlay_files WHERE overlay_id = %s ORDER BY path"
OVERLAY_SKIPS = """
UPDATE overlay_files x SET skip = s.skip
FROM unnest(%s::text[], %s::text[]) AS s (path, skip)
WHERE x.overlay_id = %s AND x.path = s.path"""
SKIPPED_REASONS = "SELECT path, reason FROM skipped WHERE tree_id = %s AND path = ANY(%s)"
OVERLAY_VERSION = "SELECT version FROM overlays WHERE id = %s"
FILE_LAYER_PATHS = "SELECT path FROM file_layer WHERE tree_id = %s"
OVERLAY_OWN_FILES = "SELECT path FROM files WHERE tree_id = %s"
OVERLAY_STORED = "UPDATE overlays SET stored = %s, base_version = %s WHERE id = %s"
OVERLAY_GRAPHED = "UPDATE overlays SET graph = %s WHERE id = %s"
# Overlays of a repository with work left: a state not stored or not graphed yet, or a
# working-tree base that moved since.
OVERLAYS_PENDING = """
SELECT o.id FROM overlays o JOIN trees b ON b.id = o.base_tree
WHERE o.repo_id = %s
  AND (o.stored < o.version OR o.graph < o.version OR o.base_version <> b.files_version)
ORDER BY o.touched_at DESC"""
OVERLAYS_OF_REPO = "SELECT EXISTS (SELECT 1 FROM overlays WHERE repo_id = %s)"
OVERLAYS_EXPIRED = """
SELECT id FROM overlays WHERE touched_at < now() - make_interval(secs => %s)"""
OVERLAY_EXPIRE = "DELETE FROM overlays WHERE id = %s RETURNING tree_id, repo_id"

# --- statements that return no repository's rows to a caller -----------------------------
GLOBAL = frozenset({
    # session settings
    "SESSION_SETUP", "SESSION_PLANS", "SESSION_VECTOR_SETUP", "GREP_TIMEOUT", "LEXICAL_PLAN",
    "LEXICAL_PLAN_FILTERED",
    # corpus-wide ranking statistics (numbers that weigh terms; no row reaches an answer),
    # and whether the lexical ranker's corpus-wide candidates would pass its cap (a yes or
    # no that picks the ranking path)
    "STATS_CORPUS", "STATS_QUERY", "STATS_PENDING_DF", "STATS_CONTENTS", "STATS_CHUNK_COUNT",
    "CANDIDATES_OVER_CAP",
    # embedding models (names and dimensions)
    "EMBED_MODEL_GET", "EMBED_MODEL_NAMES", "EMBED_MODEL_INSERT",
    # tokens, teams and the audit trail: filtered by the caller's team (%(team)s) or by
    # the token's own hash
    "TOKEN_INSERT", "TOKEN_GRANT", "TOKEN_CHECK", "TOKEN_STATE", "TOKEN_LIST", "TOKEN_GET",
    "TOKEN_REVOKE", "TEAM_GET", "TEAM_INSERT", "TEAM_LIST", "AUDIT_INSERT", "AUDIT_LIST",
    "REPO_BY_TEAM_NAMES",
    # session locks (no row): an index run or an upload's merge holds them against the
    # garbage collector
    "WRITERS_SHARED_LOCK", "WRITERS_SHARED_UNLOCK", "WRITERS_SHARED_XACT_LOCK",
    # usage figures written (no row is returned)
    "USAGE_FLUSH",
    # the visible set itself: a token's team or grants
    "REPOS_VISIBLE",
    # snapshot import (codenav.snapshot): session settings, staging and merging an archive
    # into the store; they return ids of the rows they wrote, or counts, never a caller's rows
    "SNAPSHOT_READ_ONLY", "SNAPSHOT_SESSION", "SNAPSHOT_SYNC_OFF", "SNAPSHOT_MAPS_CREATE",
    "SNAPSHOT_ANALYZE_STAGE", "SNAPSHOT_REPO_FIND", "SNAPSHOT_REPO_INSERT",
    "SNAPSHOT_REPO_UPDATE", "SNAPSHOT_REPO_MAP", "SNAPSHOT_REPO_CLEAR", "SNAPSHOT_MODEL_MAP",
    "SNAPSHOT_REPO_UNREF", "SNAPSHOT_REPO_UNHISTORY", "SNAPSHOT_REPO_UNLAYER",
    "SNAPSHOT_MAP_TREES", "SNAPSHOT_MERGE_TREES", "SNAPSHOT_MERGE_REPO_REFS",
    "SNAPSHOT_MERGE_REF_HISTORY", "SNAPSHOT_MERGE_GRAPH_LAYER", "SNAPSHOT_MERGE_FILE_LAYER",
    # the tree a layered tree's graph reads through (its id came from a scoped statement)
    "SNAPSHOT_TREE_WITH_BASE",
    # CI publishing: addresses the team finds, staging checks and the merge of an upload
    "PUBLISH_PRESENT", "PUBLISH_STAGED_BAD", "PUBLISH_STAGED_ORPHANS", "PUBLISH_MAPS_CREATE",
    "PUBLISH_MERGE_CONTENTS", "PUBLISH_CONTENT_IDS", "PUBLISH_VECTORS_PRESENT",
    "PUBLISH_STAGED_VECTORS", "PUBLISH_VECTORS_BAD", "PUBLISH_VECTORS_SAMPLE",
    "PUBLISH_MERGE_VECTORS",
    # overlays: which blob addresses the team's uploads and contents hold (the caller names
    # the addresses; no repository's row), and keeping an upload checked against its id
    "OVERLAY_BLOBS_HELD", "OVERLAY_CONTENTS_HELD", "OVERLAY_BLOB_PUT",
    "SNAPSHOT_MERGE_CONTENTS", "SNAPSHOT_MAP_CONTENTS", "SNAPSHOT_MERGE_CHUNKS",
    "SNAPSHOT_MAP_CHUNKS", "SNAPSHOT_MERGE_SYMBOLS", "SNAPSHOT_MERGE_REFS",
    "SNAPSHOT_MERGE_FILE_TERMS", "SNAPSHOT_MERGE_FILES", "SNAPSHOT_MERGE_SKIPPED",
    "SNAPSHOT_MERGE_GRAPH_IMPORTS", "SNAPSHOT_MERGE_GRAPH_EDGES", "SNAPSHOT_MERGE_GRAPH_LINKS",
    "SNAPSHOT_MERGE_GRAPH_FILES", "SNAPSHOT_MERGE_GRAPH_STATE", "SNAPSHOT_MERGE_EMBEDDINGS",
    "SNAPSHOT_MERGE_CHUNK_TEXTS", "SNAPSHOT_TABLE_COUNTS", "SNAPSHOT_SECONDARY_INDEXES",
    "SNAPSHOT_BULK_MEMORY", "SNAPSHOT_FOREIGN_KEYS", "SNAPSHOT_STAGED_BODIES",
    "SNAPSHOT_STAGED_DROP",
})
"""Statements the query path may run without the visibility predicate, and why."""


# --- physical seeds (codenav snapshot export --physical, codenav up --seed) ---------------
# What a stopped store holds, for the seed's manifest; at the first start of a restored
# store, no credential or developer state of the store it came from stays usable.
SEED_REPOS = """
SELECT t.name || '/' || r.name, r.root, r.default_ref
FROM repos r JOIN teams t ON t.id = r.team_id ORDER BY r.id"""
SEED_MODELS = "SELECT name FROM embed_models ORDER BY id"
SEED_ADOPT_TOKENS = "UPDATE api_tokens SET revoked_at = now() WHERE revoked_at IS NULL"
SEED_ADOPT_OVERLAYS = "DELETE FROM overlays"
