"""`codenav setup`: each harness writer on empty and populated files, re-runs, --dry-run,
--remove, team mode without the token's value, and the real command end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from codenav.tools import TOOL_NAMES
from codenav_cli.setup import blocks, jsonc
from codenav_cli.setup.base import Context, Server
from codenav_cli.setup.files import Workspace
from codenav_cli.setup.registry import BY_NAME, HARNESSES
from codenav_cli.setup.rules import RULES
from codenav_cli.stores import free_port

CODENAV = str(Path(sys.executable).with_name("codenav"))
COMMAND = "/opt/codenav/bin/codenav"
NAMES = [h.name for h in HARNESSES]
KEYPATH = {"claude-code": ["mcpServers"], "claude-desktop": ["mcpServers"],
           "cursor": ["mcpServers"], "vscode": ["servers"], "windsurf": ["mcpServers"],
           "zed": ["context_servers"], "gemini": ["mcpServers"]}
JSONC = {"vscode", "zed"}  # these harnesses document comments in their config files
CANARY = "cnv_canary_0123456789abcdef"


def make_ctx(tmp: Path, team: bool = False) -> Context:
    env = {"CODENAV_URL": "https://codenav.example.com"} if team else {}
    home, project = tmp / "home", tmp / "project"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    return Context(project=project, home=home, env={"PATH": ""}, platform="linux",
                   server=Server(COMMAND, env, team=team))


def run_plan(ctx: Context, names: list[str], remove: bool = False) -> Workspace:
    ws = Workspace(ctx.home.parent / "state" / "setup.json")
    for name in names:
        BY_NAME[name].plan(ctx, ws, remove)
    ws.apply()
    return ws


def entry_of(ctx: Context, name: str) -> dict[str, Any]:
    path = BY_NAME[name].mcp_file(ctx)  # type: ignore[attr-defined]
    text = path.read_text()
    if name == "codex":
        entry: dict[str, Any] = tomllib.loads(text)["mcp_servers"]["codenav"]
        return entry
    data = jsonc.loads(text) if name in JSONC else json.loads(text)
    for key in KEYPATH[name]:
        data = data[key]
    result: dict[str, Any] = data["codenav"]
    return result


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def folders(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir())


POPULATED_JSON = """\
{
    // the user's own servers and settings
    "theme": "dark",
    "KEY": {
        "other": {"command": "other-server", "args": ["--flag"]} /* keep me */
    },
    "inputs": [{"type": "promptString", "id": "their-key", "password": true}]
}
"""
POPULATED_STRICT = """\
{
  "theme": "dark",
  "KEY": {
    "other": {
      "command": "other-server",
      "args": ["--flag"]
    }
  }
}
"""
POPULATED_TOML = """\
# my Codex settings
model = "gpt-5"

[mcp_servers.other]
command = "other-server"  # keep me
args = ["--flag"]
"""
USER_RULES = "# House rules\n\nWrite tests first."


def populate(ctx: Context, name: str) -> dict[Path, bytes]:
    """Give the harness a config file with other servers, comments and unrelated keys, and
    the project rules files the user's own text; returns the original bytes."""
    harness = BY_NAME[name]
    path: Path = harness.mcp_file(ctx)  # type: ignore[attr-defined]
    path.parent.mkdir(parents=True, exist_ok=True)
    if name == "codex":
        path.write_text(POPULATED_TOML)
    else:
        template = POPULATED_JSON if name in JSONC else POPULATED_STRICT
        path.write_text(template.replace("KEY", KEYPATH[name][0]))
    for rules in ("CLAUDE.md", "AGENTS.md", "GEMINI.md", ".github/copilot-instructions.md"):
        (ctx.project / rules).parent.mkdir(parents=True, exist_ok=True)
        (ctx.project / rules).write_text(USER_RULES)
    return {p: p.read_bytes() for p in [path, *ctx.project.rglob("*.md")]}


@pytest.mark.parametrize("name", NAMES)
def test_each_writer_fills_an_empty_home_and_project_and_a_second_run_changes_nothing(
        tmp_path: Path, name: str) -> None:
    ctx = make_ctx(tmp_path)
    run_plan(ctx, [name])
    entry = entry_of(ctx, name)
    assert entry["command"] == COMMAND and entry["args"] == ["mcp"]
    assert "env" not in entry or "CODENAV_TOKEN" not in entry["env"]
    written = tree(tmp_path)
    if name != "claude-desktop":  # the only harness without a rules file
        assert any(RULES.splitlines()[0].encode() in data for data in written.values())
    again = Workspace(ctx.home.parent / "state" / "setup.json")
    BY_NAME[name].plan(ctx, again, remove=False)
    assert again.changes() == []
    run_plan(ctx, [name])
    assert tree(tmp_path) == written


@pytest.mark.parametrize("name", NAMES)
def test_each_writer_keeps_other_servers_comments_and_keys_and_remove_restores_the_bytes(
        tmp_path: Path, name: str) -> None:
    ctx = make_ctx(tmp_path)
    original = populate(ctx, name)
    run_plan(ctx, [name])
    path: Path = BY_NAME[name].mcp_file(ctx)  # type: ignore[attr-defined]
    text = path.read_text()
    assert entry_of(ctx, name)["command"] == COMMAND
    if name == "codex":
        data = tomllib.loads(text)
        assert data["model"] == "gpt-5" and data["mcp_servers"]["other"]["args"] == ["--flag"]
        assert "# my Codex settings" in text and "# keep me" in text
    else:
        data = jsonc.loads(text)
        assert data["theme"] == "dark"
        assert data[KEYPATH[name][0]]["other"] == {"command": "other-server", "args": ["--flag"]}
        if name in JSONC:
            assert "// the user's own servers" in text and "/* keep me */" in text
            assert {"type": "promptString", "id": "their-key", "password": True} in data["inputs"]
    assert text.startswith(original[path].decode()[:20])  # merged, not rewritten
    rules = [p for p in original if p.suffix == ".md" and p.read_bytes() != original[p]]
    if name not in ("claude-desktop", "cursor", "windsurf"):  # those own their rule files
        assert rules and all(p.read_text().startswith(USER_RULES) for p in rules)
    run_plan(ctx, [name], remove=True)
    assert {p: p.read_bytes() for p in original} == original
    assert not (ctx.project / ".cursor" / "rules").exists()
    assert not (ctx.project / ".windsurf").exists()


@pytest.mark.parametrize("name", NAMES)
def test_remove_in_a_project_setup_filled_leaves_nothing_behind(tmp_path: Path,
                                                                name: str) -> None:
    ctx = make_ctx(tmp_path)
    run_plan(ctx, [name])
    assert tree(ctx.project) or tree(ctx.home)
    run_plan(ctx, [name], remove=True)
    assert tree(tmp_path) == {} and folders(tmp_path) == ["home", "project", "state"]


@pytest.mark.parametrize("name", NAMES)
def test_team_mode_writes_the_url_and_a_token_reference_never_a_token(
        tmp_path: Path, name: str) -> None:
    ctx = make_ctx(tmp_path, team=True)
    run_plan(ctx, [name])
    entry = entry_of(ctx, name)
    assert entry["env"]["CODENAV_URL"] == "https://codenav.example.com"
    expected = {"claude-code": "${CODENAV_TOKEN}", "cursor": "${env:CODENAV_TOKEN}",
                "vscode": "${input:codenav-token}", "windsurf": "${env:CODENAV_TOKEN}",
                "gemini": "${CODENAV_TOKEN}"}
    if name in expected:
        assert entry["env"]["CODENAV_TOKEN"] == expected[name]
    else:
        assert "CODENAV_TOKEN" not in entry["env"]
    if name == "codex":
        assert entry["env_vars"] == ["CODENAV_TOKEN"]
    if name == "vscode":
        inputs = jsonc.loads(BY_NAME[name].mcp_file(ctx).read_text())["inputs"]  # type: ignore
        assert inputs == [{"type": "promptString", "id": "codenav-token",
                           "description": "codenav API token (codenav token create)",
                           "password": True}]
    run_plan(ctx, [name], remove=True)
    assert tree(tmp_path) == {}


def test_switching_vscode_from_team_to_local_takes_the_token_input_out(tmp_path: Path) -> None:
    run_plan(make_ctx(tmp_path, team=True), ["vscode"])
    ctx = make_ctx(tmp_path)
    run_plan(ctx, ["vscode"])
    data = json.loads(BY_NAME["vscode"].mcp_file(ctx).read_text())  # type: ignore[attr-defined]
    assert "inputs" not in data and "env" not in data["servers"]["codenav"]


def test_a_config_that_does_not_parse_is_reported_and_left_untouched(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".cursor").mkdir(parents=True)
    broken = b'{"mcpServers": {"other": {"command": "x"},}\n'  # an unclosed object
    (project / ".cursor" / "mcp.json").write_bytes(broken)
    done = setup(tmp_path, "cursor", "gemini")
    assert done.returncode == 1
    assert "Cursor" in done.stdout and "failed: cannot merge into" in done.stdout
    assert "line 2 column 1" in done.stdout, done.stdout
    assert (project / ".cursor" / "mcp.json").read_bytes() == broken
    assert not (project / ".cursor" / "rules").exists()  # nothing of that harness is written
    assert json.loads((project / ".gemini" / "settings.json").read_text())["mcpServers"]
    assert home.is_dir()


def test_codex_leaves_a_hand_written_codenav_table_alone(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    config = ctx.home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[mcp_servers.codenav]\ncommand = "my-own-codenav"\n')
    ws = Workspace(ctx.home / "setup.json")
    with pytest.raises(Exception, match="not written by codenav setup"):
        BY_NAME["codex"].plan(ctx, ws, remove=False)


def test_rules_another_harness_still_reads_stay_when_one_is_removed(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    run_plan(ctx, ["claude-code", "zed"])  # Zed reads the first instructions file: CLAUDE.md
    claude_md = ctx.project / "CLAUDE.md"
    assert blocks.Style.markdown().span(claude_md.read_text()) is not None
    ws = Workspace(ctx.home.parent / "state" / "setup.json")
    notes = BY_NAME["zed"].plan(ctx, ws, remove=True)
    ws.apply()
    assert any("Claude Code reads them too" in n for n in notes)
    assert RULES.splitlines()[0] in claude_md.read_text()
    run_plan(ctx, ["claude-code"], remove=True)
    assert not claude_md.exists()


@pytest.mark.parametrize("original", [
    "{}", '{"a": 1}', '{\n  "a": 1\n}\n', '{\n  "a": 1,\n}\n', '{\n  "a": 1 // why\n}',
    '// head\n{\n\t"mcpServers": {\n\t\t"x": {} /* x */,\n\t},\n\t"b": [1, 2]\n}\n',
    '{\n  "mcpServers": { // none yet\n  }\n}\n',
    '{\r\n  "a": 1,\r\n  "mcpServers": {\r\n    "x": {"command": "y"}\r\n  }\r\n}\r\n',
    '{\r\n  "mcpServers": {\r\n    "x": 1,\r\n    "codenav": {}\r\n  }\r\n}',
])
def test_jsonc_edits_give_back_every_byte_when_the_entry_is_removed(original: str) -> None:
    value = {"command": "/x/codenav", "args": ["mcp"], "env": {"CODENAV_URL": "http://h"}}
    added = jsonc.upsert(original, ["mcpServers", "codenav"], value)
    assert jsonc.loads(added)["mcpServers"]["codenav"] == value
    assert jsonc.loads(added) == {**jsonc.loads(original),
                                  "mcpServers": {**jsonc.loads(original).get("mcpServers", {}),
                                                 "codenav": value}}
    assert jsonc.upsert(added, ["mcpServers", "codenav"], value) == added
    if "\r\n" in original:  # Windows line ends stay Windows line ends
        assert "\n" not in added.replace("\r\n", "")
    if '"codenav"' not in original:
        assert jsonc.delete(added, ["mcpServers", "codenav"]) == original


@pytest.mark.parametrize("original", ["", "# Title\n", "# Title", "x = 1\n\n[t]\ny = 2\n"])
def test_a_marked_block_comes_out_as_it_went_in(original: str) -> None:
    for style in (blocks.Style.markdown(), blocks.Style.hash()):
        added = blocks.upsert(original, "one\ntwo\n", style)
        assert blocks.upsert(added, "one\ntwo\n", style) == added
        changed = blocks.upsert(added, "three\n", style)
        assert "three" in changed and "two" not in changed
        assert blocks.strip(changed, style) == original


# --- the real command --------------------------------------------------------------------

def setup(tmp: Path, *args: str, extra: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODENAV_", "XDG_"))}
    env.update({"HOME": str(tmp / "home"), "CODENAV_HOME": str(tmp / "state"),
                "PATH": str(Path(CODENAV).parent), **(extra or {})})
    (tmp / "home").mkdir(exist_ok=True)
    (tmp / "project").mkdir(exist_ok=True)
    return subprocess.run([CODENAV, "setup", *args, "--project", str(tmp / "project")],
                          env=env, capture_output=True, text=True, timeout=60, cwd=tmp)


def parse_every_file(tmp: Path) -> dict[str, Any]:
    """Each written file through the parser its harness uses."""
    parsed: dict[str, Any] = {}
    for path in sorted(p for p in tmp.rglob("*") if p.is_file() and "state" not in p.parts):
        text = path.read_text()
        if path.suffix == ".json":
            parsed[path.name if path.parent.name != ".cursor" else "cursor"] = json.loads(text)
        elif path.suffix == ".toml":
            parsed["codex"] = tomllib.loads(text)
        elif path.suffix in (".mdc", ".md") and text.startswith("---\n"):
            parsed[path.name] = yaml.safe_load(text.split("---\n")[1])
    return parsed


def test_setup_all_writes_files_their_parsers_read_reruns_clean_and_removes_cleanly(
        tmp_path: Path) -> None:
    done = setup(tmp_path, "--all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(" configured: ") == 8, done.stdout
    parsed = parse_every_file(tmp_path)
    for key in (".mcp.json", "claude_desktop_config.json", "cursor", "mcp_config.json"):
        assert parsed[key]["mcpServers"]["codenav"]["command"] == CODENAV
    assert parsed["mcp.json"]["servers"]["codenav"]["type"] == "stdio"  # VS Code
    assert parsed["settings.json"]  # Zed's and Gemini's both parse as JSON
    assert parsed["codex"]["mcp_servers"]["codenav"]["args"] == ["mcp"]
    assert parsed["codenav.mdc"] == {"description": parsed["codenav.mdc"]["description"],
                                     "alwaysApply": True}
    assert parsed["codenav.md"] == {"trigger": "always_on"}
    first = tree(tmp_path)

    again = setup(tmp_path, "--all")
    assert again.returncode == 0 and again.stdout.count(" unchanged") == 8, again.stdout
    assert tree(tmp_path) == first

    removed = setup(tmp_path, "--remove")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert tree(tmp_path) == {}, removed.stdout
    assert folders(tmp_path) == ["home", "project", "state"]


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    done = setup(tmp_path, "--all", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "--- /dev/null\n+++ b/.mcp.json\n" in done.stdout
    assert "+++ ~/.codex/config.toml\n" in done.stdout
    assert "would be configured" in done.stdout and "dry run: nothing was written" in done.stdout
    assert tree(tmp_path) == {} and folders(tmp_path) == ["home", "project"]
    setup(tmp_path, "cursor")
    before = tree(tmp_path)
    removing = setup(tmp_path, "cursor", "--remove", "--dry-run")
    assert "+++ /dev/null" in removing.stdout and "would be removed" in removing.stdout
    assert tree(tmp_path) == before


def test_a_team_server_setup_never_writes_the_token(tmp_path: Path) -> None:
    done = setup(tmp_path, "--all", extra={"CODENAV_URL": "https://codenav.example.com",
                                          "CODENAV_TOKEN": CANARY})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "team server https://codenav.example.com" in done.stdout
    written = tree(tmp_path)
    assert len(written) >= 12
    assert not [name for name, data in written.items() if CANARY.encode() in data]
    assert all(b"https://codenav.example.com" in written[name] for name in written
               if name.endswith((".json", ".toml")) and not name.startswith("state"))


def test_without_arguments_only_detected_harnesses_are_configured_and_the_rest_say_why(
        tmp_path: Path) -> None:
    (tmp_path / "home" / ".cursor").mkdir(parents=True)
    (tmp_path / "home" / ".codex").mkdir()
    done = setup(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.strip().startswith("Cursor") and "configured" in line for line in lines)
    assert "detected: ~/.cursor exists" in done.stdout
    assert any(line.strip().startswith("Codex CLI") and "configured" in line for line in lines)
    skipped = [line for line in lines if "skipped: not detected (" in line]
    assert len(skipped) == 6, done.stdout
    assert any("Windsurf" in line and "~/.codeium/windsurf" in line for line in skipped)
    assert not (tmp_path / "project" / ".mcp.json").exists()


def test_an_unknown_harness_is_one_line_with_the_known_ones(tmp_path: Path) -> None:
    done = setup(tmp_path, "emacs")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "codenav: unknown harness emacs"
    assert "claude-code" in done.stderr.splitlines()[1]


def test_the_written_entry_starts_the_adapter_over_stdio_with_its_environment(
        tmp_path: Path) -> None:
    """Launch the server exactly as Cursor's config says, through the real MCP client: it
    lists codenav's tools and reaches for the stack named by the entry's CODENAV_HOME."""
    setup(tmp_path, "cursor")
    dead = f"http://127.0.0.1:{free_port()}"
    (tmp_path / "state").mkdir(exist_ok=True)
    (tmp_path / "state" / "stack.json").write_text(json.dumps({"url": dead, "token": "x"}))
    entry = json.loads((tmp_path / "project" / ".cursor" / "mcp.json").read_text()
                       )["mcpServers"]["codenav"]
    assert entry["env"] == {"CODENAV_HOME": str(tmp_path / "state")}
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   env={**entry["env"], "PATH": os.environ.get("PATH", "")})
    seen: list[Any] = []

    async def go() -> None:
        async with Client(params) as client:
            seen.append({t.name for t in (await client.list_tools()).tools})
            with pytest.raises(MCPError) as refused:  # the API is down: an MCP error
                await client.call_tool("status", {})
            seen.append(str(refused.value))

    anyio.run(go)
    assert seen[0] == set(TOOL_NAMES)
    assert f"cannot reach the codenav API at {dead}" in seen[1]


def test_the_rules_fit_windsurfs_rule_file_limit_and_say_when_to_use_each_tool() -> None:
    from codenav_cli.setup.rules import CURSOR_MDC, WINDSURF_MD

    assert len(WINDSURF_MD) < 12_000  # Windsurf's documented limit for one rule file
    for tool in ("find_files", "search", "grep", "definition", "references", "impact"):
        assert f"`{tool}`" in RULES
    assert CURSOR_MDC.endswith(RULES) and WINDSURF_MD.endswith(RULES)
