"""Refs: named branches, tags and commits of a repository, each pointing at a commit tree.

A repository follows refs by pattern (``main``, ``release/*``: ``repos.follow``) from its
git directory (a checkout's ``.git`` or a bare mirror), and any ref can be asked for once
(``codenav index --ref``). ``sync`` moves every followed or asked-for ref whose commit
changed: the commit is indexed from git (``codenav.index.commits``; only blobs the index
lacks are parsed) and the ref is moved in one transaction, the tree it left kept in the
ref's history when the repository keeps ``keep`` earlier commits, else collected. Collecting
a tree removes what only it used: its files, skips and graph, then contents, texts and
vectors no other tree holds (``codenav.repos.collect``).

A bare repository is a ``git`` source: it has no working tree, its default ref is the
branch HEAD names, and it follows that branch unless told otherwise.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from codenav import repos, roots
from codenav.access import Scope
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.errors import InvalidRequest, NotFound, UserError
from codenav.index import commits, gitread
from codenav.index.reconcile import refusal

log = logging.getLogger("codenav.refs")

MAX_NAME = 255
_BAD = ("..", "//", "@{", "\\", " ", "~", "^", ":", "?", "*", "[")


def check_name(name: str) -> str:
    """A ref name as git allows it (``main``, ``release/1.2``, ``v1.0``), or ``InvalidRequest``."""
    clean = name.strip().removeprefix("refs/heads/").removeprefix("refs/tags/")
    if not clean or len(clean) > MAX_NAME or clean.startswith(("-", "/", ".")) or \
            clean.endswith(("/", ".lock", ".")) or any(b in clean for b in _BAD) or \
            any(ord(c) < 32 or ord(c) == 127 for c in clean):
        raise InvalidRequest(f"invalid ref name {name!r}",
                             hint="a branch, tag or commit name as git writes it")
    return clean


def check_pattern(pattern: str) -> str:
    """A follow pattern: a ref name, or one with ``*`` globs (``release/*``)."""
    clean = pattern.strip()
    check_name(clean.replace("*", "x"))
    return clean


@dataclass
class RefMove:
    name: str
    commit: str
    tree_id: int
    previous: str | None = None
    summary: commits.CommitSummary | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ref": self.name, "commit": self.commit,
                               "previous": self.previous}
        s = self.summary
        if s is not None:
            out.update({"files": s.files, "changed": s.changed, "parsed": s.parsed,
                        "reused": s.reused, "seconds": round(s.seconds, 3)})
        return out


@dataclass
class SyncSummary:
    moved: list[RefMove] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Refs asked for that git does not have (or names it refuses), with why."""
    collected: dict[str, int] = field(default_factory=dict)
    refused: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"moved": [m.to_json() for m in self.moved],
                               "dropped": self.dropped, "collected": self.collected,
                               "seconds": round(self.seconds, 3)}
        if self.failed:
            out["failed"] = self.failed
        if self.refused:
            out["refused"] = self.refused
        return out


def sync(settings: Settings, repo_id: int, asked: dict[str, str] | None = None,
         job_id: str | None = None, stop: threading.Event | None = None) -> SyncSummary:
    """Move the repository's followed refs, and the refs ``asked`` for (name -> the
    revision it should name; "" for the ref's own commit), to their commits in git."""
    started = time.monotonic()
    out = SyncSummary()
    with connect(settings, application_name="codenav-refs") as conn:
        repo = repos.get(conn, repo_id)
        if repo is None:
            out.refused = f"no repository with id {repo_id}"
            return out
        refused = refusal(settings, repo)
        if refused:
            out.refused = refused
            conn.execute(q.RUN_REFUSED, (repo_id, ",".join(asked or {}) or "*", "refs",
                                         job_id, refused[:500]))
            return out
        root = Path(roots.resolve(repo.root))
        gdir = gitread.git_dir(root)
        if gdir is None:
            out.refused = f"{repo.root} is not a git repository: it has no refs to index"
            return out
        if gitread.is_bare(root):
            repo = _adopt_git_source(conn, repo, gdir)
        wanted = _wanted(gdir, repo, asked or {}, out.failed)
        main = repo.default_ref or gitread.head_branch(gdir)
        conn.execute(q.REPO_LOCK, (repo_id,))
        conn.execute(q.WRITERS_SHARED_LOCK)
        try:
            # the main branch first: the other refs derive from its tree
            for name, commit in sorted(wanted.items(), key=lambda i: (i[0] != main, i[0])):
                current = conn.execute(q.REF_GET, (repo_id, name)).fetchone()
                if current is not None and current[1] == commit:
                    continue
                out.moved.append(_index_and_move(settings, conn, repo, gdir, name, commit,
                                                 current, main, job_id, stop))
            out.dropped = _drop_vanished(conn, repo, gdir)
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute(q.WRITERS_SHARED_UNLOCK)
                conn.execute(q.REPO_UNLOCK, (repo_id,))
        out.collected = collect_trees(conn, repo_id)
    out.seconds = time.monotonic() - started
    return out


def _adopt_git_source(conn: psycopg.Connection, repo: repos.Repo, gdir: Path) -> repos.Repo:
    """A bare repository has no working tree: it becomes a ``git`` source whose default is
    the branch HEAD names (followed unless it follows something already)."""
    if repo.source != "worktree":
        return repo
    branch = gitread.head_branch(gdir)
    conn.execute(q.REPO_SET_SOURCE, ("git", repo.id))
    if branch:
        conn.execute(q.REPO_SET_DEFAULT_REF, (branch, repo.id))
        if not repo.follow:
            conn.execute(q.REPO_SET_FOLLOW, {"follow": [branch], "keep": repo.keep,
                                             "repo": repo.id, "visible": [repo.id]})
    updated = repos.get(conn, repo.id)
    assert updated is not None
    return updated


def _wanted(gdir: Path, repo: repos.Repo, asked: dict[str, str],
            failed: dict[str, str]) -> dict[str, str]:
    """Ref name -> commit: the followed refs as git has them, and those asked for (one git
    does not have goes to ``failed`` with why, and the others go on)."""
    wanted = gitread.matching(gitread.branches_and_tags(gdir), repo.follow)
    for name, rev in asked.items():
        try:
            commit = gitread.resolve(gdir, rev or name)
            if not rev and commit.startswith(name.lower()) and len(name) >= 7:
                name = commit  # a commit asked for by id is its own ref
            wanted[check_name(name)] = commit
        except UserError as exc:
            failed[name] = exc.message
    return wanted


def _index_and_move(settings: Settings, conn: psycopg.Connection, repo: repos.Repo,
                    gdir: Path, name: str, commit: str, current: Any, main: str | None,
                    job_id: str | None, stop: threading.Event | None) -> RefMove:
    run = conn.execute(q.RUN_START, (repo.id, None, name, "ref", job_id)).fetchone()
    assert run is not None
    run_id = int(run[0])
    last = [0.0]

    def progress(phase: str, total: int, done: int, parsed: int) -> None:
        now = time.monotonic()
        if now - last[0] > 0.4 or phase != "parse":
            last[0] = now
            conn.execute(q.RUN_PROGRESS, (phase, total, done, parsed, 0, run_id))

    try:
        summary = commits.index_commit(settings, conn, repo, gdir, commit, name, stop,
                                       progress, main)
        move(conn, repo.id, name, summary.tree_id, commit, repo.keep, "git")
    except BaseException as exc:
        with contextlib.suppress(psycopg.Error):
            conn.execute(q.RUN_FINISH, ("failed", "error", f"{type(exc).__name__}: {exc}"[:500],
                                        0, 0, 0, 0, run_id))
        raise
    conn.execute(q.RUN_FINISH, ("done", "done", "", summary.files, summary.files,
                                summary.parsed, summary.deleted, run_id))
    log.info("repo %s: ref %s -> %s (tree %s)", repo.id, name, commit[:12], summary.tree_id)
    return RefMove(name, commit, summary.tree_id, current[1] if current else None, summary)


def move(conn: psycopg.Connection, repo_id: int, name: str, tree_id: int, commit: str,
         keep: int, by: str) -> str | None:
    """Point ref ``name`` at ``tree_id`` (one transaction); the tree it left goes to the
    ref's history when the repository keeps earlier commits. Returns the previous commit."""
    with conn.transaction():
        previous = conn.execute(q.REF_GET, (repo_id, name)).fetchone()
        conn.execute(q.REF_MOVE, {"repo": repo_id, "name": name, "tree": tree_id,
                                  "commit": commit, "by": by})
        if previous is not None and int(previous[0]) != tree_id and keep > 0:
            conn.execute(q.REF_HISTORY_ADD, (repo_id, name, int(previous[0]), previous[1]))
        conn.execute(q.REF_HISTORY_TRIM, {"repo": repo_id, "name": name, "tree": tree_id,
                                          "keep": keep})
    return str(previous[1]) if previous is not None else None


def _drop_vanished(conn: psycopg.Connection, repo: repos.Repo, gdir: Path) -> list[str]:
    """Followed refs whose branch or tag is gone from git are dropped."""
    if not repo.follow:
        return []
    present = gitread.branches_and_tags(gdir)
    scope = Scope.system(repo)
    gone = []
    for (name,) in conn.execute(q.REF_NAMES, scope.params()).fetchall():
        if name not in present and gitread.matching({name: ""}, repo.follow):
            conn.execute(q.REF_DELETE, scope.params(name=name))
            gone.append(name)
    return gone


def delete(conn: psycopg.Connection, scope: Scope, name: str) -> dict[str, Any]:
    """Drop a ref (and its history); collect what only it used."""
    clean = check_name(name)
    if scope.repo.default_ref == clean:
        raise InvalidRequest(f"{clean!r} is the default ref of {scope.name!r}",
                             hint="it answers every query without ref; it cannot be dropped")
    with conn.transaction():
        row = conn.execute(q.REF_DELETE, scope.params(name=clean)).fetchone()
    if row is None:
        raise NotFound(f"no ref {clean!r} in {scope.name!r}")
    return {"dropped": clean, "collected": collect_trees(conn, scope.id)}


def collect_trees(conn: psycopg.Connection, repo_id: int) -> dict[str, int]:
    """Delete the repository's commit trees no ref, kept history or layered tree needs, and
    then what only they used (``repos.collect``)."""
    totals = {"trees": 0, "contents": 0, "texts": 0, "vectors": 0}
    while True:  # a tree collected may free the tree it was layered on
        ids = [int(r[0]) for r in conn.execute(q.TREES_UNUSED, (repo_id, [])).fetchall()]
        if not ids:
            return totals
        with conn.transaction():
            conn.execute(q.TREE_LOCK, (repo_id,))
            pairs = [(str(p), int(c)) for p, c in conn.execute(q.TREE_PAIRS, (ids,)).fetchall()]
            totals["trees"] += len(conn.execute(q.TREE_DELETE, (ids,)).fetchall())
        for key, value in repos.collect(conn, pairs).items():
            totals[key] += value
