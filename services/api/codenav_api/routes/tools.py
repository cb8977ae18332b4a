"""The tool endpoints: the same names, arguments and answers as the MCP tools, each one
allowed to the role ``codenav.access.REQUIRED`` names for it."""

# (no `from __future__ import annotations`: FastAPI reads each endpoint's body model from
# its annotations, made here per tool)

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from codenav.access import Caller
from codenav_api.deps import allowed, services
from codenav_api.models import (
    DefinitionQuery,
    DependenciesQuery,
    FindFilesQuery,
    GrepQuery,
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

router = APIRouter(prefix="/v1", tags=["tools"])

TOOLS: list[tuple[str, type[BaseModel], str]] = [
    ("search", SearchQuery, "Code chunks matching a query"),
    ("find_files", FindFilesQuery, "Files relevant to a task description"),
    ("grep", GrepQuery, "Lines matching a literal or an RE2 regex"),
    ("outline", OutlineQuery, "A file's symbols and imports"),
    ("read", ReadQuery, "Code by path and lines, or by symbol"),
    ("status", StatusQuery, "Index state, skipped files, last run"),
    ("reindex", ReindexRequest, "Queue a reindex of the repo or of some paths (write)"),
    ("definition", DefinitionQuery, "A symbol's declaration and the types it mentions"),
    ("references", ReferencesQuery, "Verified references to a symbol, and potential ones"),
    ("dependencies", DependenciesQuery, "A file's imports and importers"),
    ("impact", ImpactQuery, "What transitively depends on a symbol or file"),
    ("implementations", ImplementationsQuery, "Classes implementing or extending a type"),
    ("skeleton", SkeletonQuery, "Exported declarations of a directory, by file"),
]


def _endpoint(tool: str, model: type[BaseModel]) -> Callable[..., dict[str, Any]]:
    def endpoint(body: model, svc: Services = Depends(services),  # type: ignore[valid-type]
                 caller: Caller = Depends(allowed(tool))) -> dict[str, Any]:
        return svc.run(caller, tool, body.model_dump())  # type: ignore[attr-defined]

    endpoint.__name__ = tool
    return endpoint


for _tool, _model, _summary in TOOLS:
    router.add_api_route(f"/{_tool}", _endpoint(_tool, _model), methods=["POST"],
                         summary=_summary, name=_tool)
