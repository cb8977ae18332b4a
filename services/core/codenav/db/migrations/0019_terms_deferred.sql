-- 0019: a first index leaves its contents' whole-file term postings (file_terms) to the
-- graph job, which writes them first, before it extracts the graph facts. On Apache Kafka
-- they were 8 of a first index's 33 s of CPU before the repository could be searched (the
-- terms, their COPY and 1.5 million entries of file_terms' two indexes), for the one
-- feature of find_files that reads them; search reads chunks. pending_terms lists the
-- contents whose postings are not written yet. Like a content's other rows, these have no
-- foreign key (written with their content, collected with it by GC_DELETE).
CREATE TABLE pending_terms (content_id bigint PRIMARY KEY);
