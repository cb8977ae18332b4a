"""Who is asking, what they may do, and which repositories they may see.

A request is made by a ``Caller``: a token's role (``read`` < ``write`` < ``admin``) in a
team, restricted to explicit repositories when the token was granted some, or the operator
(the CLI with direct database access, as in ``docker compose exec api codenav ...``).
``codenav.roles.REQUIRED`` maps every action (each tool, route and CLI command goes through
one) to the role it needs; ``codenav.roles.authorize`` is the one check.

A request about a repository is answered within a ``Scope``: the repository, resolved once
by name among the repositories the caller may see, and that visible set, which every SQL
statement returning repository rows takes as ``%(visible)s`` (``f.repo_id =
ANY(%(visible)s::int[])``). A repository of another team is answered exactly like one that
does not exist. The scope also names the tree a request reads (``Tree``): the repository's
working tree or a commit tree reached by a ``ref``, passed to statements as ``%(tree)s``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from codenav.db import queries as q
from codenav.errors import Gone, InvalidRequest, NotFound

ROLES = ("read", "write", "admin")
"""In increasing order: each role can do everything the ones before it can."""
DEFAULT_TEAM = "default"




@dataclass(frozen=True)
class Caller:
    token_id: int | None
    name: str
    role: str
    team_id: int | None
    """None for the operator, who sees every team."""
    team: str
    restricted: bool = False
    """The token sees only the repositories granted to it."""
    expires_at: datetime | None = None

    @classmethod
    def operator(cls) -> Caller:
        return cls(None, "operator (database)", "admin", None, "")

    @property
    def is_operator(self) -> bool:
        return self.team_id is None

    @property
    def actor(self) -> str:
        """How the audit trail names the caller."""
        return self.name if self.token_id is None else f"{self.name} (token {self.token_id})"


@dataclass(frozen=True)
class Repo:
    id: int
    name: str
    root: str
    created_at: datetime
    indexed_at: datetime | None
    """When its default tree was last indexed (None: never)."""
    indexed_commit: str | None
    team: str = DEFAULT_TEAM
    index_enabled: bool = True
    source: str = "worktree"
    """``worktree`` (a checkout on disk), ``git`` (a git directory: refs only) or
    ``remote`` (published by CI)."""
    default_ref: str | None = None
    """What a query without ``ref`` answers for (None: the working tree)."""
    follow: tuple[str, ...] = ()
    keep: int = 0
    default_tree: int | None = None
    team_id: int = 0


def record(conn: psycopg.Connection, caller: Caller, action: str, target: str,
           team_id: int | None, detail: dict[str, Any] | None = None) -> None:
    """One line of the audit trail: who did what to which target."""
    conn.execute(q.AUDIT_INSERT, (team_id, caller.actor, caller.token_id, action, target,
                                  json.dumps(detail or {})))


def repo_row(row: Any) -> Repo:
    (id_, name, root, created, indexed_at, commit, team, enabled, source, default_ref,
     follow, keep, tree, team_id) = row
    return Repo(id_, name, root, created, indexed_at, commit, team, enabled, source,
                default_ref, tuple(follow or ()), int(keep or 0), tree, int(team_id))


@dataclass(frozen=True)
class Overlay:
    """A developer's uncommitted edits over a base tree (``codenav.overlays``), as its
    owner sees it."""

    id: str
    repo_id: int
    tree_id: int
    base_tree: int
    base_ref: str | None
    base_kind: str
    base_commit: str | None
    base_indexed_at: datetime | None
    version: int
    stored: int
    graph: int
    over_limit: str | None
    checkout: str
    touched_at: datetime
    files: int
    """Files of the checkout that replace or add to the base's (indexed ones)."""
    deleted: int

    def describe(self) -> dict[str, Any]:
        """What an answer says of the overlay it includes."""
        out: dict[str, Any] = {"files": self.files}
        if self.deleted:
            out["deleted"] = self.deleted
        if self.stored < self.version:
            out["pending"] = "your latest edits are still being indexed"
        elif self.graph < self.version:
            out["graph_pending"] = "the code graph of your edits is being rebuilt"
        if self.over_limit:
            out["over_limit"] = self.over_limit + "; answers come from the base"
        return out


def overlay_row(row: Any) -> Overlay:
    (oid, repo, tree, base, ref, kind, commit, indexed_at, version, stored, graph, over,
     checkout, touched, files, deleted) = row
    return Overlay(str(oid), int(repo), int(tree), int(base), ref, kind, commit, indexed_at,
                   int(version), int(stored), int(graph), over, checkout, touched, int(files),
                   int(deleted))


@dataclass(frozen=True)
class Tree:
    """What one request reads: the repository's working tree, or a commit tree (reached by
    a ref name or a commit id). ``id`` 0: nothing is indexed for it yet."""

    id: int
    kind: str = "worktree"
    commit: str | None = None
    ref: str | None = None
    """The ref name it was reached by (None: the working tree, or a bare commit id)."""
    indexed_at: datetime | None = None
    overlay: Overlay | None = None
    """Set for an overlay's tree (kind ``overlay``): the edits it holds over its base."""

    @property
    def base_kind(self) -> str:
        """``worktree`` or ``commit``: the kind of tree it is, or its overlay's base is."""
        return self.overlay.base_kind if self.overlay is not None else self.kind

    @property
    def run_ref(self) -> str:
        """How index runs name what they index (``''``: the working tree)."""
        return (self.ref or "") if self.base_kind == "commit" else ""

    def describe(self) -> dict[str, Any]:
        """Which ref an answer is for (every scoped answer says it)."""
        out: dict[str, Any] = {"name": self.ref, "commit": self.commit}
        if self.base_kind == "worktree":
            out["worktree"] = True
        if self.overlay is not None:
            local = self.overlay.describe()
            if local != {"files": 0}:  # an empty overlay reads as its base: nothing to say
                out["overlay"] = local
        return out


def visible_repos(conn: psycopg.Connection, caller: Caller) -> list[Repo]:
    """The repositories ``caller`` may see: granted ones if restricted, else its team's
    (the operator: all)."""
    if caller.is_operator:
        return [repo_row(r) for r in conn.execute(q.REPO_LIST).fetchall()]
    rows = conn.execute(q.REPOS_VISIBLE, {"token": caller.token_id, "team": caller.team_id,
                                          "restricted": caller.restricted}).fetchall()
    return [repo_row(r) for r in rows]


@dataclass(frozen=True)
class Scope:
    """One request's view of the index: the repository it is about, the tree (ref) it reads,
    and every repository the caller may see (which each statement filters on)."""

    caller: Caller
    repo: Repo
    visible: tuple[int, ...] = field(default=())
    tree: Tree | None = None

    def __post_init__(self) -> None:
        if self.tree is None:  # the repository's default tree
            object.__setattr__(self, "tree", default_tree(self.repo))

    @property
    def id(self) -> int:
        return self.repo.id

    @property
    def name(self) -> str:
        return self.repo.name

    @property
    def at(self) -> Tree:
        assert self.tree is not None
        return self.tree

    @property
    def flat(self) -> bool:
        """Whether the tree holds all of its rows itself (a working tree: no layers)."""
        return self.at.kind == "worktree"

    def sql(self, statement: str) -> str:
        """``statement`` for this scope's tree: a working tree's rows are read from their
        tables by tree id, not through its (absent) layers (``queries.flat_tree``)."""
        return q.flat_tree(statement) if self.flat else statement

    def params(self, **extra: Any) -> dict[str, Any]:
        """Bound parameters of a repository-scoped statement."""
        return {"repo": self.repo.id, "tree": self.at.id, "run_ref": self.at.run_ref,
                "visible": list(self.visible), **extra}

    @classmethod
    def system(cls, repo: Repo, tree: Tree | None = None) -> Scope:
        """The scope of codenav's own jobs (workers): one repository."""
        return cls(Caller.operator(), repo, (repo.id,), tree)


def default_tree(repo: Repo) -> Tree:
    """The tree a query without ``ref`` reads: the working tree, or the default ref's."""
    if repo.default_ref is None:
        return Tree(repo.default_tree or 0, "worktree", repo.indexed_commit, None,
                    repo.indexed_at)
    return Tree(repo.default_tree or 0, "commit", repo.indexed_commit, repo.default_ref,
                repo.indexed_at)


_HEX = frozenset("0123456789abcdef")


def resolve_tree(conn: psycopg.Connection, scope: Scope, ref: str | None) -> Scope:
    """``scope`` reading ``ref``: a ref name (``main``, ``refs/heads/main``, a tag), or a
    commit id (7 hex digits at least) the repository has indexed. None: the default."""
    if not ref:
        return scope
    params = scope.params()
    name = ref.removeprefix("refs/heads/").removeprefix("refs/tags/")
    row = conn.execute(q.REF_TREE, {**params, "name": name}).fetchone()
    if row is None and name != ref:
        row = conn.execute(q.REF_TREE, {**params, "name": ref}).fetchone()
    if row is None and 7 <= len(ref) <= 40 and set(ref.lower()) <= _HEX:
        rows = conn.execute(q.COMMIT_TREES, {**params, "prefix": ref.lower() + "%"}).fetchall()
        if len(rows) > 1:
            raise InvalidRequest(f"commit {ref!r} is ambiguous in {scope.name!r}",
                                 hint="give more digits of the commit id")
        if rows:
            tid, kind, commit, indexed_at, _name = rows[0]
            return Scope(scope.caller, scope.repo, scope.visible,
                         Tree(int(tid), kind, commit, None, indexed_at))
    if row is None:
        names = [r[0] for r in conn.execute(q.REF_NAMES, params).fetchall()]
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        raise NotFound(f"no ref {ref!r} is indexed in {scope.name!r}",
                       hint=(f"indexed refs: {shown}; " if names else "no ref is indexed; ") +
                       "omit ref for the default, or index it: codenav index --ref NAME")
    tid, kind, commit, indexed_at, found = row
    return Scope(scope.caller, scope.repo, scope.visible,
                 Tree(int(tid), kind, commit, found, indexed_at))


def _matches(repo: Repo, name: str) -> bool:
    team, _slash, short = name.rpartition("/")
    return repo.name == short and (not team or repo.team == team)


def describe(repos: list[Repo], qualified: bool = False) -> str:
    return ", ".join(f"{r.team}/{r.name}" if qualified else r.name for r in repos) or "none"


def resolve(conn: psycopg.Connection, caller: Caller, name: str | None,
            ref: str | None = None, overlay: str | None = None) -> Scope:
    """The scope of a request about repository ``name`` (or the only visible one), at
    ``ref`` (None: its default tree). A name the caller may not see gets the answer a name
    that does not exist gets. ``overlay`` (an id the caller's adapter holds): without a
    ``ref``, and for the overlay's repository, the scope reads the overlay's tree."""
    if overlay and not ref:
        return _resolve_overlay(conn, caller, name, overlay)
    scope = _resolve_repo(conn, caller, name)
    return resolve_tree(conn, scope, ref) if ref else scope


def _resolve_overlay(conn: psycopg.Connection, caller: Caller, name: str | None,
                     overlay_id: str) -> Scope:
    repos = visible_repos(conn, caller)
    visible = [r.id for r in repos]
    row = conn.execute(q.OVERLAY_GET, {"overlay": overlay_id[:64], "token": caller.token_id,
                                       "visible": visible}).fetchone()
    if row is None:
        raise Gone("this session's overlay of local edits is gone (unused too long, or made "
                   "with another token)", hint="the adapter makes a new one by itself")
    ov = overlay_row(row)
    repo = next(r for r in repos if r.id == ov.repo_id)
    if name and not _matches(repo, name):  # another repository: its own default tree
        return _resolve_repo(conn, caller, name)
    conn.execute(q.OVERLAY_TOUCH, {"overlay": ov.id, "visible": visible})
    return Scope(caller, repo, tuple(visible),
                 Tree(ov.tree_id, "overlay", ov.base_commit, ov.base_ref, ov.base_indexed_at,
                      ov))


def _resolve_repo(conn: psycopg.Connection, caller: Caller, name: str | None) -> Scope:
    repos = visible_repos(conn, caller)
    visible = tuple(r.id for r in repos)
    qualified = len({r.team for r in repos}) > 1
    if name:
        found = [r for r in repos if _matches(r, name)]
        if len(found) == 1:
            return Scope(caller, found[0], visible)
        if not found:
            raise NotFound(f"no repository named {name!r}",
                           hint=f"registered repositories: {describe(repos, qualified)}")
        raise InvalidRequest(f"several teams have a repository named {name!r}",
                             hint=f"say which: {describe(found, True)}")
    if len(repos) == 1:
        return Scope(caller, repos[0], visible)
    if not repos:
        raise NotFound("no repository is registered, so nothing is indexed",
                       hint="run `codenav index PATH` to register and index one")
    raise InvalidRequest("several repositories are registered; say which one",
                         hint=f"pass repo= one of: {describe(repos, qualified)}")
