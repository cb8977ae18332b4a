"""Parsing one file with tree-sitter: its chunks (``chunker``), symbols and structure
(``structure``, driven by the per-language node tables in ``specs``) and the import lines
``outline`` shows (``imports``); ``model`` is what parsing produces."""
