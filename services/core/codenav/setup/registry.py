"""The harnesses setup knows, in the order it configures them."""

from __future__ import annotations

from codenav.setup.base import Harness
from codenav.setup.claude_code import ClaudeCode
from codenav.setup.claude_desktop import ClaudeDesktop
from codenav.setup.codex import Codex
from codenav.setup.cursor import Cursor
from codenav.setup.gemini import Gemini
from codenav.setup.vscode import VSCode
from codenav.setup.windsurf import Windsurf
from codenav.setup.zed import Zed

HARNESSES: list[Harness] = [ClaudeCode(), ClaudeDesktop(), Cursor(), VSCode(), Windsurf(),
                            Zed(), Codex(), Gemini()]
BY_NAME = {h.name: h for h in HARNESSES}
