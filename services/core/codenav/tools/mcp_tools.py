"""The registry's tools on an MCP server: the stdio adapter registers them with a backend
that calls the API over HTTP, the API at ``/mcp`` with one that runs them in-process.

Each tool's MCP input schema is its argument model's (types, defaults, bounds, docs), and
its arguments are checked by that model before the backend sees them. Only the arguments
a caller gave (not their defaults) are forwarded: the server's model fills in the rest.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Protocol

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from pydantic import Field, ValidationError

from codenav.errors import CodenavError, UserError
from codenav.tools import TOOLS, render
from codenav.tools.base import Args, Tool
from codenav.validate import invalid


class Backend(Protocol):
    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]: ...


def _signature(model: type[Args]) -> inspect.Signature:
    """The model's fields as keyword parameters, which the SDK turns into the schema."""
    params = []
    for name, info in model.model_fields.items():
        metadata = (*info.metadata, Field(description=info.description))
        annotation: Any = Annotated.__class_getitem__((info.annotation, *metadata))  # type: ignore[attr-defined]
        default = inspect.Parameter.empty if info.is_required() else info.default
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=annotation))
    return inspect.Signature(params, return_annotation=CallToolResult)


def _message(exc: CodenavError) -> str:
    return exc.message + (f" ({exc.hint})" if exc.hint else "")


def register_tools(server: MCPServer, backend: Backend,
                   default_repo: Callable[[], str | None] = lambda: None) -> None:
    """Add every tool of the registry to ``server``; each one forwards to ``backend``."""

    async def run(tool: Tool, given: dict[str, Any]) -> CallToolResult:
        try:
            args = tool.args.model_validate(given).model_dump(exclude_defaults=True)
        except ValidationError as exc:
            raise ToolError(_message(invalid(exc.errors()))) from None
        if not args.get("repo") and default_repo():
            args["repo"] = default_repo()
        try:
            data = await backend.call(tool.name, args)
        except UserError as exc:  # the model can fix these: bad query, unknown path
            raise ToolError(_message(exc)) from None
        except CodenavError as exc:  # the model cannot: API or database unreachable
            raise MCPError(code=-32603, message=_message(exc)) from None
        return CallToolResult(content=[TextContent(type="text", text=render(tool.name, data))],
                              structured_content=data)

    for tool in TOOLS.values():
        server.add_tool(_function(tool, run), name=tool.name, description=tool.description)


def _function(tool: Tool, run: Callable[[Tool, dict[str, Any]], Awaitable[CallToolResult]]
              ) -> Callable[..., Awaitable[CallToolResult]]:
    async def call(**given: Any) -> CallToolResult:
        return await run(tool, given)

    call.__signature__ = _signature(tool.args)  # type: ignore[attr-defined]
    call.__name__ = tool.name
    return call
