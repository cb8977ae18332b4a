-- 0003: the code graph. Per content (content-addressed like chunks): refs, what a file
-- references, imports and declares as its package. Per repository (derived from refs and
-- symbols, rebuilt incrementally by the indexer): resolved file imports, symbol edges,
-- file centrality, and the state of the last build.
CREATE TABLE refs (
    content_id bigint NOT NULL REFERENCES contents (id) ON DELETE CASCADE,
    ord integer NOT NULL,
    kind text NOT NULL,             -- call|type|extends|implements|var|import|reexport|package|decl
    name text NOT NULL,
    qualifier text NOT NULL DEFAULT '',
    alias text NOT NULL DEFAULT '',
    line integer NOT NULL,
    scope text NOT NULL DEFAULT ''  -- qualname of the innermost declaration around the line
);
CREATE INDEX refs_content_idx ON refs (content_id, ord);
CREATE INDEX refs_name_idx ON refs (name) WHERE kind IN ('call', 'type', 'extends', 'implements');

-- One row per import and file it reaches; dst_path NULL: external (not a file of the repo).
CREATE TABLE graph_imports (
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    src_path text NOT NULL,
    ord integer NOT NULL,           -- refs.ord of the import
    spec text NOT NULL,
    line integer NOT NULL,
    dst_path text
);
CREATE INDEX graph_imports_src_idx ON graph_imports (repo_id, src_path);
CREATE INDEX graph_imports_dst_idx ON graph_imports (repo_id, dst_path) WHERE dst_path IS NOT NULL;

-- A reference resolved to a declaration: verified (one declaration proven by the rules of
-- the language, `how` names the rule) or potential (several candidates, `how` says why).
CREATE TABLE graph_edges (
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    src_path text NOT NULL,
    ord integer NOT NULL,           -- refs.ord of the reference
    line integer NOT NULL,
    src_scope text NOT NULL,        -- qualname of the enclosing declaration ('' = file level)
    kind text NOT NULL,             -- call|type|extends|implements|import|reexport
    dst_path text NOT NULL,
    dst_qual text NOT NULL,
    verified boolean NOT NULL,
    how text NOT NULL
);
CREATE INDEX graph_edges_dst_idx ON graph_edges (repo_id, dst_path, dst_qual);
CREATE INDEX graph_edges_src_idx ON graph_edges (repo_id, src_path, ord);

-- PageRank of each file over import and reference links; prior is the rank on a log scale
-- normalised to [0, 1], used as a small multiplicative prior by search and find_files.
CREATE TABLE graph_files (
    repo_id integer NOT NULL,
    path text NOT NULL,
    rank double precision NOT NULL,
    prior double precision NOT NULL,
    PRIMARY KEY (repo_id, path),
    FOREIGN KEY (repo_id, path) REFERENCES files (repo_id, path) ON DELETE CASCADE
);

CREATE TABLE graph_state (
    repo_id integer PRIMARY KEY REFERENCES repos (id) ON DELETE CASCADE,
    version integer NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now(),
    full_build boolean NOT NULL,
    files_resolved integer NOT NULL,
    seconds double precision NOT NULL
);
