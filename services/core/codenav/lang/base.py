"""What codenav knows about a language, declared once in ``codenav.lang.<language>``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from codenav.lang.spec import LangSpec
from codenav.lang.syntax import Binding

SOURCE = "source"
TEST = "test"
FIXTURE = "fixture"
EXAMPLE = "example"
DOCS = "docs"
BENCH = "bench"
GENERATED = "generated"
VENDORED = "vendored"
ROLES = (SOURCE, TEST, FIXTURE, EXAMPLE, DOCS, BENCH, GENERATED, VENDORED)
DIR = r"(^|/)"
"""A path pattern's start: the whole path or one of its directories."""
END = r"(/|$)"


@dataclass(frozen=True)
class Convention:
    """Where an ecosystem keeps files of a role (``codenav.lang.conventions``)."""

    role: str
    languages: tuple[str, ...]
    """The languages it applies to (empty: every language)."""
    pattern: str
    """A regular expression searched in the repo-relative path."""
    why: str


FAMILIES = ("python", "js", "go", "jvm", "rust", "c", "csharp", "ruby", "php", "swift")
"""How the code graph resolves a language's imports and names (``codenav.graph.modules``,
``codenav.graph.scope``, ``codenav.graph.resolve``): each family is one algorithm
(Python modules and packages, JS module paths and ``tsconfig``, Go packages by directory,
JVM packages, Rust crates and ``mod``, C includes, C# namespaces, Ruby ``require``, PHP
namespaces and PSR-4, Swift modules by build target). A new language picks the family whose
rules it follows."""


@dataclass(frozen=True)
class Imports:
    """How a language's files import: what ``outline`` shows and what the graph binds."""

    nodes: frozenset[str]
    """Statement node types that may hold an import, looked for near the top of a file."""
    specs: Callable[[Node], list[str]]
    """The modules, files or packages one such statement imports, as written."""
    query: str
    """Tree-sitter patterns of the import (``@i``...) and package (``@p``) nodes the graph
    reads; captures starting with ``_`` are predicates' helpers."""
    bindings: Callable[[str, Node, bytes], list[Binding]]
    """What one captured node (capture name, node, source) binds locally."""
    guarded: bool = False
    """Imports under module-level ``if``/``try`` count (Python's optional imports)."""


@dataclass(frozen=True)
class Language:
    """A language with AST chunking and symbols (and, with ``references``, a code graph).

    Everything codenav knows about one language is declared here and read by the
    pipeline stages through the registry (``codenav.lang``): its files, the nodes of its
    chunks and symbols, the patterns of its references, how it imports, its family of
    module and name resolution, the names that are never calls or user types, and its
    ecosystem's test, fixture and generated-code conventions."""

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
    family: str = ""
    """Its resolution family (``FAMILIES``); empty: no import resolution."""
    imports: Imports | None = None
    not_calls: frozenset[str] = frozenset()
    """Call-shaped names that are not calls of user code (``super``, ``require``)."""
    builtin_types: frozenset[str] = frozenset()
    """Type names that never name a declaration of the repository."""
    implicit_this: bool = False
    """A bare name inside a class may be a member (Java, C#, C++, Ruby, Kotlin)."""
    conventions: tuple[Convention, ...] = ()
    """Where this ecosystem keeps tests, examples, fixtures and generated code
    (``codenav.lang.conventions``: the rules shared by every language are there)."""

    def __post_init__(self) -> None:
        if self.family and self.family not in FAMILIES:
            raise ValueError(f"{self.name}: unknown resolution family {self.family!r}")

    @property
    def grammar(self) -> str:
        """The tree-sitter grammar (``tree-sitter-language-pack``)."""
        return self.spec.grammar
