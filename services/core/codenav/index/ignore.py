"""What codenav never indexes, and why: default rules plus ``.gitignore``/``.codenavignore``.

``IgnoreRules.check(rel_path, is_dir)`` answers ``None`` (index it) or a skip reason. The
walker and the watcher share these rules, so an ignored tree is neither indexed nor watched.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from codenav.index.defaults import default_reason

IGNORE_FILES = (".gitignore", ".codenavignore")


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def _every_dir_below(line: str) -> str:
    """``X/**/`` as ``X/**/*/``: git reads both as every directory below X (at any depth),
    pathspec reads the first as X's own directory separator, so ``dir/**``, ``!dir/**/``,
    ``!dir/**/*.go`` (keep only the Go files) would lose the subdirectories."""
    stripped = line.rstrip(" ")
    if stripped.endswith("/**/") and len(stripped.lstrip("!")) > len("/**/"):
        return stripped + "*/"
    return line


def _any_pattern(spec: pathspec.GitIgnoreSpec) -> re.Pattern[str] | None:
    """One regex that matches wherever any pattern of ``spec`` does (None when the patterns
    cannot be joined): most paths match no pattern, and one search tells so instead of a
    search per pattern."""
    regexes = [r for p in spec.patterns if p.include is not None
               and (r := getattr(p, "regex", None)) is not None]
    if not regexes or len({r.flags for r in regexes}) != 1:
        return None
    joined = "|".join(f"(?:{_NAMED_GROUP.sub('(?:', r.pattern)})" for r in regexes)
    try:
        return re.compile(joined, regexes[0].flags)
    except re.error:
        return None


def _decide(spec: pathspec.GitIgnoreSpec, candidate: str, is_dir: bool,
            any_pattern: re.Pattern[str] | None = None) -> bool | None:
    """What the last matching pattern says about ``candidate`` (True: ignore), git's way:
    a pattern that only matched an ancestor directory does not count, because ancestors are
    checked on their own (so ``*`` then ``!*/`` then ``!*.py`` keeps the .py files).
    ``any_pattern`` (``_any_pattern(spec)``) answers first when no pattern matches."""
    if any_pattern is not None and any_pattern.search(candidate) is None:
        return None
    result = None
    for pattern in spec.patterns:
        regex = getattr(pattern, "regex", None)
        if pattern.include is None or regex is None:
            continue
        if any(_counts(m, candidate, is_dir) for m in regex.finditer(candidate)):
            result = bool(pattern.include)
    return result


def _counts(match: re.Match[str], candidate: str, is_dir: bool) -> bool:
    """A match counts unless it only matched an ancestor directory (the ``ps_d`` group of
    pathspec's regexes marks a directory separator) or, for ``X/**``, X itself."""
    try:
        at = match.start("ps_d")
    except IndexError:  # ``X/**`` (``^X/``): what is inside X, not X itself
        return not (is_dir and match.end() == len(candidate) and match.group().endswith("/"))
    return at == -1 or (is_dir and at == len(candidate) - 1)


@dataclass
class IgnoreRules:
    """Default rules plus the ignore files found so far, scoped by directory."""

    root: Path
    _specs: dict[str, pathspec.GitIgnoreSpec] = field(default_factory=dict)
    _any: dict[str, re.Pattern[str] | None] = field(default_factory=dict)

    @classmethod
    def for_root(cls, root: Path) -> IgnoreRules:
        rules = cls(root=root)
        exclude = root / ".git" / "info" / "exclude"
        lines: list[str] = []
        if exclude.is_file():
            lines += exclude.read_text(encoding="utf-8", errors="replace").splitlines()
        rules._load_dir("", extra=lines)
        return rules

    def _load_dir(self, rel_dir: str, extra: list[str] | None = None) -> None:
        lines = list(extra or []) + self._ignore_lines(rel_dir)
        if lines:
            spec = self._specs[rel_dir] = pathspec.GitIgnoreSpec.from_lines(
                [_every_dir_below(line) for line in lines])
            self._any[rel_dir] = _any_pattern(spec)

    def _ignore_lines(self, rel_dir: str) -> list[str]:
        """The lines of the ignore files of ``rel_dir`` (read from disk)."""
        lines: list[str] = []
        base = os.path.join(self.root, rel_dir) if rel_dir else str(self.root)
        for name in IGNORE_FILES:
            path = os.path.join(base, name)
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):  # a link is never followed
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines += f.read().splitlines()
            except OSError:
                continue
        return lines

    def enter_dir(self, rel_dir: str) -> None:
        """Load the ignore files of ``rel_dir`` (call before checking its entries)."""
        if rel_dir and rel_dir not in self._specs:
            self._load_dir(rel_dir)

    def load_ancestors(self, rel_path: str) -> None:
        """Load ignore files of every directory above ``rel_path`` (for single-path checks)."""
        parts = rel_path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            self.enter_dir("/".join(parts[:i]))

    def gitignored(self, rel_path: str, is_dir: bool) -> bool:
        ignored = False
        candidate = rel_path + "/" if is_dir else rel_path
        for base, spec in self._specs.items():
            if base:
                if not candidate.startswith(base + "/"):
                    continue
                sub = candidate[len(base) + 1:]
            else:
                sub = candidate
            result = _decide(spec, sub, is_dir, self._any.get(base))
            if result is not None:
                ignored = result
        return ignored

    def check(self, rel_path: str, is_dir: bool) -> str | None:
        """``None`` if ``rel_path`` should be indexed (or walked), else the skip reason."""
        parts = rel_path.split("/")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            reason = default_reason(part, is_dir or not last)
            if reason and (not last or is_dir):
                return "ignored_dir"
            if reason:
                return reason
        if self.gitignored(rel_path, is_dir):
            return "gitignored"
        return None

    def check_path(self, rel_path: str, is_dir: bool) -> str | None:
        """Like ``check`` for a path seen alone (a watcher event): ancestors are checked too."""
        self.load_ancestors(rel_path)
        parts = rel_path.split("/")
        for i in range(1, len(parts)):
            if self.gitignored("/".join(parts[:i]), True):
                return "gitignored"
        return self.check(rel_path, is_dir)


class TreeIgnoreRules(IgnoreRules):
    """The same rules for a commit's tree (no disk): ignore files are read from the tree's
    own ``.gitignore`` and ``.codenavignore`` blobs (``texts``: path -> content)."""

    def __init__(self, texts: dict[str, str]) -> None:
        super().__init__(root=Path("/nonexistent"))
        self._texts = texts
        self._load_dir("")

    def _ignore_lines(self, rel_dir: str) -> list[str]:
        lines: list[str] = []
        for name in IGNORE_FILES:
            text = self._texts.get(f"{rel_dir}/{name}" if rel_dir else name)
            if text is not None:
                lines += text.splitlines()
        return lines
