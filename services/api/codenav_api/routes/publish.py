"""CI publishing (``codenav publish``): where a ref is, what the server lacks, the bundles of
it, and the commit that moves the ref (``codenav.publish``). Every route needs a ``write``
token. Bodies may be gzip-compressed (``Content-Encoding: gzip``); sizes are bounded before
and after decompression."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path as FsPath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from codenav import publish
from codenav.access import Caller
from codenav.db.connect import connect
from codenav.errors import InvalidRequest
from codenav.jobs import enqueue
from codenav.validate import check_value
from codenav_api.bodies import JSON_MAX_BYTES, body_bytes, body_json
from codenav_api.deps import allowed, services
from codenav_api.service import Services

router = APIRouter(prefix="/v1/publish", tags=["publish"])

BUNDLE_MAX_BYTES = 1 << 30


@router.post("/state", summary="Where a ref is, and whether a commit is held already (write)")
async def state(request: Request, svc: Services = Depends(services),
                caller: Caller = Depends(allowed("publish"))) -> dict[str, Any]:
    body = await body_json(request)
    with svc.connection() as conn:
        return publish.state(conn, caller, str(body.get("repo") or ""),
                             str(body.get("ref") or ""), str(body.get("commit") or ""))


@router.post("/missing", summary="Which contents ([sha, language]) and vectors (by text hash) "
             "the server lacks for this team (write)")
async def missing(request: Request, svc: Services = Depends(services),
                  caller: Caller = Depends(allowed("publish"))) -> dict[str, Any]:
    body = await body_json(request)
    contents = body.get("contents")
    vectors = body.get("vectors")
    if not isinstance(contents, list) or not isinstance(vectors, dict | None):
        raise InvalidRequest("contents is a list of [sha, language]; vectors an object")
    with svc.connection() as conn:
        return await run_in_threadpool(publish.missing, conn, caller,
                                       str(body.get("repo") or ""), contents, vectors,
                                       svc.semantic.client)


@router.post("/contents", summary="A bundle of contents (the request body), merged as this "
             "team's own (write)")
async def contents(request: Request, repo: Annotated[str, Query(max_length=201)],
                   svc: Services = Depends(services),
                   caller: Caller = Depends(allowed("publish"))) -> dict[str, Any]:
    check_value({"repo": repo}, "")
    work = FsPath(tempfile.mkdtemp(prefix="codenav-publish-"))
    path = work / "bundle.tar"
    try:
        path.write_bytes(await body_bytes(request, BUNDLE_MAX_BYTES))
        return await run_in_threadpool(_receive, svc, caller, repo, path)
    finally:
        path.unlink(missing_ok=True)
        os.rmdir(work)


def _receive(svc: Services, caller: Caller, repo: str, path: FsPath) -> dict[str, Any]:
    # a connection of its own: a transaction with its own temporary tables
    with connect(svc.settings, application_name="codenav-publish") as conn:
        return publish.receive(conn, svc.settings, caller, repo, path, svc.semantic.client)


@router.post("/commit", summary="A commit's file list: once its contents are all here, a job "
             "builds its tree and moves the ref (write)")
async def commit(request: Request, svc: Services = Depends(services),
                 caller: Caller = Depends(allowed("publish"))) -> dict[str, Any]:
    raw = await body_bytes(request, JSON_MAX_BYTES)
    with svc.connection() as conn:
        accepted = publish.commit(conn, caller, raw)
    job_id = enqueue.request_publish(svc.redis, svc.settings, accepted.scope.id, accepted.ref,
                                     accepted.payload)
    return {"repo": accepted.scope.name, "ref": accepted.ref, "commit": accepted.commit,
            "job_id": job_id}
