"""Walking a repository root: which files to index, which to skip and why.

Symlinks are never followed (a link is recorded as skipped), so a loop or a link out of the
root cannot pull foreign files in. Paths are repo-relative and POSIX. A name that is not
valid UTF-8 or holds a line break cannot be stored or shown as a path: it is skipped
(``bad_name``), and so is everything under a folder of such a name.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codenav.index.defaults import name_problem, shown
from codenav.index.ignore import IgnoreRules


@dataclass(frozen=True)
class FileEntry:
    path: str
    size: int
    mtime_ns: int
    sha: str = ""
    """The git blob id, when the file comes from a commit (read from git, not disk)."""


@dataclass(frozen=True)
class Skip:
    path: str
    reason: str
    detail: str = ""
    size: int = 0


@dataclass
class WalkResult:
    files: list[FileEntry]
    skipped: list[Skip]
    gitignored: int = 0
    """How many paths .gitignore/.codenavignore excluded (counted, not listed)."""


# Skips recorded per entry; gitignored paths are the user's own choice and are only counted.
_RECORDED = {"ignored_dir", "lock_file", "secret", "binary", "symlink", "too_large",
             "unreadable", "bad_name"}


def walk(root: Path, max_file_bytes: int, rules: IgnoreRules | None = None) -> WalkResult:
    rules = rules or IgnoreRules.for_root(root)
    files: list[FileEntry] = []
    skipped: list[Skip] = []
    gitignored = 0
    for item in _iter(root, "", rules, max_file_bytes):
        if isinstance(item, FileEntry):
            files.append(item)
        elif item.reason in _RECORDED:
            skipped.append(item)
        else:
            gitignored += 1
    return WalkResult(files=files, skipped=skipped, gitignored=gitignored)


def _iter(root: Path, rel_dir: str, rules: IgnoreRules,
          max_file_bytes: int) -> Iterator[FileEntry | Skip]:
    rules.enter_dir(rel_dir)
    base = root / rel_dir if rel_dir else root
    try:
        with os.scandir(base) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        yield Skip(rel_dir or ".", "unreadable", exc.strerror or str(exc))
        return
    for entry in entries:
        name = entry.name
        rel = f"{rel_dir}/{name}" if rel_dir else name
        problem = name_problem(name)
        if problem:  # a folder's skip ends in "/", as every skipped folder's does
            folder = entry.is_dir(follow_symlinks=False)
            yield Skip(shown(rel) + ("/" if folder else ""), "bad_name", problem)
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            yield Skip(rel, "unreadable", exc.strerror or str(exc))
            continue
        if stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(entry.path)
            except OSError:
                target = "?"
            yield Skip(rel, "symlink", f"-> {target}")
            continue
        if stat.S_ISDIR(st.st_mode):
            reason = rules.check(rel, is_dir=True)
            if reason:
                yield Skip(rel + "/", reason)
                continue
            yield from _iter(root, rel, rules, max_file_bytes)
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        reason = rules.check(rel, is_dir=False)
        if reason:
            yield Skip(rel, reason, size=st.st_size)
            continue
        if st.st_size > max_file_bytes:
            yield Skip(rel, "too_large", f"{st.st_size} bytes > {max_file_bytes}", st.st_size)
            continue
        yield FileEntry(rel, st.st_size, st.st_mtime_ns)


def resolve_inside(root: Path, rel_path: str) -> Path:
    """``root/rel_path`` if it names a place inside ``root`` without leaving it through
    ``..``, an absolute path, or a symlink; raises ``ValueError`` otherwise."""
    if not rel_path or "\0" in rel_path or rel_path.startswith(("/", "\\")):
        raise ValueError("path must be relative to the repository root")
    parts = rel_path.replace("\\", "/").split("/")
    if any(p in ("..",) for p in parts) or ":" in parts[0]:
        raise ValueError("path must stay inside the repository root")
    candidate = root.joinpath(*[p for p in parts if p not in ("", ".")])
    real_root = root.resolve()
    real = candidate.resolve()
    if real != real_root and real_root not in real.parents:
        raise ValueError("path must stay inside the repository root")
    return candidate
