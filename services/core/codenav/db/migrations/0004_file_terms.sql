-- 0004: whole-file term frequencies per content, for file-level BM25 (long queries such as
-- an issue text rank files, not chunks). Keyed by term first: a query reads only the
-- postings of its own terms, from the index alone.
CREATE TABLE file_terms (
    term text NOT NULL,
    content_id bigint NOT NULL REFERENCES contents (id) ON DELETE CASCADE,
    tf integer NOT NULL,
    PRIMARY KEY (term, content_id)
);
CREATE INDEX file_terms_content_idx ON file_terms (content_id);
