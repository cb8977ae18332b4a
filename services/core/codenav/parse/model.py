"""What parsing one file produces: chunks to search, symbols to outline, imports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Kinds a chunk can have. Declarations first; "block" is module-level code between them.
DECLARATION_KINDS = frozenset(
    {"function", "method", "class", "interface", "type", "enum", "module", "constructor",
     "macro", "property"}
)
CHUNK_KINDS = DECLARATION_KINDS | {"block", "section", "text"}


@dataclass
class Symbol:
    name: str
    kind: str
    qualname: str
    parent: str | None
    start_line: int
    end_line: int
    signature: str
    doc: str
    exported: bool
    depth: int = 0
    """Nesting depth: 0 at top level, 1 for a method in a class, ..."""
    bases: tuple[str, ...] = ()
    """Names a class-like symbol extends or implements, as written."""


@dataclass
class Chunk:
    kind: str
    start_line: int
    end_line: int
    content: str
    symbol: str | None = None
    parent: str | None = None
    signature: str = ""
    doc: str = ""
    exported: bool = False
    part: int = 0
    """0 for a whole declaration; 1..n for the parts of a long one that was split."""


@dataclass
class ParsedFile:
    language: str
    line_count: int
    chunks: list[Chunk] = field(default_factory=list)
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    error: str = ""
    """Non-empty when structure extraction failed and the file fell back to line windows."""
    tree: Any = field(default=None, repr=False, compare=False)
    """The tree-sitter tree (not stored): the graph extraction reuses it, never re-parses."""
    src: bytes = field(default=b"", repr=False, compare=False)
