"""Request bodies of the REST API (the MCP tools take the same arguments)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["hybrid", "lexical", "semantic"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repo: str | None = Field(default=None, description="repository name (default: the only one)")


class SearchQuery(_Body):
    query: str = Field(min_length=1, max_length=8000)
    limit: int = Field(default=10, ge=1, le=50)
    path: str | None = Field(default=None, max_length=500, description="path glob filter")
    language: str | None = Field(default=None, max_length=40)
    kind: str | None = Field(default=None, max_length=40)
    exported: bool = False
    mode: Mode = "hybrid"


class FindFilesQuery(_Body):
    query: str = Field(min_length=1, max_length=8000)
    limit: int = Field(default=7, ge=1, le=50)
    include_tests: bool = False
    mode: Mode = "hybrid"


class OutlineQuery(_Body):
    path: str = Field(min_length=1, max_length=1000)


class ReadQuery(_Body):
    path: str | None = Field(default=None, max_length=1000)
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)
    symbol: str | None = Field(default=None, max_length=500)


class StatusQuery(_Body):
    pass


class ReindexRequest(_Body):
    paths: list[str] | None = Field(default=None, max_length=10000)


class DefinitionQuery(_Body):
    symbol: str = Field(min_length=1, max_length=500, description="name or Class.member")
    path: str | None = Field(default=None, max_length=1000, description="the declaring file")


class ReferencesQuery(_Body):
    symbol: str = Field(min_length=1, max_length=500, description="name or Class.member")
    path: str | None = Field(default=None, max_length=1000, description="the declaring file")
    include_potential: bool = True


class DependenciesQuery(_Body):
    path: str = Field(min_length=1, max_length=1000)
    direction: Literal["imports", "importers", "both"] = "both"
    depth: int = Field(default=1, ge=1, le=3)


class ImpactQuery(_Body):
    symbol_or_path: str = Field(min_length=1, max_length=1000)
    depth: int = Field(default=3, ge=1, le=10)


class ImplementationsQuery(_Body):
    symbol: str = Field(min_length=1, max_length=500, description="an interface or class")


class SkeletonQuery(_Body):
    path: str | None = Field(default=None, max_length=1000, description="a directory")
    depth: int | None = Field(default=None, ge=0, le=50, description="subdirectory levels")


class RepoCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    root: str = Field(min_length=1, max_length=4096, description="absolute path on the workers")
    name: str | None = Field(default=None, max_length=100)
    index: bool = True
