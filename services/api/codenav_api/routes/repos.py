"""Repositories and index jobs."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path

from codenav import access, admin
from codenav.access import Caller
from codenav.db import queries as q
from codenav.errors import NotFound
from codenav.jobs import enqueue
from codenav.status import ref_list, run_info
from codenav_api.deps import allowed, services
from codenav_api.models import RefsAsk, RepoCreate, Text
from codenav_api.service import Services

router = APIRouter(prefix="/v1", tags=["repos"])

_JOB = re.compile(r"^[a-z]+-(\d+)-[0-9a-f]+$")
"""Job ids name their repository: ``{kind}-{repo id}-{random}`` (codenav.jobs.keys)."""


def _repo_dict(repo: access.Repo) -> dict[str, Any]:
    out = {"id": repo.id, "name": repo.name, "team": repo.team, "root": repo.root,
           "indexing": repo.index_enabled, "source": repo.source,
           "indexed_at": repo.indexed_at.isoformat() if repo.indexed_at else None,
           "indexed_commit": repo.indexed_commit}
    if repo.default_ref:
        out["default_ref"] = repo.default_ref
    if repo.follow:
        out["follow"] = list(repo.follow)
        out["keep"] = repo.keep
    return out


@router.get("/repos", summary="The repositories this token sees")
def list_repos(svc: Services = Depends(services),
               caller: Caller = Depends(allowed("repo.list"))) -> dict[str, Any]:
    with svc.connection() as conn:
        return {"repos": [_repo_dict(r) for r in access.visible_repos(conn, caller)]}


@router.post("/repos", summary="Register a repository of this token's team (and queue its "
             "indexing); its root must be under CODENAV_ALLOWED_ROOTS (write)")
def create_repo(body: RepoCreate, svc: Services = Depends(services),
                caller: Caller = Depends(allowed("repo.register"))) -> dict[str, Any]:
    with svc.connection() as conn:
        asked = admin.parse_asked(body.refs)
        repo = admin.register(conn, svc.settings, caller, body.root, body.name, body.index)
        if body.follow is not None or body.keep is not None:
            admin.set_follow(conn, caller, access.resolve(conn, caller, repo.name),
                             body.follow, body.keep)
    out: dict[str, Any] = {"repo": _repo_dict(repo)}
    if body.index:
        out["job_id"] = enqueue.request_full(svc.redis, svc.settings, repo.id)
        if asked or body.follow:
            out["refs_job_id"] = enqueue.request_refs(svc.redis, svc.settings, repo.id, asked)
    else:
        out["note"] = "registered without indexing: nothing indexes it until a reindex asks"
    return out


@router.get("/repos/{name}/refs", summary="The refs of a repository: commit, files, kept "
            "commits")
def list_refs(name: Annotated[Text, Path(max_length=201)], svc: Services = Depends(services),
              caller: Caller = Depends(allowed("repo.list"))) -> dict[str, Any]:
    with svc.connection() as conn:
        scope = access.resolve(conn, caller, name)
        return {"repo": scope.name, "default_ref": scope.repo.default_ref,
                "follow": list(scope.repo.follow), "keep": scope.repo.keep,
                "refs": ref_list(conn, scope)}


@router.post("/repos/{name}/refs", summary="Index refs from the repository's git, and set "
             "the refs it follows (write)")
def ask_refs(name: Annotated[Text, Path(max_length=201)], body: RefsAsk,
             svc: Services = Depends(services),
             caller: Caller = Depends(allowed("ref.index"))) -> dict[str, Any]:
    with svc.connection() as conn:
        scope = access.resolve(conn, caller, name)
        asked = admin.parse_asked(body.refs)
        if body.follow is not None or body.keep is not None:
            admin.set_follow(conn, caller, scope, body.follow, body.keep)
        conn.execute(q.REPO_ENABLE_INDEX, scope.params())
    job_id = enqueue.request_refs(svc.redis, svc.settings, scope.id, asked)
    return {"repo": scope.name, "refs": sorted(asked), "job_id": job_id}


@router.delete("/repos/{name}/refs/{ref:path}", summary="Drop a ref and collect what only it "
               "used (write)")
def drop_ref(name: Annotated[Text, Path(max_length=201)],
             ref: Annotated[Text, Path(max_length=255)], svc: Services = Depends(services),
             caller: Caller = Depends(allowed("ref.delete"))) -> dict[str, Any]:
    with svc.connection() as conn:
        scope = access.resolve(conn, caller, name)
        return admin.drop_ref(conn, caller, scope, ref)


@router.delete("/repos/{name}", summary="Delete a repository and its index (admin)")
def delete_repo(name: Annotated[Text, Path(max_length=201)], svc: Services = Depends(services),
                caller: Caller = Depends(allowed("repo.delete"))) -> dict[str, Any]:
    with svc.connection() as conn:
        scope = access.resolve(conn, caller, name)
        answer = admin.delete(conn, caller, scope)
    enqueue.forget_repo(svc.redis, scope.id)
    return answer


@router.get("/jobs/{job_id}", summary="State and progress of an index job")
def job(job_id: Annotated[Text, Path(max_length=200)], svc: Services = Depends(services),
        caller: Caller = Depends(allowed("job.status"))) -> dict[str, Any]:
    unknown = NotFound(f"no job {job_id!r}", hint="jobs are kept for a day after they finish")
    match = _JOB.match(job_id)
    if match is None:
        raise unknown
    repo_id = int(match.group(1))
    info = enqueue.job_info(svc.redis, job_id)
    if info is not None:
        info.pop("repo_id", None)  # the job id names its repository
    with svc.connection() as conn:
        visible = [r.id for r in access.visible_repos(conn, caller)]
        if repo_id not in visible:
            raise unknown  # another team's job is answered like one that does not exist
        run = run_info(conn.execute(q.RUN_BY_JOB, {"job": job_id, "visible": visible})
                       .fetchone())
        # the repository's latest run, whichever job runs it
        latest = run_info(conn.execute(q.RUN_BY_REPO, {"repo": repo_id, "visible": visible})
                          .fetchone())
    if info is None and run is None:
        raise unknown
    out: dict[str, Any] = info or {"job_id": job_id, "state": "unknown"}
    if run is not None:
        out["run"] = run
    if latest is not None:
        out["repo_run"] = latest  # the repository's latest run, whichever job runs it
    return out
