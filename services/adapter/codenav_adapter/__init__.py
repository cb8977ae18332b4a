"""codenav adapter: a stdio MCP server on a developer's machine that proxies tool calls to
the team's codenav API. Light: needs only mcp and httpx (and codenav's light core modules).
"""
