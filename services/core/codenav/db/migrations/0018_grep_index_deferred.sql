-- 0018: a first index leaves the grep index to later. The trigram index on contents.body
-- (grep's literals) was kept current while a first index inserted its contents: on Apache
-- Kafka that was 6.7 of the parsers' backends' 21 s of CPU before the repository could be
-- searched, for an index only grep reads. A content now says whether its body is in the
-- index (grep_ready); the index holds only those that are. A first index inserts its
-- contents with the flag off, and the graph job sets it while it builds the graph (whose
-- resolution keeps one process busy, leaving a core). Every other insert has it on, as
-- before. grep reads the contents not yet in the index through contents_grep_pending and
-- matches their bodies itself, so it finds the same lines either way.
ALTER TABLE contents ADD COLUMN grep_ready boolean NOT NULL DEFAULT true;
DROP INDEX IF EXISTS contents_body_trgm_idx;
CREATE INDEX contents_body_trgm_idx ON contents USING gin (body gin_trgm_ops)
    WHERE grep_ready;
CREATE INDEX contents_grep_pending ON contents (id) WHERE NOT grep_ready;
