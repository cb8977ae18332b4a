"""Restarting is a non-event: `codenav up` stopped with Ctrl-C and started again on the
same home, five times, from a directory holding folders named like codenav's packages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from tests.e2e.stackkit import RunningStack, ctrl_c, settled, start_stack, state_home
from tests.polyglot import make_polyglot

PACKAGES = ("codenav", "codenav_api", "codenav_worker", "codenav_watcher", "codenav_embedder")
ERROR_LINE = re.compile(r"Traceback|\bERROR\b|\bCRITICAL\b|\bFATAL\b|\bPANIC\b")


def _shadowing_cwd(base: Path) -> Path:
    """The parent of a clone called codenav, say: every package name is a folder here."""
    cwd = base / "parent"
    for name in PACKAGES:
        (cwd / name).mkdir(parents=True)
        (cwd / name / "__init__.py").write_text("raise ImportError('the cwd shadowed me')\n")
    return cwd


def _log_sizes(home: Path) -> dict[Path, int]:
    return {p: p.stat().st_size for p in (home / "logs").glob("*.log")}


def _new_error_lines(home: Path, before: dict[Path, int]) -> list[str]:
    """Error lines the services logged since ``before`` (Postgres' own shutdown and
    start-up lines are LOG lines; a FATAL there is a client that hung up mid-way)."""
    found = []
    for path in sorted((home / "logs").glob("*.log")):
        with path.open("rb") as handle:
            handle.seek(before.get(path, 0))
            text = handle.read().decode(errors="replace")
        found += [f"{path.name}: {line}" for line in text.splitlines()
                  if ERROR_LINE.search(line)]
    return found


def _stop(stack: RunningStack) -> float:
    """Ctrl-C; what is left running afterwards is a failure. Returns the stop time the
    stack reported."""
    tree = psutil.Process(stack.proc.pid).children(recursive=True)
    ctrl_c(stack)
    assert stack.proc.returncode == 0
    _gone, alive = psutil.wait_procs(tree, timeout=15)
    assert not alive, [p.cmdline() for p in alive]
    assert not (stack.home / "stack.json").exists()
    output = stack.log.read_text(errors="replace")
    match = re.search(r"codenav stopped in ([\d.]+)s", output)
    assert match, output[-2000:]
    return float(match.group(1))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_five_restarts_on_one_home_come_up_and_reindex_only_what_changed(
        tmp_path: Path) -> None:
    repo = make_polyglot(tmp_path)
    cwd = _shadowing_cwd(tmp_path)
    edited = repo / "src" / "auth" / "tokens.py"
    with state_home() as home:
        first = start_stack(["--repo", str(repo)], home, tmp_path / "up-0.log", cwd=cwd)
        assert "indexed polyglot" in first.log.read_text()
        last_run = settled(home)
        stops = [_stop(first)]
        for i in range(1, 6):
            with edited.open("a") as handle:
                handle.write(f"\n\ndef restart_marker_{i}():\n    return {i}\n")
            logs_before = _log_sizes(home)
            stack = start_stack(["--repo", str(repo)], home, tmp_path / f"up-{i}.log",
                                cwd=cwd)
            output = stack.log.read_text(errors="replace")
            assert "Traceback" not in output and "unreachable" not in output, output
            info = json.loads((home / "stack.json").read_text())
            with psycopg.connect(info["database_url"], autocommit=True) as conn:
                runs = conn.execute("SELECT id, files_parsed, files_total, state "
                                    "FROM index_runs WHERE id > %s ORDER BY id",
                                    (last_run,)).fetchall()
            assert runs and all(state == "done" for *_, state in runs), runs
            assert sum(parsed for _id, parsed, _total, _state in runs) == 1, runs
            found = httpx.post(f"{info['url']}/v1/search", timeout=30,
                               headers={"Authorization": f"Bearer {info['token']}"},
                               json={"query": f"restart_marker_{i}", "mode": "lexical"})
            assert found.json()["results"][0]["symbol"] == f"restart_marker_{i}"
            last_run = settled(home)
            stops.append(_stop(stack))
            assert _new_error_lines(home, logs_before) == []
    assert max(stops) <= 10.0, stops
