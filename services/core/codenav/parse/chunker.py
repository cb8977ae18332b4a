"""Cutting one file into chunks: AST declarations, markdown sections, or line windows."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from tree_sitter import Parser

from codenav.languages import STRUCTURED
from codenav.parse.imports import extract_imports
from codenav.parse.langs import CALLABLE, CLASS_LIKE, MEMBER_ONLY, SPECS
from codenav.parse.model import Chunk, ParsedFile, Symbol
from codenav.parse.structure import Decl, Walker

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_WORDY = re.compile(r"\w{2,}")


@dataclass(frozen=True)
class ChunkLimits:
    max_lines: int = 120
    overlap: int = 10
    window: int = 60


@cache
def parser_for(language: str) -> Parser:
    from tree_sitter_language_pack import get_parser

    return get_parser(STRUCTURED[language])  # type: ignore[arg-type]


def preload_grammars() -> None:
    """Load every grammar once (before forking workers, so children share them)."""
    for language in STRUCTURED:
        parser_for(language)


def parse_file(text: str, language: str, limits: ChunkLimits = ChunkLimits()) -> ParsedFile:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    result = ParsedFile(language=language, line_count=len(lines))
    if not lines:
        return result
    if language in STRUCTURED:
        try:
            _structured(text, lines, language, limits, result)
            return result
        except (RecursionError, ValueError) as exc:  # pathological input: fall back
            result.chunks.clear()
            result.symbols.clear()
            result.error = f"{type(exc).__name__}: {exc}"[:200]
    if language == "markdown":
        result.chunks = _markdown(lines, limits)
    else:
        result.chunks = _windows(lines, 0, len(lines) - 1, "text", limits)
    return result


def _structured(text: str, lines: list[str], language: str, limits: ChunkLimits,
                result: ParsedFile) -> None:
    spec = SPECS[language]
    src = text.encode("utf-8")
    tree = parser_for(language).parse(src)
    root = tree.root_node
    decls = Walker(spec, src).walk(root)
    result.imports = extract_imports(language, root)
    covered: list[tuple[int, int]] = []
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
    nested = [m for m in decl.members if m.kind not in MEMBER_ONLY]
    if decl.kind in CLASS_LIKE and nested:
        covered.append((decl.start_row, decl.end_row))
        result.chunks.append(_shell(decl, nested, lines))
        for member in decl.members:
            if member.kind in MEMBER_ONLY:
                result.symbols.append(_symbol(member))
            else:
                _emit(member, lines, limits, result, covered)
        return
    for member in decl.members:  # short class-likes keep their members inline
        result.symbols.append(_symbol(member))
    covered.append((decl.start_row, decl.end_row))
    result.chunks += _declaration_chunks(decl, lines, limits)


def _declaration_chunks(decl: Decl, lines: list[str], limits: ChunkLimits) -> list[Chunk]:
    start, end = decl.start_row, decl.end_row
    meta = dict(symbol=decl.name, parent=decl.parent, signature=decl.signature, doc=decl.doc,
                exported=decl.exported)
    if end - start + 1 <= limits.max_lines:
        return [Chunk(kind=decl.kind, start_line=start + 1, end_line=end + 1,
                      content="\n".join(lines[start:end + 1]), **meta)]  # type: ignore[arg-type]
    chunks = []
    step = limits.max_lines - limits.overlap
    part = 1
    row = start
    while row <= end:
        last = min(row + limits.max_lines - 1, end)
        if end - last < limits.overlap and last != end:
            last = end
        chunks.append(Chunk(kind=decl.kind, start_line=row + 1, end_line=last + 1,
                            content="\n".join(lines[row:last + 1]), part=part,
                            **meta))  # type: ignore[arg-type]
        if last == end:
            break
        row += step
        part += 1
    return chunks


def _shell(decl: Decl, members: list[Decl], lines: list[str]) -> Chunk:
    """The class with member bodies elided: header, fields, member signatures."""
    elided: list[tuple[int, int]] = []
    for member in members:
        body = member.body
        if body is None or member.kind not in CALLABLE | CLASS_LIKE:
            continue
        first = body.start_point[0] + (1 if body.start_point[0] == member.node.start_point[0]
                                       else 0)
        last = member.end_row if body.end_point[0] > body.start_point[0] and \
            lines[member.end_row].strip() in ("}", "};", "end") else body.end_point[0]
        if member.kind in CALLABLE and first <= last:
            elided.append((first, last))
        elif member.kind in CLASS_LIKE and first <= last:
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
        text = "\n".join(lines[start:last + 1])
        if len(_WORDY.findall(text)) >= 2:
            chunks += _windows(lines, start, last, "block", limits)
    return chunks


def _windows(lines: list[str], start: int, end: int, kind: str,
             limits: ChunkLimits) -> list[Chunk]:
    size = limits.window if kind == "text" else limits.max_lines
    overlap = min(limits.overlap, size // 4) if kind == "text" else 0
    chunks = []
    row = start
    while row <= end:
        last = min(row + size - 1, end)
        if end - last < size // 4:
            last = end
        body = "\n".join(lines[row:last + 1])
        if body.strip():
            chunks.append(Chunk(kind=kind, start_line=row + 1, end_line=last + 1, content=body))
        if last == end:
            break
        row = last + 1 - overlap
    return chunks


def _markdown(lines: list[str], limits: ChunkLimits) -> list[Chunk]:
    sections: list[tuple[int, int, str, str | None]] = []
    stack: list[tuple[int, str]] = []
    in_fence = False
    start, title, parent = 0, "", None
    for row, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if match and len(match.group(1)) <= 3:
            if row > start:
                sections.append((start, row - 1, title, parent))
            level = len(match.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            parent = stack[-1][1] if stack else None
            title = match.group(2).strip()
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
