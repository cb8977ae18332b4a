"""SQL only the benchmarks run (measurements of the store, never on the query path); the
service's own statements are in ``codenav.db.queries``."""

from codenav.db import queries as q

BENCH_SYMBOLS = """
SELECT DISTINCT c.symbol, c.parent FROM chunks c JOIN files f ON f.content_id = c.content_id
WHERE f.repo_id = %s AND c.symbol IS NOT NULL AND length(c.symbol) > 3
ORDER BY 1, 2 NULLS FIRST"""

DATABASE_SIZE = "SELECT pg_database_size(current_database())"

CHUNK_COUNT = "SELECT count(*) FROM chunks"

BENCH_TRGM_SIZE = "SELECT pg_relation_size('contents_body_trgm_idx')"

BENCH_TRGM_REINDEX = "REINDEX INDEX contents_body_trgm_idx"

BENCH_GRAPH_IMPORTS = """
SELECT f.language, count(DISTINCT (g.src_path, g.ord)),
       count(DISTINCT (g.src_path, g.ord)) FILTER (WHERE g.dst_path IS NOT NULL)
FROM graph_imports g JOIN files f ON f.repo_id = g.repo_id AND f.path = g.src_path
WHERE g.repo_id = %s GROUP BY 1 ORDER BY 1"""

BENCH_GRAPH_EDGES = """
SELECT kind, verified, count(*) FROM graph_edges WHERE repo_id = %s GROUP BY 1, 2 ORDER BY 1, 2"""

BENCH_GRAPH_STATE = "SELECT seconds, files_resolved FROM graph_state WHERE repo_id = %s"

BENCH_GRAPH_TARGETS = """
SELECT dst_qual, dst_path FROM graph_edges
WHERE repo_id = %s AND verified AND kind = 'call' AND dst_qual LIKE '%%.%%'
GROUP BY 1, 2 HAVING count(*) >= 2 ORDER BY 1, 2"""

BENCH_GRAPH_FILES = """
SELECT DISTINCT dst_path FROM graph_imports WHERE repo_id = %s AND dst_path IS NOT NULL
ORDER BY 1"""

# The code graph's share of a cold index, and its imports resolved to files of the repo.
BENCH_GRAPH_SHARE = """
SELECT (SELECT seconds FROM graph_state WHERE repo_id = %s),
       count(DISTINCT (src_path, ord)),
       count(DISTINCT (src_path, ord)) FILTER (WHERE dst_path IS NOT NULL)
FROM graph_imports WHERE repo_id = %s"""

BENCH_RUN_COUNT = "SELECT count(*) FROM index_runs"
# Whether contents wait for their whole-file postings (a first index leaves them to the
# graph job).
BENCH_TERMS_PENDING = "SELECT EXISTS (SELECT 1 FROM pending_terms)"

BENCH_FILES_CONTAINING = """
SELECT count(*) FROM files f JOIN contents c ON c.id = f.content_id
WHERE f.repo_id = %s AND strpos(c.body, %s) > 0"""

# A repo's chunk texts and how many have an embedding (any model; benchmarks use one).
BENCH_EMBED_COVERAGE = """
SELECT count(*), count(e.text_hash)
FROM files f JOIN chunks c ON c.content_id = f.content_id
JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path
LEFT JOIN embeddings e ON e.text_hash = ct.text_hash
WHERE f.repo_id = %s"""

# Chunks declaring a symbol in a repo, and how many of them have an embedding.
BENCH_SYMBOL_EMBEDDED = """
SELECT count(*), count(e.text_hash)
FROM files f JOIN chunks c ON c.content_id = f.content_id
JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path
LEFT JOIN embeddings e ON e.text_hash = ct.text_hash
WHERE f.repo_id = %s AND c.symbol = %s"""
# overlays an earlier run of overlay_bench left: aged past any TTL, so expiry drops them
BENCH_OVERLAYS_AGE = "UPDATE overlays SET touched_at = now() - interval '30 days'"

# A tree's chunks, and how many of them are too short to get a vector (q.EMBEDDABLE).
BENCH_TREE_CHUNKS = """
SELECT count(*), count(*) FILTER (WHERE NOT @EMBEDDABLE@)
FROM files f JOIN chunks c ON c.content_id = f.content_id WHERE f.tree_id = %s""".replace(
    "@EMBEDDABLE@", q.EMBEDDABLE)
