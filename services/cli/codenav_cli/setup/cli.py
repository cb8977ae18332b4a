"""The ``codenav setup`` subcommand: its arguments and the call into ``run.main``."""

from __future__ import annotations

import argparse
from typing import Any

from codenav.config import Settings


def add_parser(sub: Any) -> None:
    from codenav_cli.setup.registry import BY_NAME

    p = sub.add_parser(
        "setup", help="configure agent harnesses (MCP entry and rules) to use codenav",
        description="Write codenav's MCP server entry and agent rules into each harness's "
        "config. With no HARNESS, configures the detected ones. Re-runnable: a second run "
        "changes nothing.")
    p.add_argument("harness", nargs="*", metavar="HARNESS",
                   help=f"one or more of: {', '.join(BY_NAME)}")
    p.add_argument("--all", action="store_true", help="every harness, detected or not")
    p.add_argument("--dry-run", action="store_true",
                   help="print the unified diff of what would change; write nothing")
    p.add_argument("--remove", action="store_true", help="take out what setup added")
    p.add_argument("--project", help="project root (default: the git work tree of the "
                   "current directory)")
    p.add_argument("--url", help="team server URL (default: CODENAV_URL); the token is read "
                   "from CODENAV_TOKEN at run time, never written")
    p.add_argument("--local", action="store_true",
                   help="configure the local stack even when CODENAV_URL is set")
    p.add_argument("--repo", help="default repository for project-level entries")
    p.set_defaults(func=cmd_setup)


def cmd_setup(args: argparse.Namespace, settings: Settings) -> int:
    from codenav_cli.setup.run import main

    return main(args.harness, args.all, args.remove, args.dry_run, args.project, args.url,
                args.local, args.repo, settings)
