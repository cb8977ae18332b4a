-- 0014: corpus_stats also holds the number of contents (the N of a term's IDF). Before,
-- every search and find_files counted the contents table live: a scan that grows with the
-- whole store (0.25-0.4 ms per query on Apache Kafka alone, every team's repositories
-- on a shared server). It is refreshed with n_chunks after the index runs that change a
-- noticeable share of a repository (queries tolerate stale statistics).
DROP MATERIALIZED VIEW corpus_stats;
CREATE MATERIALIZED VIEW corpus_stats AS
    SELECT true AS id, c.n_chunks, c.avg_terms, (SELECT count(*) FROM contents) AS n_contents
    FROM (SELECT count(*) AS n_chunks, coalesce(avg(n_terms), 0)::float8 AS avg_terms
          FROM chunks) c;
CREATE UNIQUE INDEX corpus_stats_id_idx ON corpus_stats (id);
