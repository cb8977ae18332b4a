"""Reading commits straight from a git repository: refs, trees and blobs, with no checkout.

A commit is indexed from its tree (``git ls-tree -r``) and its blobs, streamed through one
long-lived ``git cat-file --batch`` per reader, so nothing is written to disk and a bare
mirror works as well as a checkout. Every git command runs with ``safe.directory=*`` (the
repository may belong to another user: the store's, the CI runner's) and with no pager,
no prompt and a timeout.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from codenav.errors import NotFound, Unavailable

GIT_TIMEOUT_S = 120.0
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C"}
SYMLINK_MODE = "120000"
SUBMODULE_MODE = "160000"


@dataclass(frozen=True)
class TreeEntry:
    """One file of a commit's tree."""

    path: str
    mode: str
    sha: str
    size: int


def git_dir(root: Path) -> Path | None:
    """The git directory of ``root``: its ``.git`` (a checkout), or ``root`` itself when it
    is a bare repository (a mirror); None when it is neither."""
    from codenav.index.gitinfo import git_dir as checkout_git_dir

    found = checkout_git_dir(root)
    if found is not None:
        return found
    if is_bare(root):
        return root
    return None


def is_bare(root: Path) -> bool:
    """A bare repository: HEAD, objects/ and refs/ right in ``root``, and no ``.git``."""
    return (root / "HEAD").is_file() and (root / "objects").is_dir() and \
        (root / "refs").is_dir() and not (root / ".git").exists()


def _git(gdir: Path, *args: str, check: bool = True,
         timeout: float = GIT_TIMEOUT_S) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", f"--git-dir={gdir}", *args],
            capture_output=True, timeout=timeout, check=False,
            env={**os.environ, **_ENV})
    except FileNotFoundError:
        raise Unavailable("git is not installed here", hint="install git for the worker") \
            from None
    except subprocess.TimeoutExpired:
        raise Unavailable(f"git {args[0]} in {gdir} took over {timeout:.0f}s") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise NotFound(f"git {args[0]} failed in {gdir}: " + (message[-1] if message else
                                                                 f"exit {done.returncode}"))
    return done.stdout


def resolve(gdir: Path, rev: str) -> str:
    """The commit ``rev`` (a branch, tag, commit id, ``HEAD~2``...) names."""
    if not rev or rev.startswith("-") or "\0" in rev:
        raise NotFound(f"not a revision: {rev!r}")
    out = _git(gdir, "rev-parse", "--verify", "--quiet", "--end-of-options",
               f"{rev}^{{commit}}", check=False).decode("ascii", "replace").strip()
    if len(out) < 40:
        raise NotFound(f"no commit {rev!r} in {gdir}",
                       hint="fetch it first, or name a branch, tag or commit that exists")
    return out


def head_branch(gdir: Path) -> str | None:
    """The branch HEAD names (``main``), in a bare repository or a checkout."""
    out = _git(gdir, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    name = out.decode("utf-8", "replace").strip()
    return name or None


def branches_and_tags(gdir: Path) -> dict[str, str]:
    """Every branch (``main``, ``release/1.2``) and tag (``v1.0``) with the commit it names
    (annotated tags peeled). A tag named like a branch is listed as ``tags/NAME``."""
    out = _git(gdir, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)",
               "refs/heads", "refs/tags")
    heads: dict[str, str] = {}
    tags: dict[str, str] = {}
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        parts = line.split("\0")
        if len(parts) != 3:
            continue
        ref, obj, peeled = parts
        if ref.startswith("refs/heads/"):
            heads[ref.removeprefix("refs/heads/")] = peeled or obj
        elif ref.startswith("refs/tags/"):
            tags[ref.removeprefix("refs/tags/")] = peeled or obj
    found = dict(heads)
    for name, commit in tags.items():
        found["tags/" + name if name in heads else name] = commit
    return found


def matching(refs: dict[str, str], patterns: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The refs a follow pattern names: exact names, or globs (``release/*``)."""
    return {name: commit for name, commit in refs.items()
            if any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)}


def ls_tree(gdir: Path, commit: str) -> list[TreeEntry]:
    """Every file of ``commit``'s tree (recursively), with its mode, blob id and size."""
    out = _git(gdir, "ls-tree", "-r", "-z", "-l", "--full-tree", commit)
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _tab, raw_path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4:
            continue
        mode, kind, sha, size = (f.decode("ascii", "replace") for f in fields)
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind == "commit":  # a submodule: its commit, not a blob
            entries.append(TreeEntry(path, SUBMODULE_MODE, sha, 0))
        elif kind == "blob":
            entries.append(TreeEntry(path, mode, sha, int(size) if size.isdigit() else 0))
    return entries


def changed_paths(gdir: Path, old: str, new: str) -> list[str]:
    """Paths whose blobs differ between two commits (added, modified, deleted)."""
    out = _git(gdir, "diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new)
    return sorted({p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p})


def recent_changes(gdir: Path, commit: str, limit: int) -> list[list[str]]:
    """The files each of the last ``limit`` commits up to ``commit`` changed, newest first
    (merges left out: their changes are their parents'; renames as a delete and an add)."""
    out = _git(gdir, "log", "-z", "--no-merges", "--no-renames", "--name-only",
               "--format=%x01", f"--max-count={limit}", commit, "--")
    changes = []
    for block in out.split(b"\x01")[1:]:
        body = block.lstrip(b"\0").removeprefix(b"\n")
        changes.append([p.decode("utf-8", "surrogateescape") for p in body.split(b"\0") if p])
    return changes


class BlobReader:
    """Blobs by id through one ``git cat-file --batch`` process (started on first use)."""

    def __init__(self, gdir: Path) -> None:
        self.gdir = gdir
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                ["git", "-c", "safe.directory=*", f"--git-dir={self.gdir}", "cat-file",
                 "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env={**os.environ, **_ENV})
        return self._proc

    def read(self, sha: str, limit: int | None = None) -> bytes | None:
        """The blob's bytes (None: no such blob). With ``limit``, a larger blob is read
        through but only its first ``limit + 1`` bytes are returned."""
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(sha.encode("ascii") + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline()
        if not header or header.endswith(b"missing\n"):
            if not header:
                self.close()
            return None
        try:
            size = int(header.split()[2])
        except (IndexError, ValueError):
            self.close()
            raise Unavailable(f"git cat-file in {self.gdir} answered {header[:80]!r}") from None
        keep = size if limit is None else min(size, limit + 1)
        data = proc.stdout.read(keep)
        left = size - keep + 1  # the rest of the blob, and its newline
        while left > 0:
            left -= len(proc.stdout.read(min(left, 1 << 20)) or b"x" * left)
        return data

    def close(self) -> None:
        if self._proc is not None:
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._proc = None

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
