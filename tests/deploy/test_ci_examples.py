"""The CI publishing examples in deploy/ci: valid YAML, a `codenav publish` command the real
CLI parser accepts, the token from the CI's secrets (never written in the file), and the
local store's directory cached between jobs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from codenav_cli.cli import build_parser

CI = Path(__file__).resolve().parents[2] / "deploy" / "ci"


def _publish_args(text: str) -> list[str]:
    """The `codenav publish` command of a job, its CI expressions and shell parts blanked."""
    text = re.sub(r"\$\{\{.*?\}\}", "", text)  # GitHub expressions
    text = re.sub(r"\$\(.*?\)", "", text)  # command substitutions
    words = shlex.split(text.replace("\n", " "))
    start = words.index("publish")
    return words[start:]


def _steps(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if "jobs" in data:  # GitHub Actions
        return [(step.get("run", ""), step.get("env", {})) for job in data["jobs"].values()
                for step in job["steps"]]
    return [(line, {}) for job in data.values() if isinstance(job, dict)
            for line in job.get("script", [])]


@pytest.mark.parametrize("name", ["github-actions.yml", "gitlab-ci.yml"])
def test_a_ci_example_publishes_with_flags_the_cli_knows_and_a_secret_token(name: str) -> None:
    text = (CI / name).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    commands = [(run, env) for run, env in _steps(data) if "codenav publish" in run]
    assert len(commands) == 1, name
    run, env = commands[0]
    args = build_parser().parse_args(_publish_args(run))
    assert args.command == "publish" and args.repo and args.ref and args.cache
    assert "cnv_" not in text  # no token is ever written in the file
    if env:  # GitHub: from the repository's secrets and variables
        assert env["CODENAV_TOKEN"] == "${{ secrets.CODENAV_TOKEN }}"
        assert env["CODENAV_URL"].startswith("${{ vars.")
        cached = [s["with"]["path"] for job in data["jobs"].values() for s in job["steps"]
                  if str(s.get("uses", "")).startswith("actions/cache")]
    else:  # GitLab: CI/CD variables, the cache per ref
        job = next(j for j in data.values() if isinstance(j, dict) and "script" in j)
        cached = job["cache"]["paths"]
        assert "CI_COMMIT_REF_SLUG" in job["cache"]["key"]
    assert args.cache in cached
