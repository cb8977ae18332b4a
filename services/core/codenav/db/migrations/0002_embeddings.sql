-- 0002: embeddings. One registry row per model (name, dimension); vectors keyed by
-- (model, sha256 of the embedded text) in one table of untyped vectors, each model with its
-- own partial HNSW expression index (created once its first bulk load is in); chunk_texts
-- maps every (repo, path, chunk) to the text it is embedded as.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE embed_models (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    dim integer NOT NULL CHECK (dim > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE embeddings (
    model_id integer NOT NULL REFERENCES embed_models (id) ON DELETE CASCADE,
    text_hash bytea NOT NULL,
    vec vector NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, text_hash)
);

CREATE TABLE chunk_texts (
    repo_id integer NOT NULL,
    path text NOT NULL,
    chunk_id bigint NOT NULL,
    text_hash bytea NOT NULL,
    PRIMARY KEY (repo_id, path, chunk_id),
    FOREIGN KEY (repo_id, path) REFERENCES files (repo_id, path) ON DELETE CASCADE,
    FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
);
CREATE INDEX chunk_texts_hash_idx ON chunk_texts (text_hash);
CREATE INDEX chunk_texts_chunk_idx ON chunk_texts (chunk_id);
