"""What codenav knows about a language, declared once in ``codenav.lang.<language>``."""

from __future__ import annotations

from dataclasses import dataclass

from codenav.lang.spec import LangSpec


@dataclass(frozen=True)
class Language:
    """A language with AST chunking and symbols (and, with ``references``, a code graph).

    Import extraction and module resolution (``codenav.graph.bindings``,
    ``codenav.graph.modules``), scopes (``codenav.graph.scope``) and ecosystem conventions
    (``codenav.lang.conventions``) still keep their per-language rules in those modules."""

    name: str
    extensions: tuple[str, ...]
    """File suffixes, lower case, with the dot."""
    spec: LangSpec
    """Which nodes declare what: chunks, symbols, scopes, bodies, imports, visibility."""
    references: str = ""
    """Tree-sitter query patterns for the references a file makes (the capture names are
    documented in ``codenav.graph.patterns``); empty: no code graph for the language."""
    filenames: tuple[str, ...] = ()
    """Whole file names that are this language (``Rakefile``)."""

    @property
    def grammar(self) -> str:
        """The tree-sitter grammar (``tree-sitter-language-pack``)."""
        return self.spec.grammar
