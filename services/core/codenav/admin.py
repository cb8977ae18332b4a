"""Administration: tokens, teams, registering and deleting repositories, the audit trail.

One implementation for the API's admin routes and the CLI's operator mode (direct database
access). An admin administers its own team: its tokens, its repositories, its audit trail.
Naming a team that does not exist creates it (it holds nothing yet, so nothing leaks); the
tokens of another existing team are made by that team's admins, or by the operator. A
restricted admin (one granted explicit repositories) grants at most what it has.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from codenav import repos, roots
from codenav.access import DEFAULT_TEAM, Caller, Scope, record
from codenav.auth import create_token, ensure_team, revoke_token
from codenav.config import Settings
from codenav.db import queries as q
from codenav.errors import Forbidden, InvalidRequest, NotFound
from codenav.roles import authorize

if TYPE_CHECKING:
    from codenav.snapshot import ModelCheck

_DURATION = re.compile(r"^\s*(\d{1,6})\s*([hdw])\s*$")
AUDIT_SHOWN = 100


def parse_expiry(text: str | None, now: datetime | None = None) -> datetime | None:
    """``30d``, ``12h``, ``2w`` from now (None: no expiry)."""
    if not text:
        return None
    match = _DURATION.match(text)
    if not match:
        raise InvalidRequest(f"invalid expiry {text!r}", hint="a number and h, d or w: 30d")
    count, unit = int(match.group(1)), match.group(2)
    if count <= 0:
        raise InvalidRequest("the expiry must be in the future")
    delta = {"h": timedelta(hours=count), "d": timedelta(days=count),
             "w": timedelta(weeks=count)}[unit]
    return (now or datetime.now(UTC)) + delta


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# --- tokens and teams --------------------------------------------------------------------
def create(conn: psycopg.Connection, caller: Caller, name: str, role: str,
           team: str | None = None, repo_names: list[str] | None = None,
           expires: str | None = None) -> dict[str, Any]:
    """A token (shown once in the answer) for ``team`` (default: the caller's)."""
    authorize(caller, "token.create")
    team = team or caller.team or DEFAULT_TEAM
    wanted = sorted(set(repo_names or []))
    expires_at = parse_expiry(expires)
    existing = conn.execute(q.TEAM_GET, (team,)).fetchone()
    if not caller.is_operator and team != caller.team and existing is not None:
        raise Forbidden(f"team {team!r} already exists; its own admins make its tokens",
                        hint="ask one of them, or the server's operator")
    if caller.restricted and team == caller.team:
        granted = _granted_names(conn, caller)
        if not wanted or not set(wanted) <= granted:
            raise Forbidden("this token is limited to " + ", ".join(sorted(granted)) +
                            "; it can only make tokens limited to some of those",
                            hint="pass --repos with some of them")
    created_team = existing is None
    with conn.transaction():
        team_id, _ = ensure_team(conn, team, caller.actor)
        token, token_id = create_token(conn, name, role, team, wanted, expires_at,
                                       caller.actor)
        detail = {"role": role, "repos": wanted, "expires_at": _iso(expires_at)}
        record(conn, caller, "token.create", f"token {token_id} ({name})", team_id, detail)
        if created_team:  # in the creator's trail, and the new team's
            for trail in {caller.team_id, team_id}:
                record(conn, caller, "team.create", team, trail,
                       {"first_token": token_id, **detail})
    return {"token": token, "id": token_id, "name": name, "role": role, "team": team,
            "repos": wanted, "expires_at": _iso(expires_at), "team_created": created_team}


def _granted_names(conn: psycopg.Connection, caller: Caller) -> set[str]:
    from codenav.access import visible_repos

    return {r.name for r in visible_repos(conn, caller)}


def list_tokens(conn: psycopg.Connection, caller: Caller) -> dict[str, Any]:
    authorize(caller, "token.list")
    rows = conn.execute(q.TOKEN_LIST, {"team": caller.team_id}).fetchall()
    now = datetime.now(UTC)
    tokens = []
    for (token_id, name, role, team, restricted, granted, created, last_used, expires_at,
         revoked_at, created_by) in rows:
        state = "revoked" if revoked_at else "expired" if expires_at and expires_at <= now \
            else "active"
        tokens.append({"id": token_id, "name": name, "role": role, "team": team,
                       "repos": list(granted) if restricted else "all of the team's",
                       "state": state, "created_at": _iso(created),
                       "last_used_at": _iso(last_used), "expires_at": _iso(expires_at),
                       "revoked_at": _iso(revoked_at), "created_by": created_by})
    return {"tokens": tokens, "cache_seconds": 30,
            "note": "a revoked token stops working within 30 seconds (verified tokens are "
                    "cached that long)"}


def revoke(conn: psycopg.Connection, caller: Caller, token_id: int) -> dict[str, Any]:
    authorize(caller, "token.revoke")
    row = conn.execute(q.TOKEN_GET, {"id": token_id, "team": caller.team_id}).fetchone()
    if row is None or row[4] is not None or not revoke_token(conn, token_id):
        raise NotFound(f"no active token with id {token_id}", hint="codenav token list")
    record(conn, caller, "token.revoke", f"token {token_id} ({row[1]})", int(row[2]))
    return {"revoked": token_id, "name": row[1], "team": row[3],
            "note": "it stops working within 30 seconds"}


def list_teams(conn: psycopg.Connection, caller: Caller) -> dict[str, Any]:
    """The caller's team, and those it created (empty when made, so they are its to
    know); the operator: every team."""
    authorize(caller, "team.list")
    teams = []
    for team_id, name, created, created_by, n_repos, n_tokens in conn.execute(
            q.TEAM_LIST, {"team": caller.team_id, "actor": caller.actor}):
        teams.append({"name": name, "created_at": _iso(created), "created_by": created_by,
                      "repos": int(n_repos), "active_tokens": int(n_tokens),
                      **({"yours": True} if team_id == caller.team_id else {})})
    return {"teams": teams}


def audit(conn: psycopg.Connection, caller: Caller, limit: int = AUDIT_SHOWN) -> dict[str, Any]:
    """The audit trail of the caller's team (the operator: every team), newest first."""
    authorize(caller, "audit.list")
    if not 1 <= limit <= 10_000:
        raise InvalidRequest("limit must be between 1 and 10000")
    rows = conn.execute(q.AUDIT_LIST, {"team": caller.team_id, "limit": limit}).fetchall()
    return {"entries": [{"id": i, "at": _iso(at), "team": team, "actor": actor,
                         "action": action, "target": target, "detail": detail}
                        for i, at, team, actor, action, target, detail in rows]}


# --- repositories ------------------------------------------------------------------------
def register(conn: psycopg.Connection, settings: Settings, caller: Caller, root: str,
             name: str | None = None, index: bool = True) -> repos.Repo:
    """Register (or re-point) a repository of the caller's team, at an allowed root."""
    authorize(caller, "repo.register")
    real = roots.check(settings, root)
    if caller.restricted:
        granted = _granted_names(conn, caller)
        wanted = name or repos.default_name(Path(real))
        if wanted not in granted:
            raise Forbidden("this token is limited to " + (", ".join(sorted(granted)) or
                                                            "no repository"),
                            hint="register with a token of the team that is not limited")
    team_id = caller.team_id if caller.team_id is not None else repos.team_id(conn)
    repo = repos.register(conn, real, name, team_id, index)
    record(conn, caller, "repo.register", repo.name, team_id,
           {"root": repo.root, "requested_root": root, "index": index})
    return repo


def delete(conn: psycopg.Connection, caller: Caller, scope: Scope) -> dict[str, Any]:
    authorize(caller, "repo.delete")
    collected = repos.delete(conn, scope)
    record(conn, caller, "repo.delete", scope.name, repos.team_id(conn, scope.repo.team),
           {"root": scope.repo.root, **collected})
    return {"deleted": scope.name, "team": scope.repo.team, "collected": collected}


# --- refs --------------------------------------------------------------------------------
def parse_asked(refs_asked: list[str]) -> dict[str, str]:
    """``NAME`` (the ref's own commit) or ``NAME=REV`` (any revision git resolves, kept
    under NAME) -> {name: rev}."""
    from codenav.refs import check_name

    out: dict[str, str] = {}
    for item in refs_asked:
        name, _eq, rev = item.partition("=")
        rev = rev.strip()
        if rev.startswith("-") or "\0" in rev or len(rev) > 255:
            raise InvalidRequest(f"invalid revision {rev!r}")
        out[check_name(name)] = rev
    return out


def set_follow(conn: psycopg.Connection, caller: Caller, scope: Scope,
               follow: list[str] | None, keep: int | None) -> None:
    """Which refs the repository follows from its git (patterns), and how many earlier
    commits of each it keeps queryable."""
    from codenav.refs import check_pattern

    authorize(caller, "ref.index")
    patterns = [check_pattern(p) for p in follow] if follow is not None \
        else list(scope.repo.follow)
    kept = keep if keep is not None else scope.repo.keep
    if kept < 0 or kept > 1000:
        raise InvalidRequest("keep must be between 0 and 1000")
    conn.execute(q.REPO_SET_FOLLOW, scope.params(follow=patterns, keep=kept))
    record(conn, caller, "ref.follow", scope.name, repos.team_id(conn, scope.repo.team),
           {"follow": patterns, "keep": kept})


def drop_ref(conn: psycopg.Connection, caller: Caller, scope: Scope, name: str
             ) -> dict[str, Any]:
    from codenav import refs

    authorize(caller, "ref.delete")
    answer = refs.delete(conn, scope, name)
    record(conn, caller, "ref.delete", f"{scope.name}@{answer['dropped']}",
           repos.team_id(conn, scope.repo.team), answer["collected"])
    return answer


# --- snapshots ---------------------------------------------------------------------------
def snapshot_export(conn: psycopg.Connection, caller: Caller, out_path: Path,
                    names: list[str] | None = None, ref: str | None = None) -> dict[str, Any]:
    """Export the named repositories (default: every one the caller sees) to a snapshot
    file; with ``ref`` (a ref or commit of the one repository), only that ref's tree."""
    from codenav import snapshot
    from codenav.access import resolve, visible_repos

    authorize(caller, "snapshot.export")
    scopes = [resolve(conn, caller, n) for n in dict.fromkeys(names)] if names else []
    chosen = [s.repo for s in scopes] if names else visible_repos(conn, caller)
    if ref and len(chosen) != 1:
        raise InvalidRequest("--ref names a ref of one repository; say which with --repo",
                             hint="registered: " + ", ".join(r.name for r in chosen))
    trees = None
    if ref:
        scope = scopes[0] if scopes else resolve(conn, caller, None)
        trees = snapshot.export_trees(conn, scope, ref)
    result = snapshot.export(conn, chosen, out_path, trees)
    for repo in chosen:
        record(conn, caller, "snapshot.export", repo.name, repos.team_id(conn, repo.team),
               {"path": result.path, "commit": repo.indexed_commit, "ref": ref})
    return result.to_json()


def snapshot_import(conn: psycopg.Connection, settings: Settings, caller: Caller, path: Path,
                    roots_by_name: dict[str, str] | None = None, team: str | None = None,
                    vectors: bool = True, model: ModelCheck | None = None,
                    skip_existing: bool = False, local_roots: bool = False) -> dict[str, Any]:
    """Import a snapshot file. The operator imports each repository into its team in the
    snapshot (or ``team``); an admin, into its own team. A mapped root (another machine's
    checkout moved here) must be an allowed root; so must any root a team admin imports.
    ``local_roots`` maps each repository under the allowed roots (``snapshot.roots_under``);
    ``skip_existing`` imports nothing when the store holds one of its repositories (a seed
    applied once, to an empty store)."""
    from codenav import snapshot

    authorize(caller, "snapshot.import")
    if team and not caller.is_operator and team != caller.team:
        raise Forbidden(f"an admin imports into its own team ({caller.team}), not {team!r}")
    manifest = snapshot.read_manifest(path)
    into = team if caller.is_operator else caller.team
    if skip_existing:
        already = snapshot.held(conn, manifest, into)
        if already:
            return {"skipped": f"the store already holds {', '.join(already)}", "repos": [],
                    "rows": {}, "inserted": {}, "seconds": 0.0, "notes": []}
    wanted = dict(roots_by_name or {})
    if local_roots:
        wanted = {**snapshot.roots_under(manifest, list(settings.allowed_roots)), **wanted}
    mapped = {name: roots.check(settings, root) for name, root in wanted.items()}
    if not caller.is_operator:
        for spec in manifest.repos:
            if spec.name not in mapped:
                roots.check(settings, spec.root)

    def team_of(spec: Any) -> str:
        if not caller.is_operator:
            return caller.team
        return team or spec.team or DEFAULT_TEAM

    unknown = sorted(set(wanted) - {spec.name for spec in manifest.repos})
    if unknown:
        raise InvalidRequest(f"the snapshot has no repository named {', '.join(unknown)}",
                             hint="it holds " + ", ".join(s.name for s in manifest.repos))
    result = snapshot.import_file(conn, path, team=team_of, roots=mapped, actor=caller.actor,
                                  vectors=vectors, model=model,
                                  verify=not caller.is_operator)
    return result.to_json()
