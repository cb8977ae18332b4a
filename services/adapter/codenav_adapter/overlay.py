"""The checkout the adapter runs in, and its overlay on the server: the uncommitted edits
(modified, added, deleted files) every tool call of this session is answered with.

Before each call (without a ``ref``) the adapter re-checks the checkout, cheaply: ``git
status`` lists what changed since the index, only those files are hashed, and the
differences from the overlay's base (the server's tree of the checkout's commit, else of
its merge-base with a ref the server follows, else the repository's default tree) are sent
when they moved since the last call. Blobs go only when the server lacks them. Files
codenav never indexes (ignored by git or ``.codenavignore``, secrets, binaries, lock files,
files over the size limit) never leave the machine.

Light: git, hashlib and the API client; nothing here writes to stdout.
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import stat
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from codenav.client import ApiClient
from codenav.config import Settings
from codenav.errors import CodenavError, Gone
from codenav.index.blob import git_blob_sha, looks_binary
from codenav.index.defaults import name_problem, path_reason

log = logging.getLogger("codenav.adapter")

GIT_TIMEOUT_S = 20.0
MAX_CANDIDATES = 32
"""Commits named to the server as possible bases (the checkout's, then merge-bases)."""
UPLOAD_BYTES = 16 * 1024 * 1024
"""Blobs per upload request (the server takes up to 64 MiB)."""
SEND_ROUNDS = 3


class GitError(CodenavError):
    code = "git"


CODENAVIGNORE = ".codenavignore"


def _is_codenavignore(path: str) -> bool:
    return path == CODENAVIGNORE or path.endswith("/" + CODENAVIGNORE)


def git(root: Path, *args: str, check: bool = True) -> bytes:
    """``git -C root args`` (no optional locks: never in the way of the developer's git)."""
    try:
        done = subprocess.run(["git", "--no-optional-locks", "-C", str(root), *args],
                              capture_output=True, timeout=GIT_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} failed: {exc}") from None
    if check and done.returncode != 0:
        raise GitError(f"git {args[0]} failed: "
                       f"{done.stderr.decode(errors='replace').strip()[:300]}")
    return done.stdout if done.returncode == 0 else b""


def find_root(settings: Settings, cwd: Path | None = None) -> Path | None:
    """The checkout: ``CODENAV_ROOT``, else the git root of the working directory."""
    start = Path(settings.root).expanduser() if settings.root else (cwd or Path.cwd())
    try:
        top = git(start, "rev-parse", "--show-toplevel").decode().strip()
    except GitError:
        return None
    return Path(top) if top else None


@dataclass
class Local:
    """The checkout now: path -> (blob id, size) of every file codenav would index."""

    files: dict[str, tuple[str, int]]
    dirty: set[str]
    """Paths that differ from git's index (changed, added, deleted): only these were read."""
    unindexable: set[str]
    """Files present but not indexable (too large, binary, not a regular file)."""


@dataclass
class Checkout:
    root: Path
    max_file_bytes: int
    _index_path: Path | None = None
    _index_key: tuple[int, int] | None = None
    _tracked: dict[str, tuple[str, int]] = field(default_factory=dict)
    _tracked_ignore_file: bool = False
    """Whether git's index holds a ``.codenavignore`` (in any directory)."""
    _hashed: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    """path -> (mtime_ns, size, blob id): a dirty file is read again only when it moved."""

    def head(self) -> str | None:
        out = git(self.root, "rev-parse", "--verify", "-q", "HEAD", check=False)
        text = out.decode().strip()
        return text or None

    def candidates(self, head: str | None, commits: list[str]) -> list[str]:
        """The commits the server may hold a tree of, best first: HEAD, its merge-bases
        with ``commits`` (the server's refs that this clone has), its first parents."""
        if head is None:
            return []
        out = [head]
        for commit in commits:
            if not self._has(commit):
                continue  # this clone has not fetched it
            base = git(self.root, "merge-base", head, commit, check=False).decode().strip()
            if base and base not in out:
                out.append(base)
        for line in git(self.root, "rev-list", "--first-parent", f"--max-count={MAX_CANDIDATES}",
                        head, check=False).decode().split():
            if line not in out:
                out.append(line)
        return out[:MAX_CANDIDATES]

    def _has(self, commit: str) -> bool:
        try:
            done = subprocess.run(["git", "--no-optional-locks", "-C", str(self.root),
                                   "cat-file", "-e", f"{commit}^{{commit}}"],
                                  capture_output=True, check=False, timeout=GIT_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0

    def _tracked_files(self) -> dict[str, tuple[str, int]]:
        """path -> (blob id, 0) of git's index, read again only when the index changed."""
        if self._index_path is None:  # .git may be a file (a worktree, a submodule)
            where = git(self.root, "rev-parse", "--git-path", "index").decode().strip()
            self._index_path = (self.root / where) if where else self.root / ".git" / "index"
        try:
            st = self._index_path.stat()
            key = (st.st_mtime_ns, st.st_size)
        except OSError:
            key = None
        if key is not None and key == self._index_key:
            return self._tracked
        tracked: dict[str, tuple[str, int]] = {}
        for entry in git(self.root, "ls-files", "-s", "-z").split(b"\0"):
            if not entry:
                continue
            meta, _tab, raw = entry.partition(b"\t")
            mode, sha, _stage = meta.decode().split()
            if mode in ("160000", "120000"):  # submodules and symlinks are not indexed
                continue
            tracked[raw.decode("utf-8", "surrogateescape")] = (sha, 0)
        self._tracked, self._index_key = tracked, key
        self._tracked_ignore_file = any(_is_codenavignore(p) for p in tracked)
        return tracked

    def _changed(self) -> set[str]:
        """Tracked paths whose working copy differs from git's index, and untracked files
        that neither git's ignore rules nor a ``.codenavignore`` (in any directory, as the
        walker reads them) exclude."""
        out: set[str] = set()
        status = git(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=no",
                     "--no-renames", "--ignore-submodules")
        for entry in status.split(b"\0"):
            if len(entry) > 3:
                out.add(entry[3:].decode("utf-8", "surrogateescape"))
        untracked = self._untracked("--exclude-standard")
        self._tracked_files()  # current (a stat when the index did not change)
        if self._tracked_ignore_file or any(_is_codenavignore(p) for p in untracked):
            # git reads one per-directory ignore file a listing: the files neither rule
            # set excludes are the untracked files of both listings
            untracked &= self._untracked(f"--exclude-per-directory={CODENAVIGNORE}")
        return out | untracked

    def _untracked(self, excludes: str) -> set[str]:
        return {raw.decode("utf-8", "surrogateescape") for raw in
                git(self.root, "ls-files", "-o", "-z", excludes).split(b"\0") if raw}

    def state(self) -> Local:
        files = dict(self._tracked_files())
        dirty = self._changed()
        unindexable: set[str] = set()
        for path in dirty:
            files.pop(path, None)
            try:
                st = os.lstat(self.root / path)
            except OSError:
                continue  # deleted
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_file_bytes:
                unindexable.add(path)
                continue
            seen = self._hashed.get(path)
            if seen is not None and seen[:2] == (st.st_mtime_ns, st.st_size):
                files[path] = (seen[2], st.st_size)
                continue
            data = self._read(path)
            if data is None or looks_binary(data):
                unindexable.add(path)
                continue
            sha = git_blob_sha(data)
            self._hashed[path] = (st.st_mtime_ns, st.st_size, sha)
            files[path] = (sha, len(data))
        for gone in set(self._hashed) - dirty:
            del self._hashed[gone]
        return Local(files, dirty, unindexable)

    def _read(self, path: str) -> bytes | None:
        try:
            fd = os.open(self.root / path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read(self.max_file_bytes + 1)


def differences(local: Local, base: dict[str, str], skipped: set[str]) -> list[list[Any]]:
    """[path, blob id or None (deleted), size] for every file where the checkout and the
    base differ, as codenav would index them."""
    out: list[list[Any]] = []
    for path, (sha, size) in local.files.items():
        held = base.get(path)
        if held == sha:
            continue
        if held is None and path in skipped and path not in local.dirty:
            continue  # the base skipped this very file
        if path_reason(path) or name_problem(path):
            continue  # never indexed, never sent (a name that is not UTF-8 cannot be)
        out.append([path, sha, size])
    for path in base:
        if path not in local.files:
            out.append([path, None, 0])
    out.sort(key=lambda item: item[0])
    return out


@dataclass
class Base:
    tree: int
    files: dict[str, str]
    skipped: set[str]


class OverlaySession:
    """This adapter's overlay: opened on the first call, re-based when HEAD moves, sent
    again when the checkout's differences move, made again when the server dropped it."""

    def __init__(self, settings: Settings, checkout: Checkout) -> None:
        self.settings = settings
        self.checkout = checkout
        self.id: str | None = None
        self.head: str | None = None
        self.base: Base | None = None
        self.sent: list[list[Any]] | None = None
        self.off: str | None = None
        """Why this session sends no overlay (None: it does)."""
        self.unrelated: str | None = None
        """The HEAD at which this checkout proved unrelated to the server's repository."""
        self.checked_local = False
        self.last: dict[str, Any] = {}
        self.local: Local | None = None
        """The checkout as last read (its blobs are sent from it when the server asks)."""

    def reset(self) -> None:
        self.id, self.sent = None, None

    async def ensure(self, client: ApiClient) -> str | None:
        """The overlay id to send with a call, after bringing the server up to date."""
        if self.off:
            return None
        if not self.checked_local:
            await self._check_local_stack(client)
            if self.off:
                return None
        head = await anyio.to_thread.run_sync(self.checkout.head)
        if self.unrelated is not None and self.unrelated == (head or ""):
            return None  # looked again when HEAD moves
        if self.id is None or head != self.head:
            await self._open(client, head)
            if self.id is None:
                return None
        assert self.id is not None and self.base is not None
        want = await self._differences()
        if want != self.sent:
            await self._send(client, want)
        return self.id

    async def _check_local_stack(self, client: ApiClient) -> None:
        """With no CODENAV_URL the local stack may index this very checkout (its watcher
        sees every edit): then there is nothing to overlay."""
        self.checked_local = True
        if self.settings.url:
            return
        listed = await client.request("GET", "/v1/repos")
        here = self.checkout.root.resolve()
        for repo in listed.get("repos", []):
            root = repo.get("root") or ""
            if repo.get("source") == "worktree" and root and Path(root).resolve() == here:
                self.off = "the local stack indexes this checkout itself"
                return

    async def _open(self, client: ApiClient, head: str | None) -> None:
        commits: list[str] = []
        listed = await client.request("GET", "/v1/repos")
        names = [self.settings.repo] if self.settings.repo else \
            [r["name"] for r in listed.get("repos", [])][:20]
        for name in names:
            try:
                refs = await client.request("GET", f"/v1/repos/{name}/refs")
            except CodenavError:
                continue
            default = refs.get("default_ref")
            ordered = sorted(refs.get("refs", []), key=lambda r: r.get("name") != default)
            commits += [r["commit"] for r in ordered if r.get("commit")]
        candidates = await anyio.to_thread.run_sync(self.checkout.candidates, head, commits)
        opened = await client.request("POST", "/v1/overlays", {
            "repo": self.settings.repo or None, "commits": candidates,
            "checkout": str(self.checkout.root)})
        tree = int(opened["base"]["tree"])
        if self.base is None or self.base.tree != tree:
            got = await client.request("GET", f"/v1/overlays/{opened['overlay']}/base")
            self.base = Base(tree, {p: s for p, s in got["files"]}, set(got["skipped"]))
        if not opened["base"].get("matched", True):
            why = await self._unlike(opened["repo"])
            if why:
                self.unrelated, self.id = head or "", None
                log.warning("local edits are not sent: %s", why)
                await client.request("DELETE", f"/v1/overlays/{opened['overlay']}")
                return
        self.unrelated = None
        self.id, self.head, self.sent = opened["overlay"], head, None
        self.last = {"base": opened["base"]}
        log.info("overlay %s on %s", str(self.id)[:8], opened["base"].get("chosen"))

    async def _unlike(self, repo: str) -> str | None:
        """Why this checkout is not the repository whose default tree the server chose (it
        shares no indexed commit): most of that tree's paths must be here, else the whole
        checkout would be sent as edits of an unrelated tree."""
        assert self.base is not None
        local = await anyio.to_thread.run_sync(self.checkout.state)
        held = sum(1 for path in self.base.files if path in local.files)
        if not self.base.files or held * 2 >= len(self.base.files):
            return None
        return (f"{self.checkout.root} shares no indexed commit with repository {repo!r} and "
                f"holds only {held} of its {len(self.base.files)} files; set CODENAV_ROOT "
                "to its checkout (or CODENAV_OVERLAY=0)")

    async def _send(self, client: ApiClient, want: list[list[Any]]) -> None:
        assert self.id is not None
        for _round in range(SEND_ROUNDS):
            answer = await client.request("PUT", f"/v1/overlays/{self.id}", {"files": want})
            missing = answer.get("missing")
            if not missing:
                self.sent = want
                self.last = answer
                return
            await self._upload(client, set(missing))
            want = await self._differences()
        raise GitError("the checkout kept changing while its files were sent")

    async def _differences(self) -> list[list[Any]]:
        assert self.base is not None
        self.local = await anyio.to_thread.run_sync(self.checkout.state)
        return differences(self.local, self.base.files, self.base.skipped)

    async def _upload(self, client: ApiClient, missing: set[str]) -> None:
        """Send the blobs the server lacks, read again from disk (a file that changed since
        is sent as it is now; the next round lists it under its new id)."""
        assert self.id is not None
        local = self.local if self.local is not None else \
            await anyio.to_thread.run_sync(self.checkout.state)
        by_sha = {sha: path for path, (sha, _size) in local.files.items() if sha in missing}
        batch = io.BytesIO()
        tar = tarfile.open(fileobj=batch, mode="w:")
        size = 0
        for _sha, path in sorted(by_sha.items()):
            data = self.checkout._read(path)
            if data is None or len(data) > self.checkout.max_file_bytes:
                continue
            actual = git_blob_sha(data)
            info = tarfile.TarInfo(actual)
            info.size, info.mtime = len(data), int(time.time())
            tar.addfile(info, io.BytesIO(data))
            size += len(data)
            if size >= UPLOAD_BYTES:
                tar.close()
                await self._post(client, batch.getvalue())
                batch = io.BytesIO()
                tar = tarfile.open(fileobj=batch, mode="w:")
                size = 0
        tar.close()
        if size:
            await self._post(client, batch.getvalue())

    async def _post(self, client: ApiClient, data: bytes) -> None:
        await client.request("POST", f"/v1/overlays/{self.id}/blobs", content=gzip.compress(
            data, 1), headers={"Content-Type": "application/x-tar", "Content-Encoding": "gzip"})


async def overlay_id(session: OverlaySession | None, client: ApiClient) -> tuple[str | None,
                                                                                 str | None]:
    """(overlay id, None) to send with a call, or (None, why there is none this time)."""
    if session is None:
        return None, None
    for _attempt in range(2):
        try:
            return await session.ensure(client), None
        except Gone:
            session.reset()
        except CodenavError as exc:
            log.warning("local edits not sent: %s", exc.message)
            return None, exc.message
    return None, "the server dropped the overlay twice in a row"
