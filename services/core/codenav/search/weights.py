"""Every weight, prior, depth and cap the rankers use, in one place, each with what it does.

Three rankers read them. ``search`` (``codenav.search.chunks``) fuses ranked lists of chunks
with Reciprocal Rank Fusion, then multiplies each result by its priors (``fusion``).
Long queries rank whole files by BM25 first (``bm25``). ``find_files``
(``codenav.search.features`` gathers candidates and their features,
``codenav.search.learned`` scores them) is chosen and tuned on the development suite with
leave-one-repository-out evaluation only (``bench/train_ranker.py``); nothing here was set by
looking at the repository a score is reported for. ``FALLBACK`` is the hand-set linear
fusion: it scores hybrid mode (it did better there, leave-one-repository-out, than any tuned
alternative with the default MiniLM embeddings), the starting point of the tuned linear
fusion ``bench/train_ranker.py`` compares, which pre-ranks the candidates it trains on, and
lexical mode too when the shipped model cannot be loaded.

The ranking golden tests (``tests/core/search/test_ranking_golden.py``) pin the result of
these values; change one only with the evaluation to show it.
"""

from __future__ import annotations

# --- search: the fused lists -----------------------------------------------------------
RRF_K = 60
"""Reciprocal Rank Fusion's k: each list adds weight / (k + rank) to an item."""
LEXICAL_WEIGHT = 1.0
"""RRF weight of the lexical (full-text, IDF-weighted) chunk list."""
LEXICAL_WEIGHT_UNKNOWN = 0.5
"""... when the query names an identifier the index does not know (likely misspelt)."""
DECLARATION_WEIGHT = 1.0
"""RRF weight of the chunks declaring a name the query uses, when it spells identifiers."""
DECLARATION_WEIGHT_PROSE = 0.6
"""... when it spells none (prose: a declaration matched a plain word)."""
FUZZY_WEIGHT = 0.5
"""RRF weight of trigram similarity on symbol names."""
FUZZY_WEIGHT_UNKNOWN = 1.5
"""... when the query names an unknown identifier: the fuzzy list finds what it meant."""
SEMANTIC_WEIGHT = 1.0
"""RRF weight of the vector k-NN list in hybrid search."""
QUALIFIED_BOOST = 1.6
"""A declaration whose owner and name the query both names (``Owner member``)."""
SEARCH_DEPTH_MIN = 50
SEARCH_DEPTH_PER_RESULT = 5
"""Each lexical and vector list reads max(MIN, limit x PER_RESULT) chunks."""
DECLARATION_DEPTH = 30
"""Chunks read from the declaration list."""
FUZZY_DEPTH = 20
"""Chunks read from the trigram list."""
TOP_FILES = 30
"""Long queries and task descriptions (``SEARCH_FILES_FIRST_WORDS``) rank chunks only inside
the files that file-level BM25 ranked best."""
SEARCH_FILES_FIRST_WORDS = 3
"""A query of this many words (stop words not counted, an identifier once) describes a task
rather than naming code, and ``search`` ranks its chunks inside BM25's best files, as for
a long query."""
CHUNK_LIFT = 0.3
"""Ranked inside BM25's best files, a chunk scores its file's BM25 share plus this much of
its own share."""
REPEAT_DECAY = 0.7
"""Each repeat of one symbol of one file on a result page counts this much less."""

# --- search: priors (multipliers after fusion) -------------------------------------------
TEST_PRIOR = 0.45
"""A test or fixture file, when the query does not ask for tests."""
TEST_PRIOR_WANTED = 1.15
"""... when it does."""
GENERATED_PRIOR = 0.5
"""Generated and vendored code."""
DOCS_PRIOR = 0.7
"""Documentation, examples, benchmarks and configuration, when the query is about code."""
KIND_PRIOR = {
    "class": 1.1, "interface": 1.1, "enum": 1.05, "type": 1.05, "function": 1.1,
    "method": 1.05, "constructor": 1.0, "module": 1.0, "macro": 1.0, "property": 1.0,
    "section": 0.85, "block": 0.8, "text": 0.75,
}
"""By the chunk's kind: declarations above blocks and text."""
KIND_PRIOR_OTHER = 0.9
"""A kind not listed above."""
KIND_PRIOR_BUILD_ASKED = 1.0
"""A build script's blocks, text and sections when the query is about dependencies,
versions or the build (``codenav.lang.conventions.BUILD``): neutral, not tuned."""
DEFINITION_PROSE_PRIOR = 0.6
"""Blocks, text and sections again, when the query asks where something is defined."""
CENTRALITY_WEIGHT = 0.1
"""At most +10% for the most central file of a repository (PageRank over imports and
references, normalised to [0, 1] by ``codenav.graph.centrality.priors``)."""
PATH_TERM_BOOST = 0.15
"""Per query term found in a result's path (``auth token`` favours ``auth/``) ..."""
PATH_TERM_CAP = 3
"""... for at most this many terms."""

# --- BM25 over whole files ---------------------------------------------------------------
BM25_K1 = 1.2
"""Term-frequency saturation."""
BM25_B = 0.75
"""Length normalisation."""
PATH_TF = 2.0
"""A path match counts like this many occurrences (path tokens matter)."""
DECLARES_BOOST = 0.25
"""Per name the query spells out (``KMeans``, ``parse_header``) that the file declares ..."""
DECLARES_CAP = 4
"""... for at most this many names."""
MODULE_BOOST = 0.5
"""When the query names the file's module path (``_pytest.capture.EncodedFile``)."""

# --- find_files ----------------------------------------------------------------------------
BM25_DEPTH = 80
"""Candidates taken from whole-file BM25 (every file with a query term is scored). With
``CHUNK_FILES`` 100 and ``MAX_CANDIDATES`` 150 (from 150, 300 and 400) find_files' p50 on
Apache Kafka went from 51-57 to 37-42 ms in process (paired runs), 63-65 to 49-50 ms over
HTTP. On the development suite 5 of 1,914 tasks left the top 5 (4 of them zod's) and 1
entered it; none of 166 SWE-bench Verified tasks moved (bench/README.md, "Smaller
candidate depths", 2026-12-04)."""
CHUNK_DEPTH = 400
"""Chunks read for the chunk features of a short query."""
CHUNK_FILES = 100
"""The files whose chunks a short query ranks: those among the best this many by whole-file
BM25 that can be candidates (a chunk matching the query is always in a file BM25 scored;
test files only when tests are asked for, as they would be dropped after ranking anyway).
Ranking every matching chunk of the repository instead was about 70 % of a query on Apache
Kafka; 300 kept the development suite's answers in their places. 100 accounts for the
tasks ``BM25_DEPTH``'s note counts: with 150, zod and commons-lang won 4 top-5 hits back
and lost 1 other, for a p50 about 6 ms higher on Kafka.
Leaving the tests out halved the statement on Kafka (61 to 26 ms median) and cost the
suite 5 of 1,914 top-5 hits leave-one-repository-out, 1 with the shipped model in-sample
(bench/README.md, 2026-12-03)."""
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
MAX_CANDIDATES = 150
"""Candidates scored by the model (the best by a cheap pre-score when more are found)."""
PRESCORE_DECLARED = 0.2
"""Pre-score: per query identifier the file declares (besides BM25 rank, nearest vector
and a path the query mentions, 1 each) ..."""
PRESCORE_CHUNK = 0.3
"""... and the file's best chunk score."""

FALLBACK: dict[str, float] = {
    "bm25": 2.0, "bm25_rank": 1.0, "cov_idf": 1.5, "path_idf": 1.0, "name_idf": 1.5,
    "sym_idf": 1.2, "doc_idf": 0.3, "chunk": 0.8, "idents_declared": 0.4,
    "path_mentioned": 2.0, "prior": 0.2, "nbr": 0.3, "sem": 1.5, "sem_rank": 1.0,
    "generated": -0.8,
}
"""Linear weights over the features (``codenav.search.features.FEATURES``), set by hand
before any evaluation."""
HYBRID_SHORT: dict[str, float] = {"build_asked": 2.5, "build_file": 1.0}
"""Added to ``FALLBACK`` in hybrid mode for a short query (under 7 groups, where the lexical
model uses its short weights): build scripts, and a query about the build asking for them.
Chosen leave-one-repository-out on 8 repositories of the suite run with embeddings
(bench/README.md, 2026-12-03); issue-length queries keep ``FALLBACK`` alone."""
