-- 0016: which contents still lack their graph facts (a first index leaves them to the graph
-- job) is a table of its own, pending_facts, instead of contents.facts_pending. Claiming a
-- batch updated the contents row, and since an index's predicate named the flag, every
-- such update wrote a new row version into each of contents' indexes: the whole body's
-- trigrams went into the grep index a second time. On Apache Kafka that UPDATE took 6.5 s
-- of backend time for 6,367 contents; a claim now deletes their pending_facts rows.
-- Like a content's other rows, these have no foreign key (written with their content,
-- collected with it by GC_DELETE).
CREATE TABLE pending_facts (content_id bigint PRIMARY KEY);
INSERT INTO pending_facts (content_id) SELECT id FROM contents WHERE facts_pending;
DROP INDEX IF EXISTS contents_facts_pending_idx;
ALTER TABLE contents DROP COLUMN facts_pending;
