"""The Dockerfiles and the build context: what each image copies, installs and runs as."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.deploy.deploykit import (
    DOCKERFILES,
    ROOT,
    _dockerfiles,
    _ignored,
    _parse_dockerfile,
)


def test_every_service_with_an_entrypoint_has_a_dockerfile() -> None:
    assert set(_dockerfiles()) >= {"api", "worker", "watcher", "adapter"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_dockerfile_copies_sources_that_exist_and_the_build_context_keeps(
        dockerfile: Path) -> None:
    parsed = _parse_dockerfile(dockerfile)
    assert parsed.copies, "copies nothing"
    for _, source in parsed.copies:
        local = ROOT / source
        assert local.exists(), f"COPY {source}: not in the repository"
        files = [local] if local.is_file() else [
            p for p in local.rglob("*") if p.is_file() and p.suffix in (".py", ".sql", ".toml")
            and "__pycache__" not in p.parts and ".egg-info" not in str(p)]
        assert files, f"COPY {source}: nothing to build"
        for path in files:
            relative = path.relative_to(ROOT).as_posix()
            assert not _ignored(relative), f"{relative} is excluded by .dockerignore"


def test_dockerignore_keeps_the_virtualenv_git_caches_and_secrets_out_of_the_context() -> None:
    for path in (".venv/bin/python", ".git/HEAD", ".env", "bench/out/run.json",
                 "services/core/codenav/__pycache__/cli.cpython-311.pyc",
                 "services/api/codenav_api.egg-info/PKG-INFO", ".pytest_cache/v/x"):
        assert _ignored(path), f"{path} is sent to the build"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_images_are_python_slim_unbuffered_and_run_as_a_non_root_user(dockerfile: Path) -> None:
    parsed = _parse_dockerfile(dockerfile)
    assert parsed.args("FROM") == ["python:3.11-slim"]
    assert any("PYTHONUNBUFFERED=1" in env for env in parsed.args("ENV"))
    keywords = [kw for kw, _ in parsed.instructions]
    users = parsed.args("USER")
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert max(i for i, kw in enumerate(keywords) if kw == "USER") < keywords.index("CMD")


@pytest.mark.parametrize(("service", "core_extras"), [
    ("api", "server"), ("worker", "server"), ("watcher", "server"), ("adapter", "")])
def test_images_install_the_core_and_their_own_service_only_and_the_api_the_cli(service: str,
                                                            core_extras: str) -> None:
    parsed = _dockerfiles()[service]
    installed = {folder.relative_to(ROOT).as_posix(): extras
                 for folder, extras in parsed.installed()}
    # the api image also runs the one-shot `codenav migrate` and `codenav token create`
    cli = {"services/cli": ""} if service == "api" else {}
    assert installed == {"services/core": core_extras, f"services/{service}": "", **cli}
    assert all("--no-cache-dir" in run for run in parsed.args("RUN") if "pip install" in run)


@pytest.mark.parametrize("service", ["worker", "watcher"])
def test_worker_and_watcher_images_have_git(service: str) -> None:
    runs = " ".join(_dockerfiles()[service].args("RUN"))
    assert re.search(r"apt-get install [^&]*\bgit\b", runs)


def test_only_the_api_image_exposes_a_port_and_it_is_the_one_compose_publishes() -> None:
    assert _dockerfiles()["api"].args("EXPOSE") == ["8765"]
    for name in ("worker", "watcher", "adapter"):
        assert not _dockerfiles()[name].args("EXPOSE"), name
