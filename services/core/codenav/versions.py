"""Versions of everything codenav persists. A mismatch means "reindex", never "read anyway".

Bump a number when the meaning of stored data changes, and add a changelog line.

SCHEMA_VERSION (database layout, applied by ``codenav.db.migrations``)
  1  repos, contents (content-addressed by git blob sha), chunks with code-aware tsvector,
     files, skipped, index_runs, api_tokens, term_stats.
  2  embeddings: embed_models, embeddings (vector per model and text hash), chunk_texts.
  3  code graph: refs (per content), graph_imports, graph_edges, graph_files, graph_state.
  4  file_terms: whole-file term frequencies per content (file-level BM25).
  5  graph_links (file-level links with import and reference counts), graph_files.imported_by.
  6  term_stats view dropped: document frequencies read live from file_terms.
  7  contents.facts_pending: a first index leaves graph facts to the graph job.
  8  access control: teams (repos.team_id, names unique per team), token roles, teams,
     grants (token_repos) and expiry, audit_log, repos.index_enabled, contents.redactions.
  9  grep: a trigram (pg_trgm GIN) index on contents.body; usage_daily: answers' _stats
     summed per day, team, repository and tool (codenav stats).
 10  refs: trees (a repository's working tree and its commit trees), repo_refs and
     ref_history; files, skipped and the graph tables per tree; graph_layer and the
     tree_imports/tree_edges/tree_links functions (a tree's graph layered on another's);
     repos.source, default_ref, follow, keep; chunk_texts keyed by (chunk, path).
 11  overlays: a developer's uncommitted edits as a tree (kind 'overlay') layered on the
     tree it is based on, read only by the token that made it; overlay_files (the state
     the adapter sent) and overlay_blobs (uploads waiting to be parsed); the tree_*
     functions read a layered tree's base and mid through tree_base/tree_mid (planned on
     their sizes).
 12  chunks.tsv stored uncompressed (STORAGE EXTERNAL): ranking reads it without
     decompressing (the rows and their meaning are those of 11).
 13  file_terms' primary key includes tf: whole-file BM25 reads postings from the index
     alone (the rows and their meaning are those of 12).
 14  corpus_stats holds n_contents (IDF's N), refreshed with n_chunks: a query no longer
     counts the contents table.
 15  chunks, symbols, refs and file_terms without a foreign key to contents (written with
     their content; garbage collection deletes them with it).
 16  pending_facts replaces contents.facts_pending (claiming facts no longer rewrites the
     contents row and its indexes); snapshots still carry the flag per content.
 17  a working tree holds all of its rows itself (trees_worktree_flat): its statements read
     its tables by tree id.
 18  contents.grep_ready: the trigram index on bodies holds only the contents whose flag is
     on; a first index inserts with it off and the graph job sets it (grep reads the rest
     through contents_grep_pending).
 19  pending_terms: a first index leaves its contents' whole-file postings (file_terms) to
     the graph job, which writes them before the graph facts (find_files says meanwhile
     that its whole-file statistics are incomplete).
 20  chunks_kind_idx: a filtered search reads the chunks of a kind holding a query term
     through the kind's index and the tsvector index together (the rows are those of 19).
 21  file_history and history_heads: how often and how recently each file of a checkout
     changed in its last commits (``codenav.index.history``), read by find_files' ranker.

CHUNKER_VERSION (how a file is cut into chunks; stored per content row)
  1  AST chunks for 12 languages, markdown by heading, line windows for other text.
  2  per-language fixes pinned by tests/core/parse/test_chunking.py (exports, owners, docs,
     signatures, nested scopes); bodiless members stay in their class's chunk; equal-sized
     overlapping splits and text windows.
  3  graph facts per content (``refs``: references, imports, typed variables, package).
  4  declared return types and variables initialised by calls in ``refs``.
  5  secrets inside files are redacted before parsing (``codenav.index.redact``): bodies, chunks,
     symbols, terms and graph facts never hold them; ``contents.redactions`` lists them.

GRAPH_VERSION (how references are resolved into a repository's graph; stored per repo)
  1  imports resolved per language, verified/potential edges, inheritance, PageRank.
  2  graph_links and importer counts; variables typed by what the call initialising them
     returns (declared return types).
"""

SCHEMA_VERSION = 21
SCHEMA_ROWS_SINCE = 19
"""The oldest schema version whose rows are this one's: a snapshot exported there imports
here, and a physical seed's store starts (it is migrated on start). 20 added an index, no
row; 21 added file_history, which snapshots do not carry (the next index reads it from
git)."""
CHUNKER_VERSION = 5
GRAPH_VERSION = 2
