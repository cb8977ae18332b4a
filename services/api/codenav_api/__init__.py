"""codenav API: REST under /v1 and MCP over streamable HTTP at /mcp."""
