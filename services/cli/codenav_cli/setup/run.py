"""One ``codenav setup`` run: which harnesses, what each one changes, and the report."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codenav.config import Settings
from codenav.errors import ConfigError
from codenav_cli.setup.base import Context, Harness, Server
from codenav_cli.setup.files import Workspace
from codenav_cli.setup.registry import BY_NAME, HARNESSES


@dataclass
class Outcome:
    harness: Harness
    state: str  # configured, unchanged, removed, nothing to remove, skipped, failed
    detail: str = ""
    notes: list[str] = field(default_factory=list)


def project_root(start: Path) -> Path:
    """The git work tree holding ``start``, else ``start`` itself."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def codenav_command() -> str:
    """The absolute path of the installed ``codenav`` executable."""
    beside = Path(sys.executable).with_name("codenav")
    if beside.is_file():
        return str(beside.absolute())
    found = shutil.which("codenav")
    if found:
        return str(Path(found).absolute())
    raise ConfigError("cannot find the installed `codenav` executable",
                      hint="install codenav (make install) and run setup with it")


def context(settings: Settings, project: Path, url: str = "", repo: str = "",
            env: Mapping[str, str] | None = None, command: str | None = None) -> Context:
    """Local stack when ``url`` is empty, else the team server at ``url``."""
    env = os.environ if env is None else env
    server_env: dict[str, str] = {}
    if url:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--url must be an http(s) address, got {url!r}")
        server_env["CODENAV_URL"] = url.rstrip("/")
    elif settings.home_path.resolve() != (Path.home() / ".codenav").resolve():
        server_env["CODENAV_HOME"] = str(settings.home_path.absolute())
    if repo:
        server_env["CODENAV_REPO"] = repo
    server = Server(command or codenav_command(), server_env, team=bool(url))
    return Context(project=project.absolute(), home=Path.home(), env=env,
                   platform=sys.platform, server=server)


def select(ctx: Context, names: list[str], every: bool, remove: bool
           ) -> tuple[list[Harness], list[Outcome]]:
    """(harnesses to act on, the ones skipped and why)."""
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ConfigError(f"unknown harness {', '.join(unknown)}",
                          hint=f"known: {', '.join(BY_NAME)} (or --all)")
    if names:
        return [BY_NAME[n] for n in BY_NAME if n in names], []
    if every or remove:
        return list(HARNESSES), []
    chosen, skipped = [], []
    for harness in HARNESSES:
        if harness.detect(ctx):
            chosen.append(harness)
        else:
            skipped.append(Outcome(harness, "skipped",
                                   f"not detected ({harness.looked_for(ctx)})"))
    return chosen, skipped


def plan(ctx: Context, ws: Workspace, harnesses: list[Harness], remove: bool) -> list[Outcome]:
    """Plan every harness on ``ws``; a harness whose file cannot be merged changes nothing."""
    outcomes = []
    for harness in harnesses:
        before = ws.snapshot()
        try:
            notes = harness.plan(ctx, ws, remove)
        except ConfigError as exc:
            ws.rollback(before)
            detail = exc.message + (f" ({exc.hint})" if exc.hint else "")
            outcomes.append(Outcome(harness, "failed", detail))
            continue
        touched = ws.changed_since(before)
        if touched:
            state = "removed" if remove else "configured"
        else:
            state = "nothing to remove" if remove else "unchanged"
        outcomes.append(Outcome(harness, state, ", ".join(ctx.show(p) for p in touched), notes))
    return outcomes


def report(ctx: Context, outcomes: list[Outcome], dry_run: bool) -> str:
    if ctx.server.team:
        mode = (f"team server {ctx.server.env['CODENAV_URL']}; the token is read from "
                f"CODENAV_TOKEN, never written")
    else:
        mode = "local stack: `codenav mcp` finds it through $CODENAV_HOME/stack.json"
    lines = [f"codenav setup: project {ctx.project} ({mode})"]
    width = max(len(o.harness.title) for o in outcomes) if outcomes else 0
    for outcome in outcomes:
        state = outcome.state
        if dry_run and state in ("configured", "removed"):
            state = "would be " + state
        line = f"  {outcome.harness.title:<{width}}  {state}"
        lines.append(line + (f": {outcome.detail}" if outcome.detail else ""))
        lines.extend(f"    note: {note}" for note in outcome.notes)
    if dry_run:
        lines.append("dry run: nothing was written")
    return "\n".join(lines)


def main(names: list[str], every: bool, remove: bool, dry_run: bool, project: str | None,
         url: str | None, local: bool, repo: str | None, settings: Settings) -> int:
    root = Path(project).expanduser() if project else project_root(Path.cwd())
    if not root.is_dir():
        raise ConfigError(f"{root} is not a directory")
    team_url = "" if local else (url or settings.url)
    ctx = context(settings, root, team_url, repo or "")
    harnesses, skipped = select(ctx, names, every, remove)
    ws = Workspace(settings.home_path / "setup.json")
    outcomes = plan(ctx, ws, harnesses, remove)
    if not names and not every and not remove:
        for outcome in outcomes:
            outcome.notes.insert(0, f"detected: {outcome.harness.detect(ctx)}")
    outcomes += skipped
    if dry_run:
        sys.stdout.write(ws.diff(ctx.show))
    else:
        ws.apply()
    sys.stdout.write(report(ctx, outcomes, dry_run) + "\n")
    if not harnesses and not remove:
        sys.stdout.write("no harness detected: name one (codenav setup cursor) or use --all\n")
    return 1 if any(o.state == "failed" for o in outcomes) else 0
