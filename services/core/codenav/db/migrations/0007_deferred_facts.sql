-- 0007: a first index may leave the graph facts (refs) of the contents it stores to the
-- graph job, so the repository is searchable sooner; facts_pending marks those contents
-- until the graph job (or any graph update that finds them) extracts their facts.
ALTER TABLE contents ADD COLUMN facts_pending boolean NOT NULL DEFAULT false;
CREATE INDEX contents_facts_pending_idx ON contents (id) WHERE facts_pending;
