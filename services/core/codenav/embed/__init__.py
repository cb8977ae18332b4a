"""Embeddings: the client of the embedder service (``client``) and the vectors in Postgres
(``vectors``: models, storage, the HNSW index, backlog, coverage, k-NN)."""
