-- 0005: file-level links of the code graph, maintained with the edges they summarise, so
-- dependencies, file impact and PageRank read one indexed row per pair of files; and each
-- file's importer count next to its rank.
CREATE TABLE graph_links (
    repo_id integer NOT NULL REFERENCES repos (id) ON DELETE CASCADE,
    src_path text NOT NULL,
    dst_path text NOT NULL,
    imports integer NOT NULL,       -- imports of src that reach dst
    refs integer NOT NULL,          -- verified references from src to declarations of dst
    PRIMARY KEY (repo_id, src_path, dst_path)
);
CREATE INDEX graph_links_dst_idx ON graph_links (repo_id, dst_path);

ALTER TABLE graph_files ADD COLUMN imported_by integer NOT NULL DEFAULT 0;
