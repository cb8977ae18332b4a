"""Administration over HTTP (admin tokens): tokens, teams and the audit trail, so the CLI
works against a remote server with CODENAV_URL and CODENAV_TOKEN."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path as FsPath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from codenav import admin
from codenav.access import Caller
from codenav.db.connect import connect
from codenav.errors import InvalidRequest
from codenav.validate import check_value
from codenav_api.deps import allowed, services
from codenav_api.models import TokenCreate
from codenav_api.service import Services

router = APIRouter(prefix="/v1", tags=["admin"])


@router.post("/tokens", summary="Create a token (shown once) for this team, or for a new "
             "team (admin)")
def create_token(body: TokenCreate, svc: Services = Depends(services),
                 caller: Caller = Depends(allowed("token.create"))) -> dict[str, Any]:
    with svc.connection() as conn:
        return admin.create(conn, caller, body.name, body.role, body.team, body.repos,
                            body.expires)


@router.get("/tokens", summary="This team's tokens: role, repositories, last use, expiry "
            "(admin)")
def list_tokens(svc: Services = Depends(services),
                caller: Caller = Depends(allowed("token.list"))) -> dict[str, Any]:
    with svc.connection() as conn:
        return admin.list_tokens(conn, caller)


@router.delete("/tokens/{token_id}", summary="Revoke a token of this team (admin)")
def revoke_token(token_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
                 svc: Services = Depends(services),
                 caller: Caller = Depends(allowed("token.revoke"))) -> dict[str, Any]:
    with svc.connection() as conn:
        return admin.revoke(conn, caller, token_id)


@router.get("/teams", summary="Teams (admin)")
def list_teams(svc: Services = Depends(services),
               caller: Caller = Depends(allowed("team.list"))) -> dict[str, Any]:
    with svc.connection() as conn:
        return admin.list_teams(conn, caller)


@router.get("/audit", summary="This team's audit trail, newest first (admin)")
def audit(limit: Annotated[int, Query(ge=1, le=10_000)] = admin.AUDIT_SHOWN,
          svc: Services = Depends(services),
          caller: Caller = Depends(allowed("audit.list"))) -> dict[str, Any]:
    with svc.connection() as conn:
        return admin.audit(conn, caller, limit)


SNAPSHOT_MAX_BYTES = 64 << 30
"""A snapshot upload larger than this is refused (413-like 400) before it fills the disk."""


@router.get("/snapshot", summary="Export a snapshot of repositories (default: every one "
            "this token sees): contents, chunks, symbols, graph, vectors (admin)")
def export_snapshot(repo: Annotated[list[str] | None, Query(max_length=100)] = None,
                    ref: Annotated[str | None, Query(max_length=300)] = None,
                    svc: Services = Depends(services),
                    caller: Caller = Depends(allowed("snapshot.export"))) -> FileResponse:
    check_value({"repo": repo, "ref": ref}, "")
    work = FsPath(tempfile.mkdtemp(prefix="codenav-export-"))
    out = work / "snapshot.tar"
    try:
        with svc.connection() as conn:
            summary = admin.snapshot_export(conn, caller, out, repo, ref)
    except BaseException:
        _remove(work)
        raise
    summary.pop("path", None)
    return FileResponse(out, media_type="application/x-tar", filename="codenav-snapshot.tar",
                        headers={"X-Codenav-Summary": json.dumps(summary)},
                        background=BackgroundTask(_remove, work))


@router.post("/snapshot", summary="Import a snapshot (the request body) into this team; a "
             "repository of the same name is replaced (admin)")
async def import_snapshot(request: Request,
                          root: Annotated[list[str] | None, Query(max_length=100)] = None,
                          team: Annotated[str | None, Query(max_length=100)] = None,
                          no_vectors: bool = False, skip_existing: bool = False,
                          local_roots: bool = False, svc: Services = Depends(services),
                          caller: Caller = Depends(allowed("snapshot.import"))
                          ) -> dict[str, Any]:
    check_value({"root": root, "team": team}, "")
    roots: dict[str, str] = {}
    for item in root or []:
        name, eq, local = item.partition("=")
        if not eq or not name or not local:
            raise InvalidRequest(f"root {item!r} is not NAME=PATH")
        roots[name] = local
    work = FsPath(tempfile.mkdtemp(prefix="codenav-import-"))
    path = work / "snapshot.tar"
    try:
        size = 0
        with path.open("wb") as handle:
            async for block in request.stream():
                size += len(block)
                if size > SNAPSHOT_MAX_BYTES:
                    raise InvalidRequest("the snapshot is larger than this server accepts")
                handle.write(block)
        return await run_in_threadpool(_import, svc, caller, path, roots, team, not no_vectors,
                                       skip_existing, local_roots)
    finally:
        _remove(work)


def _import(svc: Services, caller: Caller, path: FsPath, roots: dict[str, str],
            team: str | None, vectors: bool, skip_existing: bool,
            local_roots: bool) -> dict[str, Any]:
    # a connection of its own: a long transaction with its own temporary tables
    with connect(svc.settings, application_name="codenav-snapshot") as conn:
        model = None
        if svc.semantic.client is not None:
            client = svc.semantic.client

            def model() -> tuple[str, int] | None:
                try:
                    info = client.info()
                except Exception:  # noqa: BLE001 - an embedder down: the model is unknown
                    return None
                return info.name, info.dim
        return admin.snapshot_import(conn, svc.settings, caller, path, roots, team, vectors,
                                     model, skip_existing, local_roots)


def _remove(work: FsPath) -> None:
    for leftover in work.iterdir():
        os.unlink(leftover)
    work.rmdir()
