-- 0010: refs. A repository holds trees, each a mapping path -> content:
--   worktree  its checkout on disk (at most one; mutable, reconciled as before),
--   commit    one git commit, read from git or published by CI (immutable once ready).
-- Named refs (branches, tags) point at commit trees; a followed ref keeps its last N trees
-- (ref_history). Every per-file row (files, skipped, the graph) belongs to one tree; what
-- hangs off contents (chunks, symbols, facts, terms, vectors) stays shared by address.
--
-- A commit tree may be layered on another tree (base_id, which holds all its own rows): it
-- holds itself only the file rows of the paths listed in file_layer (changed, added, or
-- deleted: listed with no row), the graph rows of the paths in graph_layer, and the ranks
-- that differ; every other row is the base's. Between the two may sit one more layered
-- tree (mid_id, layered on the same base): its rows come before the base's. So a branch's
-- commits each hold their changes since a recent commit, not since the base.
-- tree_ranks(t) here, and tree_files(t), tree_imports(t), tree_edges(t), tree_links(t) in
-- 0011 (which gives them their lasting form), read what a tree holds. A tree with no base
-- holds all of its rows itself.
CREATE TABLE trees (
    id serial PRIMARY KEY,
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('worktree', 'commit')),
    commit text,
    base_id integer REFERENCES trees (id),
    mid_id integer REFERENCES trees (id),  -- a layered tree between it and its base
    ready boolean NOT NULL DEFAULT false,  -- files and graph complete: refs may point here
    created_at timestamptz NOT NULL DEFAULT now(),
    indexed_at timestamptz,
    gitignored integer NOT NULL DEFAULT 0,
    -- bumped whenever the tree's files change; embed_state is "model id:files_version" of
    -- the last state whose vectors were all stored (the embed job skips a tree at it)
    files_version integer NOT NULL DEFAULT 0,
    embed_state text
);
CREATE UNIQUE INDEX trees_worktree_key ON trees (repo_id) WHERE kind = 'worktree';
CREATE UNIQUE INDEX trees_commit_key ON trees (repo_id, commit) WHERE kind = 'commit';
CREATE INDEX trees_base_idx ON trees (base_id) WHERE base_id IS NOT NULL;
CREATE INDEX trees_mid_idx ON trees (mid_id) WHERE mid_id IS NOT NULL;

-- Named refs of a repository: branches (main, release/1.2), tags, or any name CI publishes.
CREATE TABLE repo_refs (
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    name text NOT NULL,
    tree_id integer NOT NULL REFERENCES trees (id),
    commit text NOT NULL,
    moved_at timestamptz NOT NULL DEFAULT now(),
    moved_by text NOT NULL DEFAULT '',
    PRIMARY KEY (repo_id, name)
);
CREATE INDEX repo_refs_tree_idx ON repo_refs (tree_id);

-- Earlier trees of a ref kept by --keep N (newest first by moved_at).
CREATE TABLE ref_history (
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    name text NOT NULL,
    tree_id integer NOT NULL REFERENCES trees (id),
    commit text NOT NULL,
    moved_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repo_id, name, tree_id)
);
CREATE INDEX ref_history_tree_idx ON ref_history (tree_id);

-- source: worktree (a checkout on disk), git (a git directory, bare mirrors included: no
-- working tree is indexed) or remote (published by CI: nothing on this server's disk).
-- default_ref: what a query without ref answers for (NULL: the working tree).
-- follow: ref patterns followed from the repository's git (main, release/*); keep: how
-- many earlier commits of each followed ref stay queryable.
ALTER TABLE repos ADD COLUMN source text NOT NULL DEFAULT 'worktree'
    CHECK (source IN ('worktree', 'git', 'remote'));
ALTER TABLE repos ADD COLUMN default_ref text;
ALTER TABLE repos ADD COLUMN follow text[] NOT NULL DEFAULT '{}';
ALTER TABLE repos ADD COLUMN keep integer NOT NULL DEFAULT 0 CHECK (keep >= 0);

INSERT INTO trees (repo_id, kind, commit, ready, indexed_at, gitignored)
SELECT id, 'worktree', indexed_commit, true, indexed_at, gitignored FROM repos;

-- Per-file rows move from the repository to its working tree. repo_id stays on them: the
-- caller's visibility predicate filters on it in the same statement.
ALTER TABLE graph_files DROP CONSTRAINT graph_files_repo_id_path_fkey;
ALTER TABLE chunk_texts DROP CONSTRAINT chunk_texts_repo_id_path_fkey;

ALTER TABLE files ADD COLUMN tree_id integer;
UPDATE files f SET tree_id = t.id FROM trees t WHERE t.repo_id = f.repo_id;
ALTER TABLE files ALTER COLUMN tree_id SET NOT NULL;
ALTER TABLE files ADD FOREIGN KEY (tree_id) REFERENCES trees (id) ON DELETE CASCADE;
ALTER TABLE files DROP CONSTRAINT files_pkey;
ALTER TABLE files ADD PRIMARY KEY (tree_id, path);
CREATE INDEX files_repo_idx ON files (repo_id);

ALTER TABLE skipped ADD COLUMN tree_id integer;
UPDATE skipped s SET tree_id = t.id FROM trees t WHERE t.repo_id = s.repo_id;
ALTER TABLE skipped ALTER COLUMN tree_id SET NOT NULL;
ALTER TABLE skipped ADD FOREIGN KEY (tree_id) REFERENCES trees (id) ON DELETE CASCADE;
ALTER TABLE skipped DROP CONSTRAINT skipped_pkey;
ALTER TABLE skipped ADD PRIMARY KEY (tree_id, path);

ALTER TABLE graph_imports ADD COLUMN tree_id integer;
UPDATE graph_imports g SET tree_id = t.id FROM trees t WHERE t.repo_id = g.repo_id;
ALTER TABLE graph_imports ALTER COLUMN tree_id SET NOT NULL;
ALTER TABLE graph_imports ADD FOREIGN KEY (tree_id) REFERENCES trees (id) ON DELETE CASCADE;
DROP INDEX graph_imports_src_idx;
DROP INDEX graph_imports_dst_idx;
CREATE INDEX graph_imports_src_idx ON graph_imports (tree_id, src_path);
CREATE INDEX graph_imports_dst_idx ON graph_imports (tree_id, dst_path) WHERE dst_path IS NOT NULL;

ALTER TABLE graph_edges ADD COLUMN tree_id integer;
UPDATE graph_edges g SET tree_id = t.id FROM trees t WHERE t.repo_id = g.repo_id;
ALTER TABLE graph_edges ALTER COLUMN tree_id SET NOT NULL;
ALTER TABLE graph_edges ADD FOREIGN KEY (tree_id) REFERENCES trees (id) ON DELETE CASCADE;
DROP INDEX graph_edges_dst_idx;
DROP INDEX graph_edges_src_idx;
CREATE INDEX graph_edges_dst_idx ON graph_edges (tree_id, dst_path, dst_qual);
CREATE INDEX graph_edges_src_idx ON graph_edges (tree_id, src_path, ord);

ALTER TABLE graph_links ADD COLUMN tree_id integer;
UPDATE graph_links g SET tree_id = t.id FROM trees t WHERE t.repo_id = g.repo_id;
ALTER TABLE graph_links ALTER COLUMN tree_id SET NOT NULL;
ALTER TABLE graph_links ADD FOREIGN KEY (tree_id) REFERENCES trees (id) ON DELETE CASCADE;
ALTER TABLE graph_links DROP CONSTRAINT graph_links_pkey;
ALTER TABLE graph_links ADD PRIMARY KEY (tree_id, src_path, dst_path);
DROP INDEX graph_links_dst_idx;
CREATE INDEX graph_links_dst_idx ON graph_links (tree_id, dst_path);

ALTER TABLE graph_files ADD COLUMN tree_id integer;
UPDATE graph_files g SET tree_id = t.id FROM trees t WHERE t.repo_id = g.repo_id;
ALTER TABLE graph_files ALTER COLUMN tree_id SET NOT NULL;
ALTER TABLE graph_files DROP CONSTRAINT graph_files_pkey;
ALTER TABLE graph_files ADD PRIMARY KEY (tree_id, path);
-- a layered tree's ranks may be of files its base holds: no key to its own file rows (a
-- rank update rewrites the ranks of a tree whose files went)
ALTER TABLE graph_files ADD FOREIGN KEY (tree_id) REFERENCES trees (id) ON DELETE CASCADE;

ALTER TABLE graph_state ADD COLUMN tree_id integer;
UPDATE graph_state g SET tree_id = t.id FROM trees t WHERE t.repo_id = g.repo_id;
ALTER TABLE graph_state ALTER COLUMN tree_id SET NOT NULL;
ALTER TABLE graph_state DROP CONSTRAINT graph_state_pkey;
ALTER TABLE graph_state ADD PRIMARY KEY (tree_id);
ALTER TABLE graph_state ADD FOREIGN KEY (tree_id) REFERENCES trees (id) ON DELETE CASCADE;

-- The paths whose graph rows a layered tree holds itself (its base's rows for them are
-- hidden; a path listed with no rows of its own has none: deleted, or nothing resolved).
CREATE TABLE graph_layer (
    tree_id integer NOT NULL REFERENCES trees (id) ON DELETE CASCADE,
    path text NOT NULL,
    PRIMARY KEY (tree_id, path)
);

CREATE TABLE file_layer (
    tree_id integer NOT NULL REFERENCES trees (id) ON DELETE CASCADE,
    path text NOT NULL,
    PRIMARY KEY (tree_id, path)
);

CREATE FUNCTION tree_ranks(t integer) RETURNS SETOF graph_files LANGUAGE sql STABLE AS $$
    SELECT g.* FROM graph_files g WHERE g.tree_id = t
    UNION ALL
    SELECT g.* FROM trees l JOIN graph_files g ON g.tree_id = l.mid_id
    WHERE l.id = t
      AND NOT EXISTS (SELECT 1 FROM graph_files o WHERE o.tree_id = t AND o.path = g.path)
      AND NOT EXISTS (SELECT 1 FROM file_layer x WHERE x.tree_id = t AND x.path = g.path)
    UNION ALL
    SELECT g.* FROM trees l JOIN graph_files g ON g.tree_id = l.base_id
    WHERE l.id = t
      AND NOT EXISTS (SELECT 1 FROM graph_files o WHERE o.tree_id IN (t, l.mid_id)
                      AND o.path = g.path)
      AND NOT EXISTS (SELECT 1 FROM file_layer x WHERE x.tree_id IN (t, l.mid_id)
                      AND x.path = g.path)
$$;

-- The text a chunk is embedded as depends only on its path and the chunk (not on the
-- repository or tree): one row per (chunk, path), shared by every tree holding that file.
CREATE TABLE chunk_texts_shared (
    chunk_id bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    path text NOT NULL,
    text_hash bytea NOT NULL,
    PRIMARY KEY (chunk_id, path)
);
INSERT INTO chunk_texts_shared (chunk_id, path, text_hash)
SELECT DISTINCT ON (chunk_id, path) chunk_id, path, text_hash FROM chunk_texts
ORDER BY chunk_id, path;
DROP TABLE chunk_texts;
ALTER TABLE chunk_texts_shared RENAME TO chunk_texts;
ALTER INDEX chunk_texts_shared_pkey RENAME TO chunk_texts_pkey;
ALTER TABLE chunk_texts RENAME CONSTRAINT chunk_texts_shared_chunk_id_fkey TO chunk_texts_chunk_id_fkey;
CREATE INDEX chunk_texts_hash_idx ON chunk_texts (text_hash);

-- A content CI uploaded already parsed (codenav publish) is the uploading team's own until
-- this server parses that blob itself: origin_team names the team (NULL: parsed here). A
-- content is found by address only among the shared ones and the team's own, so another
-- team's upload can never stand in for a file's real parse.
ALTER TABLE contents ADD COLUMN origin_team integer REFERENCES teams (id) ON DELETE CASCADE;
ALTER TABLE contents DROP CONSTRAINT contents_sha_language_chunker_key;
CREATE UNIQUE INDEX contents_address_key
    ON contents (sha, language, chunker, (coalesce(origin_team, 0)));

ALTER TABLE index_runs ADD COLUMN tree_id integer REFERENCES trees (id) ON DELETE CASCADE;
UPDATE index_runs r SET tree_id = t.id FROM trees t WHERE t.repo_id = r.repo_id;
ALTER TABLE index_runs ADD COLUMN ref text NOT NULL DEFAULT '';

-- The repository columns that described its one tree now live on the tree.
ALTER TABLE repos DROP COLUMN indexed_at;
ALTER TABLE repos DROP COLUMN indexed_commit;
ALTER TABLE repos DROP COLUMN gitignored;
