-- 0015: a content's rows (chunks, symbols, refs, file_terms) no longer carry a foreign key
-- to contents. They are written in the transaction that inserts their content (refs of a
-- deferred first index: in the one that claims it), so the key checked nothing a writer
-- could get wrong, and each of their millions of rows paid a key lookup and a row lock on
-- its content: on Apache Kafka the COPY of 1.5M file_terms rows took 11.7 s of backend
-- time with the check and 7.5 s without, refs 7.6 s against 3.8 s. Garbage collection
-- deletes a collected content's rows itself (GC_DELETE), as the cascade did.
ALTER TABLE chunks DROP CONSTRAINT IF EXISTS chunks_content_id_fkey;
ALTER TABLE symbols DROP CONSTRAINT IF EXISTS symbols_content_id_fkey;
ALTER TABLE refs DROP CONSTRAINT IF EXISTS refs_content_id_fkey;
ALTER TABLE file_terms DROP CONSTRAINT IF EXISTS file_terms_content_id_fkey;
