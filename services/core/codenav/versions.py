"""Versions of everything codenav persists. A mismatch means "reindex", never "read anyway".

Bump a number when the meaning of stored data changes, and add a changelog line.

SCHEMA_VERSION (database layout, applied by ``codenav.db.migrations``)
  1  repos, contents (content-addressed by git blob sha), chunks with code-aware tsvector,
     files, skipped, index_runs, api_tokens, term_stats.

CHUNKER_VERSION (how a file is cut into chunks; stored per content row)
  1  AST chunks for 12 languages, markdown by heading, line windows for other text.
"""

SCHEMA_VERSION = 1
CHUNKER_VERSION = 1
