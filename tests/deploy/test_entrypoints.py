"""Every entrypoint the images and compose start: installed by its image, and it starts
natively and prints its usage."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.deploy.deploykit import (
    COMMANDS,
    _native_env,
)


@pytest.mark.parametrize("where", sorted(COMMANDS))
def test_entrypoint_names_a_module_or_script_that_its_image_installs(where: str) -> None:
    entrypoint, dockerfile = COMMANDS[where]
    entrypoint.resolve([folder for folder, _ in dockerfile.installed()])


@pytest.mark.parametrize("where", sorted(COMMANDS))
def test_entrypoint_starts_natively_and_prints_its_usage(where: str, tmp_path: Path) -> None:
    entrypoint, dockerfile = COMMANDS[where]
    argv = entrypoint.help_argv([folder for folder, _ in dockerfile.installed()])
    result = subprocess.run(argv, env=_native_env(), cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "usage:" in output.lower() or f"-m {entrypoint.module}" in output, output
    for flag in entrypoint.flags():
        assert flag in output, f"{where}: {flag} is not an option of {argv}"
