"""What codenav never indexes, and why: default rules plus ``.gitignore``/``.codenavignore``.

``IgnoreRules.check(rel_path, is_dir)`` answers ``None`` (index it) or a skip reason. The
walker and the watcher share these rules, so an ignored tree is neither indexed nor watched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from codenav.index.defaults import default_reason

IGNORE_FILES = (".gitignore", ".codenavignore")


def _decide(spec: pathspec.GitIgnoreSpec, candidate: str, is_dir: bool) -> bool | None:
    """What the last matching pattern says about ``candidate`` (True: ignore), git's way:
    a pattern that only matched an ancestor directory does not count, because ancestors are
    checked on their own (so ``*`` then ``!*/`` then ``!*.py`` keeps the .py files)."""
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
    pathspec's regexes marks a directory separator)."""
    try:
        at = match.start("ps_d")
    except IndexError:
        return True
    return at == -1 or (is_dir and at == len(candidate) - 1)


@dataclass
class IgnoreRules:
    """Default rules plus the ignore files found so far, scoped by directory."""

    root: Path
    _specs: dict[str, pathspec.GitIgnoreSpec] = field(default_factory=dict)

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
            self._specs[rel_dir] = pathspec.GitIgnoreSpec.from_lines(lines)

    def _ignore_lines(self, rel_dir: str) -> list[str]:
        """The lines of the ignore files of ``rel_dir`` (read from disk)."""
        lines: list[str] = []
        base = self.root / rel_dir if rel_dir else self.root
        for name in IGNORE_FILES:
            path = base / name
            try:
                if path.is_file() and not path.is_symlink():
                    lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
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
            result = _decide(spec, sub, is_dir)
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
