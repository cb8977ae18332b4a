"""The tool endpoints: the same names, arguments and answers as the MCP tools."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from codenav_api.deps import require_token, services
from codenav_api.models import (
    DefinitionQuery,
    DependenciesQuery,
    FindFilesQuery,
    ImpactQuery,
    ImplementationsQuery,
    OutlineQuery,
    ReadQuery,
    ReferencesQuery,
    ReindexRequest,
    SearchQuery,
    SkeletonQuery,
    StatusQuery,
)
from codenav_api.service import Services

router = APIRouter(prefix="/v1", tags=["tools"], dependencies=[Depends(require_token)])


@router.post("/search", summary="Code chunks matching a query")
def search(body: SearchQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("search", body.model_dump())


@router.post("/find_files", summary="Files relevant to a task description")
def find_files(body: FindFilesQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("find_files", body.model_dump())


@router.post("/outline", summary="A file's symbols and imports")
def outline(body: OutlineQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("outline", body.model_dump())


@router.post("/read", summary="Code by path and lines, or by symbol")
def read(body: ReadQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("read", body.model_dump())


@router.post("/status", summary="Index state, skipped files, last run")
def status(body: StatusQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("status", body.model_dump())


@router.post("/reindex", summary="Queue a reindex of the repo or of some paths")
def reindex(body: ReindexRequest, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("reindex", body.model_dump())


@router.post("/definition", summary="A symbol's declaration and the types it mentions")
def definition(body: DefinitionQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("definition", body.model_dump())


@router.post("/references", summary="Verified references to a symbol, and potential ones")
def references(body: ReferencesQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("references", body.model_dump())


@router.post("/dependencies", summary="A file's imports and importers")
def dependencies(body: DependenciesQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("dependencies", body.model_dump())


@router.post("/impact", summary="What transitively depends on a symbol or file")
def impact(body: ImpactQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("impact", body.model_dump())


@router.post("/implementations", summary="Classes implementing or extending a type")
def implementations(body: ImplementationsQuery,
                    svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("implementations", body.model_dump())


@router.post("/skeleton", summary="Exported declarations of a directory, by file")
def skeleton(body: SkeletonQuery, svc: Services = Depends(services)) -> dict[str, Any]:
    return svc.run("skeleton", body.model_dump())
