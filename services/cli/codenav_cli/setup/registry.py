"""The harnesses setup knows, in the order it configures them."""

from __future__ import annotations

from codenav_cli.setup.base import Harness
from codenav_cli.setup.claude_code import ClaudeCode
from codenav_cli.setup.claude_desktop import ClaudeDesktop
from codenav_cli.setup.codex import Codex
from codenav_cli.setup.cursor import Cursor
from codenav_cli.setup.gemini import Gemini
from codenav_cli.setup.vscode import VSCode
from codenav_cli.setup.windsurf import Windsurf
from codenav_cli.setup.zed import Zed

HARNESSES: list[Harness] = [ClaudeCode(), ClaudeDesktop(), Cursor(), VSCode(), Windsurf(),
                            Zed(), Codex(), Gemini()]
BY_NAME = {h.name: h for h in HARNESSES}
