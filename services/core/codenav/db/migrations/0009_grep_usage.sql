-- 0009: grep and token economy.
-- A trigram index on file contents (pg_trgm): grep's literals and the literals a regex
-- requires are found through it (LIKE '%lit%' is answered by the index, then rechecked).
-- Bodies are stored once per content, already redacted, so grep never sees a secret.
CREATE INDEX contents_body_trgm_idx ON contents USING gin (body gin_trgm_ops);

-- Tool answers' _stats, summed per day, team, repository and tool (written in batches by
-- each API process; codenav.usage). repo_id is NULL for an answer about no single
-- repository (status of them all). A deleted repository's figures go with it.
CREATE TABLE usage_daily (
    day date NOT NULL,
    team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    repo_id integer REFERENCES repos (id) ON DELETE CASCADE,
    tool text NOT NULL,
    calls bigint NOT NULL DEFAULT 0,
    empty bigint NOT NULL DEFAULT 0,
    tokens_returned bigint NOT NULL DEFAULT 0,
    tokens_full_files bigint NOT NULL DEFAULT 0,
    duration_ms double precision NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX usage_daily_key ON usage_daily (day, team_id, (coalesce(repo_id, 0)), tool);
CREATE INDEX usage_daily_repo_idx ON usage_daily (repo_id);
