"""The tool endpoints: the same names, arguments and answers as the MCP tools, each one
allowed to the role ``codenav.roles.REQUIRED`` names for it. A call carrying the header
``X-Codenav-Overlay`` (the stdio adapter's) is answered with the caller's overlay of
uncommitted edits (``codenav.overlays``).

An answer is written as JSON in the request's worker thread and returned as a ``Response``:
returned as a dict, FastAPI would check it against the ``dict[str, Any]`` response model in
a second trip through the thread pool and then serialise it (``bench/README.md``, "find_files:
fewer Python objects per query, and statements that run while Python works")."""

# (no `from __future__ import annotations`: FastAPI reads each endpoint's body model from
# its annotations, made here per tool)

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Header, Response
from pydantic_core import to_json

from codenav.access import Caller
from codenav.tools import TOOLS
from codenav.tools.base import Tool
from codenav_api.deps import allowed, services
from codenav_api.service import Services

router = APIRouter(prefix="/v1", tags=["tools"])


_ANSWER: dict[int | str, dict[str, Any]] = {200: {
    "description": "The tool's answer",
    "content": {"application/json": {"schema": {"type": "object",
                                                "additionalProperties": True}}}}}
"""The documented answer: a JSON object (as the ``dict[str, Any]`` response model said)."""


def answer_json(answer: dict[str, Any]) -> Response:
    """``answer`` as a JSON response, written as the response model wrote it: a float that
    is not a number (NaN, infinities) as ``null``, never as bare ``NaN``, which is not
    JSON."""
    return Response(to_json(answer, inf_nan_mode="null"), media_type="application/json")


def _endpoint(tool: Tool) -> Callable[..., Response]:
    model = tool.args

    def endpoint(body: model, svc: Services = Depends(services),  # type: ignore[valid-type]
                 caller: Caller = Depends(allowed(tool.name)),
                 overlay: str | None = Header(default=None, alias="X-Codenav-Overlay",
                                              max_length=64)) -> Response:
        return answer_json(svc.run(caller, tool.name, body, overlay))

    endpoint.__name__ = tool.name
    return endpoint


for _tool in TOOLS.values():  # POST /v1/<tool>, its body the tool's argument model
    router.add_api_route(f"/{_tool.name}", _endpoint(_tool), methods=["POST"],
                         summary=_tool.summary, name=_tool.name, response_model=None,
                         responses=_ANSWER)
