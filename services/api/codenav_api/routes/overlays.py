"""Overlays (``codenav.overlays``): the stdio adapter keeps one per session with its
checkout's uncommitted edits, and sends its id with each tool call (header
``X-Codenav-Overlay``). Each route needs a ``read`` token, and an overlay is its token's
alone: another token gets 410, as for one that expired."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from starlette.concurrency import run_in_threadpool

from codenav import overlays
from codenav.access import Caller
from codenav.jobs import enqueue
from codenav_api.bodies import body_bytes, body_json
from codenav_api.deps import allowed, services
from codenav_api.service import Services

router = APIRouter(prefix="/v1/overlays", tags=["overlays"])

BLOBS_MAX_BYTES = overlays.BLOB_REQUEST_BYTES
OverlayId = Annotated[str, Path(max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


@router.post("", summary="A new overlay of the caller's edits, based on the first of the "
             "checkout's commits the server holds (read)")
async def create(request: Request, svc: Services = Depends(services),
                 caller: Caller = Depends(allowed("overlay"))) -> dict[str, Any]:
    body = await body_json(request)
    repo = body.get("repo")
    with svc.connection() as conn:
        return await run_in_threadpool(overlays.open_overlay, conn, caller,
                                       str(repo) if repo else None, body.get("commits") or [],
                                       str(body.get("checkout") or ""))


@router.get("/{overlay_id}/base", summary="The overlay's base: its files (path, blob id) and "
            "the paths it skipped (read)")
def base(overlay_id: OverlayId, svc: Services = Depends(services),
         caller: Caller = Depends(allowed("overlay"))) -> dict[str, Any]:
    with svc.connection() as conn:
        return overlays.base_files(conn, caller, overlay_id)


@router.put("/{overlay_id}", summary="The checkout's differences from the base: stored "
            "(searchable) before it answers, or the blobs to upload first (read)")
async def send(overlay_id: OverlayId, request: Request, svc: Services = Depends(services),
               caller: Caller = Depends(allowed("overlay"))) -> dict[str, Any]:
    body = await body_json(request)

    def record() -> dict[str, Any]:
        with svc.connection() as conn:
            out = overlays.send(conn, svc.settings, caller, overlay_id, body)
            if "version" not in out:
                return out
            repo_id = overlays.repo_of(conn, caller, overlay_id)
        enqueue.request_overlay(svc.redis, svc.settings, repo_id)
        with svc.connection() as conn:
            out.update(overlays.wait_stored(conn, caller, overlay_id, out["version"],
                                            svc.settings.overlay_wait_s))
        return out

    return await run_in_threadpool(record)


@router.post("/{overlay_id}/blobs", summary="Blobs the overlay needs: a tar of files named "
             "by their git blob id, each checked against it (read)")
async def blobs(overlay_id: OverlayId, request: Request, svc: Services = Depends(services),
                caller: Caller = Depends(allowed("overlay"))) -> dict[str, Any]:
    data = await body_bytes(request, BLOBS_MAX_BYTES)

    def keep() -> dict[str, Any]:
        with svc.connection() as conn:
            return overlays.receive_blobs(conn, svc.settings, caller, overlay_id, data)

    return await run_in_threadpool(keep)


@router.delete("/{overlay_id}", summary="Drop the overlay now (read)")
def drop(overlay_id: OverlayId, svc: Services = Depends(services),
         caller: Caller = Depends(allowed("overlay"))) -> dict[str, Any]:
    with svc.connection() as conn:
        return overlays.drop(conn, caller, overlay_id)
