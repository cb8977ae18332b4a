"""OpenAI Codex CLI: ``[mcp_servers.codenav]`` in ``~/.codex/config.toml`` (``$CODEX_HOME``)
and a marked section in the project's ``AGENTS.md``.

Source: developers.openai.com/codex/mcp and developers.openai.com/codex/config-reference.
A stdio server is a table ``[mcp_servers.<name>]`` with ``command``, ``args``, ``env`` (values
set for the server), ``env_vars`` (variables forwarded from Codex's own environment) and
``cwd``. Codex starts servers with a short allow-list of variables, so a team entry forwards
CODENAV_TOKEN through ``env_vars`` and never holds its value. Codex reads ``AGENTS.md`` from
the project root as its instructions. The table is written as a marked block so that
comments and everything else in the file stay as they are; the result is checked with
``tomllib`` before anything is written.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from codenav.errors import ConfigError
from codenav_cli.setup import blocks, files
from codenav_cli.setup.base import NAME, TOKEN_VAR, Context, Harness, shared_rules
from codenav_cli.setup.files import Workspace

TOML = blocks.Style.hash()


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml(key)


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {type(value).__name__}")


def _parse(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot merge into {path}: {exc}",
                          hint="fix the file (or add the entry by hand); it was left unchanged"
                          ) from None


class Codex(Harness):
    name = "codex"
    title = "Codex CLI"

    def folder(self, ctx: Context) -> Path:
        custom = ctx.env.get("CODEX_HOME", "")
        return Path(custom) if custom else ctx.home / ".codex"

    def probes(self, ctx: Context) -> list[Path | str]:
        return ["codex", self.folder(ctx)]

    def mcp_file(self, ctx: Context) -> Path:
        return self.folder(ctx) / "config.toml"

    def rules_file(self, ctx: Context, ws: Workspace) -> Path | None:
        return ctx.project / "AGENTS.md"

    def entry(self, ctx: Context) -> dict[str, Any]:
        entry = ctx.server.entry(None, project_level=False)
        if ctx.server.team:
            entry["env_vars"] = [TOKEN_VAR]
        return entry

    def configured(self, ctx: Context, ws: Workspace) -> bool:
        text = ws.read(self.mcp_file(ctx))
        try:
            return bool(text) and NAME in tomllib.loads(text or "").get("mcp_servers", {})
        except tomllib.TOMLDecodeError:
            return False

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        path = self.mcp_file(ctx)
        text = ws.read(path)
        if remove:
            files.text_block(ws, path, "", TOML, remove=True)
        else:
            current = _parse(path, text or "")
            mine = text is not None and TOML.span(text) is not None
            if not mine and NAME in current.get("mcp_servers", {}):
                raise ConfigError(f"{path} already defines [mcp_servers.{NAME}], not written "
                                  "by codenav setup", hint="remove that table and run setup "
                                  "again to let setup manage it; it was left unchanged")
            entry = self.entry(ctx)
            body = f"[mcp_servers.{NAME}]\n" + "".join(
                f"{key} = {_toml(value)}\n" for key, value in entry.items())
            new = blocks.upsert(text, body, TOML)
            if _parse(path, new).get("mcp_servers", {}).get(NAME) != entry:
                raise ConfigError(f"cannot add [mcp_servers.{NAME}] to {path} (mcp_servers is "
                                  "defined inline?)", hint="add the table by hand")
            ws.write(path, new)
        rules = self.rules_file(ctx, ws)
        assert rules is not None
        return shared_rules(ctx, ws, rules, remove, self)
