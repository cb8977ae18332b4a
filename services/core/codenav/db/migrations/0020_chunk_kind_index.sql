-- 0020: chunks by kind. A search with a kind filter that the chunks holding the query's
-- rarest terms did not satisfy looks at every chunk of that kind holding a query term
-- (codenav.search.chunks.lexical_ranking). The kind's index and the tsvector index meet
-- before the table is read: on Apache Kafka, "errorResponse" with kind "function" (169 of
-- 83,751 chunks) read 26 rows, not the 14,260 that hold either word. Nine kinds: the index
-- is small and deduplicated, and costs a cold COPY of Kafka's chunks under 2 % of its
-- backend time.
CREATE INDEX chunks_kind_idx ON chunks (kind);
