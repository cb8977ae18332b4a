"""Answering queries from the index: the query parser (``query``), chunk search
(``chunks``: lexical rankers fused by RRF, then priors), ``find_files`` (``find``: candidate
files and their features, ``features``; BM25 over whole files, ``bm25``; the trained ranker,
``learned``, with its models in ``models/``), vector k-NN and the query embedder
(``semantic``), the pure ranking functions (``fusion``) and every weight they use
(``weights``)."""
