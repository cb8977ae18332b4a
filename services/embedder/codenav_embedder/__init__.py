"""codenav embedder: sentence-transformers behind an OpenAI-compatible /v1/embeddings."""

__version__ = "0.1.0"
