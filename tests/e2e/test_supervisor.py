"""What `codenav up` does when a child cannot run at all: after a few quick deaths it stops
the whole stack and says which child and why, instead of restarting it forever."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.e2e.stackkit import start_stack, state_home


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_child_that_keeps_dying_stops_the_stack_with_its_reason(tmp_path: Path) -> None:
    with state_home() as home:
        # A setting only the embedder reads: the rest of the stack starts and serves.
        stack = start_stack([], home, tmp_path / "up.log",
                            env_extra={"CODENAV_EMBED_BACKEND": "no-such-backend"})
        tree = psutil.Process(stack.proc.pid).children(recursive=True)
        assert stack.proc.wait(300) == 1
        output = stack.log.read_text(errors="replace")
        assert "embedder exited (code 1); restarting it in 0.5s" in output
        assert "codenav: the stack stopped: embedder keeps dying (5 times in a row" in output
        assert "CODENAV_EMBED_BACKEND must be one of" in output  # its last log line
        assert "Traceback" not in output
        _gone, alive = psutil.wait_procs(tree, timeout=15)
        assert not alive, [p.cmdline() for p in alive]
        assert not (home / "stack.json").exists()
