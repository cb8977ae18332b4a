"""Versions of everything codenav persists. A mismatch means "reindex", never "read anyway".

Bump a number when the meaning of stored data changes, and add a changelog line.

SCHEMA_VERSION (database layout, applied by ``codenav.db.migrations``)
  1  repos, contents (content-addressed by git blob sha), chunks with code-aware tsvector,
     files, skipped, index_runs, api_tokens, term_stats.
  2  embeddings: embed_models, embeddings (vector per model and text hash), chunk_texts.

CHUNKER_VERSION (how a file is cut into chunks; stored per content row)
  1  AST chunks for 12 languages, markdown by heading, line windows for other text.
  2  per-language fixes pinned by tests/core/test_chunking.py (exports, owners, docs,
     signatures, nested scopes); bodiless members stay in their class's chunk; equal-sized
     overlapping splits and text windows.
"""

SCHEMA_VERSION = 2
CHUNKER_VERSION = 2
