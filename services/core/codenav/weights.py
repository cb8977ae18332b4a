"""Every depth, cap and weight of the ``find_files`` file ranker, in one place.

The ranker (``codenav.features`` gathers candidates and their features, ``codenav.learned``
scores them) is chosen and tuned on the development suite with leave-one-repository-out
evaluation only (``bench/train_ranker.py``); nothing here was set by looking at the
repository a score is reported for. ``FALLBACK`` is the hand-set linear fusion: it scores
hybrid mode (it did better there, leave-one-repository-out, than any tuned alternative with
the default MiniLM embeddings), the starting point of the tuned lexical model, and lexical
mode too when the shipped model cannot be loaded.
"""

from __future__ import annotations

BM25_DEPTH = 150
"""Candidates taken from whole-file BM25 (every file with a query term is scored)."""
CHUNK_DEPTH = 400
"""Chunks read for the chunk features of a short query."""
SEMANTIC_DEPTH = 80
"""Nearest chunks read from the vector index (hybrid)."""
NEIGHBOUR_SEEDS = 8
"""The strongest lexical (and semantic) candidates whose graph neighbours join the pool."""
NEIGHBOUR_LINKS = 400
"""Links read around those seeds, strongest first."""
NEIGHBOUR_NEW = 40
"""At most this many files enter the pool only as a neighbour."""
DECLARED_ROWS = 20000
"""Declarations read for the symbol and doc fields of the candidates."""
PATH_PATTERNS = 40
"""Path patterns taken from the query (stack frames, module paths, file names)."""
PATH_MATCHES = 60
MAX_CANDIDATES = 400
"""Candidates scored by the model (the best by a cheap pre-score when more are found)."""

FALLBACK: dict[str, float] = {
    "bm25": 2.0, "bm25_rank": 1.0, "cov_idf": 1.5, "path_idf": 1.0, "name_idf": 1.5,
    "sym_idf": 1.2, "doc_idf": 0.3, "chunk": 0.8, "idents_declared": 0.4,
    "path_mentioned": 2.0, "prior": 0.2, "nbr": 0.3, "sem": 1.5, "sem_rank": 1.0,
    "generated": -0.8,
}
"""Linear weights over the features (``codenav.features.FEATURES``), set by hand before any
evaluation."""
