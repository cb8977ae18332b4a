"""CLI errors without a running stack: one line and a hint, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CODENAV = str(Path(sys.executable).with_name("codenav"))


@pytest.mark.parametrize("content", ["{}", "[1, 2]", "not json", '{"url": null}'])
def test_a_broken_stack_file_is_one_line_with_a_hint(tmp_path: Path, content: str) -> None:
    (tmp_path / "stack.json").write_text(content)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env["CODENAV_HOME"] = str(tmp_path)
    done = subprocess.run([CODENAV, "status"], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith("codenav: ") and "stack.json" in lines[0], done.stderr
    assert lines[1].startswith("  hint: ") and len(lines) == 2, done.stderr
