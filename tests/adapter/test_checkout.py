"""What the adapter finds changed in its checkout (real git): the files an overlay would send
are the ones the walker would index, so an ignore file in any directory keeps its files on
the developer's machine."""

from __future__ import annotations

import os
from pathlib import Path

from codenav.index.ignore import IgnoreRules
from codenav_adapter.overlay import Checkout, differences
from tests.gitkit import commit, git, write


def _repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, {"app/__init__.py": "", "app/core.py": "def core():\n    return 1\n",
                  "lib/tool.py": "def tool():\n    return 2\n",
                  ".gitignore": "*.log\n"}, "first")
    return root


def _walker_would_index(root: Path, paths: set[str]) -> set[str]:
    rules = IgnoreRules.for_root(root)
    return {p for p in paths if rules.check_path(p, False) is None}


def test_untracked_files_under_a_codenavignore_of_any_directory_are_not_sent(
        tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    write(root, {"app/.codenavignore": "scratch_*.py\n", ".codenavignore": "notes/\n",
                 "app/scratch_one.py": "x = 1\n", "app/kept.py": "y = 2\n",
                 "notes/todo.py": "z = 3\n", "lib/new_tool.py": "w = 4\n",
                 "lib/debug.log": "noise\n"})
    local = Checkout(root, 1 << 20).state()
    new = {"app/scratch_one.py", "app/kept.py", "notes/todo.py", "lib/new_tool.py",
           "lib/debug.log", "app/.codenavignore", ".codenavignore"}
    assert local.dirty & new == _walker_would_index(root, new)
    assert {"app/kept.py", "lib/new_tool.py"} <= local.dirty
    assert not {"app/scratch_one.py", "notes/todo.py", "lib/debug.log"} & local.dirty
    assert "app/scratch_one.py" not in local.files and "notes/todo.py" not in local.files


def test_a_committed_codenavignore_below_the_root_applies_to_new_files(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    commit(root, {"lib/.codenavignore": "generated_*.py\n"}, "ignore generated code")
    write(root, {"lib/generated_api.py": "a = 1\n", "lib/handmade.py": "b = 2\n",
                 "app/generated_too.py": "c = 3\n"})
    dirty = Checkout(root, 1 << 20).state().dirty
    assert dirty == {"lib/handmade.py", "app/generated_too.py"}


def test_without_any_codenavignore_untracked_files_follow_git(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    write(root, {"app/core.py": "def core():\n    return 3\n", "app/extra.py": "e = 1\n",
                 "trace.log": "ignored by .gitignore\n", "lib/tool.py": None})
    local = Checkout(root, 1 << 20).state()
    assert local.dirty == {"app/core.py", "app/extra.py", "lib/tool.py"}
    assert "lib/tool.py" not in local.files and "app/extra.py" in local.files


def test_a_new_file_whose_name_is_not_utf8_is_not_sent(tmp_path: Path) -> None:
    """Such a name cannot be a path on the server: the API refuses a request holding one
    (a lone surrogate), so the whole overlay update was refused. The walker skips it
    (``bad_name``); the overlay leaves it out."""
    root = _repo(tmp_path / "repo")
    write(root, {"app/fresh.py": "def fresh():\n    return 3\n"})
    with open(os.fsencode(root) + b"/app/bad\xff.py", "wb") as handle:
        handle.write(b"def bad():\n    return 4\n")
    local = Checkout(root, 1 << 20).state()
    sent = [path for path, _sha, _size in differences(local, {}, set())]
    assert "app/fresh.py" in sent
    assert all(p.isprintable() and p.encode("utf-8") for p in sent)
    assert not any("bad" in p for p in sent)
