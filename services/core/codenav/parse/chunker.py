"""Cutting one file into chunks: AST declarations, markdown sections, or line windows.

In source files each declaration is a chunk (with its doc comment and decorators); a class
whose members have bodies is a "shell" chunk (member bodies elided) plus one chunk per such
member, while fields and abstract signatures stay in the shell. Code between declarations
becomes "block" chunks. A declaration longer than ``max_lines`` is cut into parts 1..n of
at most ``max_lines`` lines, consecutive parts sharing ``overlap`` lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from tree_sitter import Parser

from codenav.lang import SPECS, STRUCTURED
from codenav.lang.spec import CALLABLE, CLASS_LIKE, MEMBER_ONLY
from codenav.parse.imports import extract_imports
from codenav.parse.model import Chunk, ParsedFile, Symbol
from codenav.parse.structure import Decl, Walker, end_row

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_NOT_SETEXT = ("#", ">", "-", "*", "+", "|", "<", "```", "~~~")
_WORDY = re.compile(r"\w{2,}")


@dataclass(frozen=True)
class ChunkLimits:
    max_lines: int = 120
    overlap: int = 10
    window: int = 60


_LOADED: set[str] = set()
_MET: set[str] = set()


@cache
def parser_for(language: str) -> Parser:
    from tree_sitter_language_pack import get_parser

    parser = get_parser(STRUCTURED[language])  # type: ignore[arg-type]
    _LOADED.add(language)
    return parser


def preload_grammars(languages: Iterable[str]) -> None:
    """Load the grammars of ``languages`` once, before forking workers, so children share
    them."""
    for language in languages:
        if language in STRUCTURED:
            parser_for(language)


def note_languages(languages: Iterable[str]) -> None:
    """Languages this process's parser processes parsed for it."""
    _MET.update(language for language in languages if language in STRUCTURED)


def languages_met() -> set[str]:
    """The structured languages this process has parsed, had parsed for it
    (``note_languages``) or inherited the grammar of."""
    return _LOADED | _MET


def parse_file(text: str, language: str, limits: ChunkLimits = ChunkLimits(),
               structure: bool = True) -> ParsedFile:
    """A file's chunks and symbols; ``structure`` false: line windows only, as for a
    language without a structure parser (a file the parser stalled on)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    result = ParsedFile(language=language, line_count=len(lines))
    if not lines:
        return result
    if structure and language in STRUCTURED:
        try:
            _structured(text, lines, language, limits, result)
            return result
        except (RecursionError, ValueError) as exc:  # pathological input: fall back
            result.chunks.clear()
            result.symbols.clear()
            result.error = f"{type(exc).__name__}: {exc}"[:200]
    if language == "markdown" and structure:
        result.chunks = _markdown(lines, limits)
    else:
        result.chunks = _windows(lines, 0, len(lines) - 1, "text", limits)
    return result


def _structured(text: str, lines: list[str], language: str, limits: ChunkLimits,
                result: ParsedFile) -> None:
    spec = SPECS[language]
    src = text.encode("utf-8")
    tree = parser_for(language).parse(src)
    result.tree, result.src = tree, src
    root = tree.root_node
    walker = Walker(spec, src)
    decls = walker.walk(root)
    result.imports = extract_imports(language, root)
    covered: list[tuple[int, int]] = list(walker.scope_rows)
    for decl in decls:
        _emit(decl, lines, limits, result, covered)
    result.chunks += _blocks(lines, covered, limits)
    result.chunks.sort(key=lambda c: (c.start_line, -c.end_line, c.part))


def _symbol(decl: Decl) -> Symbol:
    return Symbol(
        name=decl.name, kind=decl.kind, qualname=decl.qualname, parent=decl.parent,
        start_line=decl.node.start_point[0] + 1, end_line=decl.end_row + 1,
        signature=decl.signature, doc=decl.doc, exported=decl.exported, depth=decl.depth,
        bases=decl.bases,
    )


def _emit(decl: Decl, lines: list[str], limits: ChunkLimits, result: ParsedFile,
          covered: list[tuple[int, int]]) -> None:
    result.symbols.append(_symbol(decl))
    if decl.scope_only:
        for member in decl.members:
            _emit(member, lines, limits, result, covered)
        return
    covered.append((decl.start_row, decl.end_row))
    if not decl.members:
        result.chunks += _declaration_chunks(decl, lines, limits)
        return
    # Members with a body get their own chunk; the rest (fields, abstract signatures)
    # stay in the class's chunk, as symbols only.
    chunked = [m for m in decl.members if m.kind not in MEMBER_ONLY and m.body is not None]
    if decl.kind in CLASS_LIKE and chunked:
        result.chunks.append(_shell(decl, chunked, lines))
        own_chunk = {id(m) for m in chunked}
        for member in decl.members:
            if id(member) in own_chunk:
                _emit(member, lines, limits, result, covered)
            else:
                _symbols_only(member, result)
        return
    for member in decl.members:  # short class-likes keep their members inline
        _symbols_only(member, result)
    result.chunks += _declaration_chunks(decl, lines, limits)


def _symbols_only(decl: Decl, result: ParsedFile) -> None:
    result.symbols.append(_symbol(decl))
    for member in decl.members:
        _symbols_only(member, result)


def _spans(start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Rows ``start..end`` cut into the fewest spans of at most ``size`` rows, consecutive
    spans sharing exactly ``overlap`` rows, all of about the same length."""
    size = max(1, size)
    overlap = max(0, min(overlap, size - 1))
    total = end - start + 1
    if total <= size:
        return [(start, end)]
    count = -(-(total - overlap) // (size - overlap))
    length = -(-(total + (count - 1) * overlap) // count)
    spans = []
    for k in range(count):
        first = start + k * (length - overlap)
        spans.append((first, min(first + length - 1, end) if k < count - 1 else end))
    return spans


def _declaration_chunks(decl: Decl, lines: list[str], limits: ChunkLimits) -> list[Chunk]:
    start, end = decl.start_row, decl.end_row
    meta = dict(symbol=decl.name, parent=decl.parent, signature=decl.signature, doc=decl.doc,
                exported=decl.exported)
    spans = _spans(start, end, limits.max_lines, limits.overlap)
    return [Chunk(kind=decl.kind, start_line=first + 1, end_line=last + 1,
                  content="\n".join(lines[first:last + 1]), part=0 if len(spans) == 1 else i,
                  **meta)  # type: ignore[arg-type]
            for i, (first, last) in enumerate(spans, 1)]


def _shell(decl: Decl, members: list[Decl], lines: list[str]) -> Chunk:
    """The class with member bodies elided: header, fields, member signatures."""
    elided: list[tuple[int, int]] = []
    for member in members:
        body = member.body
        if body is None or member.kind not in CALLABLE | CLASS_LIKE:
            continue
        first = member.header_end_row + 1
        last = member.end_row if member.end_row > member.header_end_row and \
            lines[member.end_row].strip() in ("}", "};", "end") else end_row(body)
        if first <= last:
            elided.append((first, last))
    out: list[str] = []
    row = decl.start_row
    elided.sort()
    idx = 0
    while row <= decl.end_row:
        while idx < len(elided) and elided[idx][1] < row:
            idx += 1
        if idx < len(elided) and elided[idx][0] <= row <= elided[idx][1]:
            first, last = elided[idx]
            indent = len(lines[first]) - len(lines[first].lstrip())
            out.append(" " * indent + "...")
            row = last + 1
            continue
        out.append(lines[row])
        row += 1
    return Chunk(kind=decl.kind, start_line=decl.start_row + 1, end_line=decl.end_row + 1,
                 content="\n".join(out), symbol=decl.name, parent=decl.parent,
                 signature=decl.signature, doc=decl.doc, exported=decl.exported)


def _blocks(lines: list[str], covered: list[tuple[int, int]],
            limits: ChunkLimits) -> list[Chunk]:
    """Module-level code between declarations, grouped into blocks."""
    mask = bytearray(len(lines))
    for start, end in covered:
        mask[start:end + 1] = b"\x01" * (end - start + 1)
    chunks: list[Chunk] = []
    row = 0
    n = len(lines)
    while row < n:
        if mask[row] or not lines[row].strip():
            row += 1
            continue
        start = row
        last = row
        while row < n and not mask[row]:
            if lines[row].strip():
                last = row
            row += 1
        words = _WORDY.finditer("\n".join(lines[start:last + 1]))
        if next(words, None) is not None and next(words, None) is not None:
            chunks += _windows(lines, start, last, "block", limits)
    return chunks


def _windows(lines: list[str], start: int, end: int, kind: str,
             limits: ChunkLimits) -> list[Chunk]:
    size = limits.window if kind == "text" else limits.max_lines
    overlap = min(limits.overlap, size // 4) if kind == "text" else 0
    chunks = []
    for first, last in _spans(start, end, size, overlap):
        body = "\n".join(lines[first:last + 1])
        if body.strip():
            chunks.append(Chunk(kind=kind, start_line=first + 1, end_line=last + 1,
                                content=body))
    return chunks


def _heading(lines: list[str], row: int) -> tuple[int, str] | None:
    """Level and title of an ATX (``## Title``) or setext (``Title`` over ``===``/``---``)
    heading of level 1-3 starting at ``row``."""
    line = lines[row]
    match = _HEADING.match(line)
    if match:
        level = len(match.group(1))
        return (level, match.group(2).strip()) if level <= 3 else None
    if row + 1 < len(lines) and line.strip() and (row == 0 or not lines[row - 1].strip()) \
            and not line.lstrip().startswith(_NOT_SETEXT):
        under = _SETEXT.match(lines[row + 1])
        if under:
            return (1 if under.group(1).startswith("=") else 2), line.strip()
    return None


def _markdown(lines: list[str], limits: ChunkLimits) -> list[Chunk]:
    sections: list[tuple[int, int, str, str | None]] = []
    stack: list[tuple[int, str]] = []
    in_fence = False
    start, title, parent = 0, "", None
    for row, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        found = None if in_fence else _heading(lines, row)
        if found is not None:
            if row > start:
                sections.append((start, row - 1, title, parent))
            level, title = found
            while stack and stack[-1][0] >= level:
                stack.pop()
            parent = stack[-1][1] if stack else None
            stack.append((level, title))
            start = row
    sections.append((start, len(lines) - 1, title, parent))
    chunks: list[Chunk] = []
    for s, e, heading, par in sections:
        body = "\n".join(lines[s:e + 1])
        if not body.strip():
            continue
        for chunk in _windows(lines, s, e, "text", ChunkLimits(limits.max_lines, limits.overlap,
                                                               limits.max_lines)):
            chunk.kind = "section"
            chunk.symbol = heading or None
            chunk.parent = par
            chunks.append(chunk)
    return chunks
