"""Liveness (process up) and readiness (database reachable, schema current, queue up)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from codenav.db import migrations
from codenav.errors import CodenavError
from codenav_api.deps import services
from codenav_api.service import Services

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
def readyz(svc: Services = Depends(services)) -> Any:
    checks: dict[str, str] = {}
    ok = True
    try:
        with svc.connection() as conn:
            version = migrations.check(conn)
        checks["database"] = f"ok (schema {version})"
    except CodenavError as exc:
        ok = False
        checks["database"] = exc.message
    try:
        svc.redis.ping()
        policy = svc.redis.config_get("maxmemory-policy").get("maxmemory-policy", "noeviction")
        if policy != "noeviction":
            ok = False
            checks["queue"] = f"redis maxmemory-policy is {policy}; jobs could be evicted " \
                "(set noeviction)"
        else:
            checks["queue"] = "ok"
    except Exception as exc:  # noqa: BLE001 - any redis failure means not ready
        ok = False
        checks["queue"] = f"unreachable: {type(exc).__name__}"
    return JSONResponse({"status": "ready" if ok else "not ready", "checks": checks},
                        status_code=200 if ok else 503)
