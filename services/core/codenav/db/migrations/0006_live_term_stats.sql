-- 0006: document frequencies come live from file_terms (an index-only count per query
-- term), so the term_stats materialized view and its refresh after every large index run
-- (seconds on a big corpus) are gone.
DROP MATERIALIZED VIEW IF EXISTS term_stats;
