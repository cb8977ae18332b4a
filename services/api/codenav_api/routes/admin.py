"""Administration over HTTP (admin tokens): tokens, teams and the audit trail, so the CLI
works against a remote server with CODENAV_URL and CODENAV_TOKEN."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query

from codenav import admin
from codenav.access import Caller
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
