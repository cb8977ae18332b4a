"""Request bodies of the REST API's resource routes (a tool's body is its argument model
in ``codenav.tools``).

Every string anywhere in a request (body fields, list items, path parameters) goes through
one validator: NUL bytes and invalid Unicode are a 400 naming the field
(``codenav.validate``), never a 500 from deeper down.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from codenav.validate import StrictModel, Text

__all__ = ["RefsAsk", "RepoCreate", "Text", "TokenCreate"]

class RefsAsk(StrictModel):
    refs: list[Text] = Field(default_factory=list, max_length=100, description="refs to "
                             "index from the repository's git: NAME, or NAME=REV")
    follow: list[Text] | None = Field(default=None, max_length=100, description="ref "
                                      "patterns to follow (main, release/*; replaces the list)")
    keep: int | None = Field(default=None, ge=0, le=1000, description="earlier commits of "
                             "each followed ref kept queryable")


class RepoCreate(RefsAsk):
    root: str = Field(min_length=1, max_length=4096, description="absolute path on the "
                      "workers, under CODENAV_ALLOWED_ROOTS")
    name: str | None = Field(default=None, max_length=100)
    index: bool = Field(default=True, description="false: register only; nothing indexes "
                        "it until a reindex asks")


class TokenCreate(StrictModel):
    name: str = Field(min_length=1, max_length=100)
    role: Literal["read", "write", "admin"]
    team: str | None = Field(default=None, max_length=100, description="default: the "
                             "caller's team; a new name creates the team")
    repos: list[str] | None = Field(default=None, max_length=1000, description="limit the "
                                    "token to these repositories of the team")
    expires: str | None = Field(default=None, max_length=20, description="30d, 12h, 2w")
