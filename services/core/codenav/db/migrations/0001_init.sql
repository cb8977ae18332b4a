-- 0001: repos, content-addressed contents with chunks and symbols, files, skips, runs, tokens.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE repos (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    root text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    indexed_at timestamptz,
    indexed_commit text,
    gitignored integer NOT NULL DEFAULT 0
);

-- One row per (git blob sha, language, chunker version): identical files anywhere share it.
CREATE TABLE contents (
    id bigserial PRIMARY KEY,
    sha text NOT NULL,
    language text NOT NULL,
    chunker integer NOT NULL,
    size bigint NOT NULL,
    line_count integer NOT NULL,
    body text NOT NULL,
    imports text[] NOT NULL DEFAULT '{}',
    parse_error text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (sha, language, chunker)
);

CREATE TABLE chunks (
    id bigserial PRIMARY KEY,
    content_id bigint NOT NULL REFERENCES contents (id) ON DELETE CASCADE,
    ord integer NOT NULL,
    kind text NOT NULL,
    symbol text,
    parent text,
    signature text NOT NULL DEFAULT '',
    doc text NOT NULL DEFAULT '',
    exported boolean NOT NULL DEFAULT false,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    part integer NOT NULL DEFAULT 0,
    body text NOT NULL,
    n_terms integer NOT NULL,
    tsv tsvector NOT NULL
);
CREATE INDEX chunks_content_idx ON chunks (content_id);
CREATE INDEX chunks_tsv_idx ON chunks USING gin (tsv);
CREATE INDEX chunks_symbol_idx ON chunks (lower(symbol)) WHERE symbol IS NOT NULL;
CREATE INDEX chunks_symbol_trgm_idx ON chunks USING gin (lower(symbol) gin_trgm_ops)
    WHERE symbol IS NOT NULL;

CREATE TABLE symbols (
    id bigserial PRIMARY KEY,
    content_id bigint NOT NULL REFERENCES contents (id) ON DELETE CASCADE,
    ord integer NOT NULL,
    name text NOT NULL,
    qualname text NOT NULL,
    kind text NOT NULL,
    parent text,
    depth integer NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    signature text NOT NULL,
    doc text NOT NULL,
    exported boolean NOT NULL,
    bases text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX symbols_content_idx ON symbols (content_id);
CREATE INDEX symbols_name_idx ON symbols (lower(name));

CREATE TABLE files (
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    path text NOT NULL,
    content_id bigint NOT NULL REFERENCES contents (id),
    sha text NOT NULL,
    language text NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    path_tsv tsvector NOT NULL,
    indexed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repo_id, path)
);
CREATE INDEX files_content_idx ON files (content_id);
CREATE INDEX files_path_tsv_idx ON files USING gin (path_tsv);

CREATE TABLE skipped (
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    path text NOT NULL,
    reason text NOT NULL,
    detail text NOT NULL DEFAULT '',
    size bigint NOT NULL DEFAULT 0,
    mtime_ns bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (repo_id, path)
);

CREATE TABLE index_runs (
    id bigserial PRIMARY KEY,
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    scope text NOT NULL,
    state text NOT NULL,
    phase text NOT NULL DEFAULT '',
    files_total integer NOT NULL DEFAULT 0,
    files_done integer NOT NULL DEFAULT 0,
    files_parsed integer NOT NULL DEFAULT 0,
    files_deleted integer NOT NULL DEFAULT 0,
    job_id text,
    error text NOT NULL DEFAULT '',
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX index_runs_repo_idx ON index_runs (repo_id, id DESC);

CREATE TABLE api_tokens (
    id serial PRIMARY KEY,
    name text NOT NULL,
    token_hash text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at timestamptz
);

-- Document frequencies over all chunks, for IDF weighting at query time. Refreshed after
-- index runs that changed a noticeable share of the corpus (queries tolerate stale stats).
CREATE MATERIALIZED VIEW term_stats AS
    SELECT word AS term, ndoc AS df FROM ts_stat('SELECT tsv FROM public.chunks');
CREATE UNIQUE INDEX term_stats_term_idx ON term_stats (term);
CREATE MATERIALIZED VIEW corpus_stats AS
    SELECT true AS id, count(*) AS n_chunks, coalesce(avg(n_terms), 0)::float8 AS avg_terms
    FROM chunks;
CREATE UNIQUE INDEX corpus_stats_id_idx ON corpus_stats (id);
