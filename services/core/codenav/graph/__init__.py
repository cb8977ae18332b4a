"""The code graph: definitions, imports, references and inheritance, resolved per language.

Per content, in the parser processes (content-addressed like chunks, never redone for an
unchanged file):

    patterns.py   tree-sitter query patterns: calls, types, heritage, typed variables
    imports.py    import bindings with their local names, package/namespace lines
    extract.py    one query walk per file -> ``refs`` rows

Per repository, in the index run after the files transaction (``build.update``):

    modules.py    which files an import names (go.mod, tsconfig paths, workspaces, Cargo,
                  PSR-4, packages, include dirs) -> ``graph_imports``
    context.py    what resolution reads, loaded in batches and cached for one build
    scope.py      what each name of a file means: its bindings, wildcards, package peers
    resolve.py    references -> verified or potential edges -> ``graph_edges``
    rank.py       PageRank of files -> ``graph_files`` (a small prior in search)
    build.py      full or incremental builds, written with COPY in one transaction

Query time (the MCP/REST tools): ``lookup.py`` (definition, references, implementations),
``impact.py`` (dependencies, impact), ``skeleton.py``, with ``common.py`` (finding
declarations, what an answer could not see), ``render.py`` (text) and ``tools.py``
(dispatch by name).
"""
