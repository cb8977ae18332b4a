"""``codenav setup``: configure agent harnesses to use codenav, in one re-runnable command.

Each harness gets the MCP server entry (``codenav mcp`` by its absolute path) and a few lines
of agent rules (``rules.RULES``, the one text). Edits merge into the user's files: only
codenav's entry or marked block changes, comments and other servers stay, a second run
changes nothing, ``--dry-run`` prints the unified diff and writes nothing, and ``--remove``
takes out what setup added.

Harness, MCP entry; rules; token reference for a team server:

- ``claude-code``: ``.mcp.json`` ``mcpServers``; ``CLAUDE.md`` block; ``${CODENAV_TOKEN}``
- ``claude-desktop``: ``claude_desktop_config.json`` ``mcpServers`` (user level); no rules
  file (the server's MCP instructions); no expansion: the token comes from its environment
- ``cursor``: ``.cursor/mcp.json`` ``mcpServers``; ``.cursor/rules/codenav.mdc``;
  ``${env:CODENAV_TOKEN}``
- ``vscode``: ``.vscode/mcp.json`` ``servers``; ``.github/copilot-instructions.md`` block;
  ``${input:codenav-token}`` (a password input VS Code keeps in its secret storage)
- ``windsurf``: ``~/.codeium/windsurf/mcp_config.json`` ``mcpServers``;
  ``.windsurf/rules/codenav.md``; ``${env:CODENAV_TOKEN}``
- ``zed``: ``~/.config/zed/settings.json`` ``context_servers``; the first instructions file
  Zed reads, else ``AGENTS.md``; no expansion: the token comes from its environment
- ``codex``: ``~/.codex/config.toml`` ``[mcp_servers.codenav]``; ``AGENTS.md`` block;
  ``env_vars = ["CODENAV_TOKEN"]`` (forwarded from Codex's environment)
- ``gemini``: ``.gemini/settings.json`` ``mcpServers``; ``GEMINI.md`` block;
  ``${CODENAV_TOKEN}``

Each harness's module docstring names the vendor documentation its locations and keys come
from. Package layout: ``jsonc`` (minimal-edit JSON with comments), ``blocks`` (marked blocks
in Markdown and TOML), ``files`` (the workspace: overlay, diff, atomic apply, what setup
created), ``base`` (server entry, context, the harness protocol), one module per harness,
``registry``, ``run`` (selection, planning, report) and ``cli`` (the subcommand). It uses
the standard library and ``codenav.config``/``codenav.errors`` only.
"""
