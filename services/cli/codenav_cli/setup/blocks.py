"""A marked block in a text file the user also writes (CLAUDE.md, AGENTS.md, config.toml).

The block sits between a begin and an end line in the file's comment syntax. Setup appends
it (after one blank line) or replaces it in place; ``strip`` takes it out again, so that a
file setup only appended to gets its original bytes back, trailing newline or not.
"""

from __future__ import annotations

from dataclasses import dataclass

NOTE = "added by `codenav setup`; `codenav setup --remove` takes it out"


@dataclass(frozen=True)
class Style:
    """How a begin/end line is written in one file type."""

    begin: str
    end: str

    @classmethod
    def markdown(cls) -> Style:
        return cls(f"<!-- codenav:begin ({NOTE}) -->", "<!-- codenav:end -->")

    @classmethod
    def hash(cls) -> Style:
        return cls(f"# codenav:begin ({NOTE})", "# codenav:end")

    def block(self, body: str) -> str:
        return f"{self.begin}\n{body.rstrip(chr(10))}\n{self.end}\n"

    def span(self, text: str) -> tuple[int, int] | None:
        """(start, end) of the block, the end past its last newline; None when absent."""
        key = self.begin.split(" (", 1)[0]
        start = 0
        while True:
            at = text.find(key, start)
            if at < 0:
                return None
            if at == 0 or text[at - 1] == "\n":
                break
            start = at + 1
        end = text.find("\n" + self.end, at)
        if end < 0:
            return None
        end += 1 + len(self.end)
        if text.startswith("\n", end):
            end += 1
        return at, end


def upsert(text: str | None, body: str, style: Style) -> str:
    """``text`` with the block set to ``body``."""
    block = style.block(body)
    if not text:
        return block
    span = style.span(text)
    if span is not None:
        start, end = span
        if end == len(text) and not text.endswith("\n"):
            block = block[:-1]
        return text[:start] + block + text[end:]
    if text.endswith("\n"):
        return text + "\n" + block
    return text + "\n\n" + block[:-1]


def strip(text: str, style: Style) -> str:
    """``text`` without the block (unchanged when there is none)."""
    span = style.span(text)
    if span is None:
        return text
    start, end = span
    if end == len(text):  # at the end: take the blank line upsert put before it too
        if text.endswith("\n") and text[:start].endswith("\n\n"):
            return text[:start - 1]
        if not text.endswith("\n") and text[:start].endswith("\n\n"):
            return text[:start - 2]
    return text[:start] + text[end:]
