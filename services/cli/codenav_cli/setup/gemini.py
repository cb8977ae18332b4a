"""Gemini CLI: ``.gemini/settings.json`` in the project and a marked section in
``GEMINI.md``.

Source: geminicli.com/docs/tools/mcp-server and geminicli.com/docs/cli/configuration. The
project settings file (``~/.gemini/settings.json`` for the user) holds ``{"mcpServers": {name:
{"command", "args", "env", "cwd", "timeout", "trust"}}}``; string values expand ``$VAR`` and
``${VAR}``, and Gemini CLI keeps variables that look like secrets out of a server's
environment unless ``env`` names them, so the token is ``"CODENAV_TOKEN": "${CODENAV_TOKEN}"``.
``GEMINI.md`` at the project root is its context (instructions) file.
"""

from __future__ import annotations

from codenav_cli.setup.base import Harness


class Gemini(Harness):
    name = "gemini"
    title = "Gemini CLI"

    own = ("gemini", ".gemini")
    project_mcp = ".gemini/settings.json"

    rules_md = "GEMINI.md"
