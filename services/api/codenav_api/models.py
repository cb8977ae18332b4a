"""Request bodies of the REST API (the MCP tools take the same arguments).

Every string anywhere in a request (body fields, list items, path parameters) goes through
one validator: NUL bytes and invalid Unicode are a 400 naming the field
(``codenav.validate``), never a 500 from deeper down.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from codenav.validate import check_value, problem

Mode = Literal["hybrid", "lexical", "semantic"]


def _text(value: str) -> str:
    found = problem(value)
    if found:
        raise ValueError(f"{found}; send plain UTF-8 text")
    return value


Text = Annotated[str, AfterValidator(_text)]
"""A string parameter outside a body (path, query)."""


class _Strict(BaseModel):
    """A request body: unknown fields refused, every string checked."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _plain_text(cls, value: Any) -> Any:
        try:
            check_value(value, "")
        except Exception as exc:  # noqa: BLE001 - becomes the field's validation error
            raise ValueError(getattr(exc, "message", str(exc)).strip() +
                             "; send plain UTF-8 text") from None
        return value


class _Body(_Strict):
    repo: str | None = Field(default=None, max_length=201,
                             description="repository name (default: the only one); "
                             "team/name when teams share a name")


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


class GrepQuery(_Body):
    pattern: str = Field(min_length=1, max_length=1000,
                         description="a literal, or an RE2 regex with regex=true")
    regex: bool = False
    path: str | None = Field(default=None, max_length=500, description="path glob filter")
    language: str | None = Field(default=None, max_length=40)
    case_sensitive: bool = False
    context: int = Field(default=0, ge=0, le=10, description="lines before and after")
    limit: int = Field(default=50, ge=1, le=500, description="matching lines shown")


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


class RepoCreate(_Strict):
    root: str = Field(min_length=1, max_length=4096, description="absolute path on the "
                      "workers, under CODENAV_ALLOWED_ROOTS")
    name: str | None = Field(default=None, max_length=100)
    index: bool = Field(default=True, description="false: register only; nothing indexes "
                        "it until a reindex asks")


class TokenCreate(_Strict):
    name: str = Field(min_length=1, max_length=100)
    role: Literal["read", "write", "admin"]
    team: str | None = Field(default=None, max_length=100, description="default: the "
                             "caller's team; a new name creates the team")
    repos: list[str] | None = Field(default=None, max_length=1000, description="limit the "
                                    "token to these repositories of the team")
    expires: str | None = Field(default=None, max_length=20, description="30d, 12h, 2w")
