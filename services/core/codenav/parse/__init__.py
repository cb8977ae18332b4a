"""Parsing one file with tree-sitter: its chunks (``chunker``), symbols and structure
(``structure``, driven by each language's node tables, ``codenav.lang``) and the import lines
``outline`` shows (``imports``); ``model`` is what parsing produces."""
