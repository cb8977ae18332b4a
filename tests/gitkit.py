"""A fixture git repository with three branches and a history of commits, for the refs
tests: ``main`` (four commits), ``feature`` (from the first, adds a module and calls it)
and ``release/1.0`` (from the first, deletes a module). Each branch has a function found
on it only."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": "/dev/null",
       "GIT_CONFIG_NOSYSTEM": "1"}

CORE = '''"""The store's core."""

from app.util import helper


class Store:
    def put(self, key, value):
        return helper(key, value)


def base_fn(store):
    return store.put("a", 1)
'''
UTIL = '''def helper(key, value):
    return (key, value)
'''
LEGACY = '''def legacy_reporting_job():
    return "legacy"
'''
FEATURE = '''from app.util import helper


def feature_only_fn(value):
    """Only the feature branch has this (six lines: chunks that short get a vector)."""
    label = "feature"
    if value is None:
        value = label
    return helper(label, value)
'''
CORE_FEATURE = CORE + '''

def run_feature(store):
    from app.feature import feature_only_fn
    return feature_only_fn(store)
'''
UTIL_MAIN = UTIL + '''

def main_only_fn(key):
    """Only main has this (from its second commit)."""
    if key is None:
        key = "main"
    found = helper(key, 0)
    return found
'''


MODULES = 16
"""Modules beside the ones the branches change (a commit changes a small share of files)."""


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          env={**os.environ, **ENV})
    return done.stdout.decode().strip()


def write(root: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        path = root / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def commit(root: Path, files: dict[str, str | None], message: str) -> str:
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@dataclass
class History:
    root: Path
    main: list[str] = field(default_factory=list)
    """main's commits, oldest first."""
    feature: str = ""
    release: str = ""


def module(i: int) -> str:
    """One of the modules beside the ones the branches change: a six-line function (shorter
    chunks get no vector, and publishing sends vectors)."""
    return (f"from app.util import helper\n\n\n"
            f"def mod_{i:02d}_job(x):\n    \"\"\"Job {i} of the store.\"\"\"\n"
            f"    if x is None:\n        return None\n    done = helper('m{i}', x)\n"
            "    return done\n")


def make_history(root: Path, extra_main: int = 2) -> History:
    """The fixture repository at ``root`` with ``main`` checked out."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    h = History(root)
    modules = {f"app/mod_{i:02d}.py": module(i) for i in range(MODULES)}
    h.main.append(commit(root, {"app/__init__.py": "", "app/core.py": CORE,
                                "app/util.py": UTIL, "app/legacy.py": LEGACY,
                                "README.md": "# store\n", **modules}, "first"))
    git(root, "checkout", "-q", "-b", "feature")
    h.feature = commit(root, {"app/feature.py": FEATURE, "app/core.py": CORE_FEATURE},
                       "feature: feature_only_fn")
    git(root, "checkout", "-q", "main")
    h.main.append(commit(root, {"app/util.py": UTIL_MAIN}, "main: main_only_fn"))
    git(root, "checkout", "-q", "-b", "release/1.0", h.main[0])
    h.release = commit(root, {"app/legacy.py": None,
                              "app/release_notes.py": "def release_only_fn():\n    return 1\n"},
                       "release: drop legacy")
    git(root, "checkout", "-q", "main")
    for i in range(extra_main):
        h.main.append(commit(root, {f"app/step_{i}.py": f"def step_{i}():\n    return {i}\n"},
                             f"main: step {i}"))
    return h
