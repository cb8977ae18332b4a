"""What a checkout's recent git history says about its files, for find_files' ranker.

A change is likeliest to touch the files that changed lately and often: over the
commit-history suite (17 repositories, each ranked by a model trained without it), the
two facts kept here moved find_files' lexical hit@5 from 73.6 to 76.6 (bench/README.md,
"Recent history"). Per file of the working tree, ``file_history`` holds in how many of the
last ``COMMITS`` commits it changed, and how many commits ago it last did;
``history_heads`` the commit they were read at, so an index run reads them again only when
HEAD moved (1,000 commits of Apache Kafka: 0.19 s).

Nothing comes from the future of the tree indexed: the history is HEAD's ancestors. A
checkout without git, or a repository indexed from refs only, has no history, and
find_files ranks it with the model trained without these features.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psycopg

from codenav.db import queries as q
from codenav.errors import CodenavError
from codenav.index import gitread
from codenav.index.gitinfo import head_commit

log = logging.getLogger("codenav.index")

COMMITS = 1000
"""The commits read, newest first."""
SWEEP = 40
"""A commit that changes more files than this is a sweep (a reformat, a licence header, a
rename of a package): it says nothing about any one of them, and counts for none (it still
counts in the age of the files that changed before it)."""

MIN_COMMITS = 2
"""A history of one commit (a shallow clone, a first commit) says nothing about which files
change: it is kept as none, and find_files ranks as without git."""


@dataclass(frozen=True)
class FileHistory:
    commits: int
    """Commits among the last ``COMMITS`` (sweeps left out) that changed the file."""
    age: int
    """How many commits ago the newest of them is (0: HEAD itself)."""


def summarise(changes: list[list[str]]) -> dict[str, FileHistory]:
    """Each file's history from the files each commit changed, newest commit first."""
    counts: Counter[str] = Counter()
    last: dict[str, int] = {}
    for age, files in enumerate(changes):
        if len(files) > SWEEP:
            continue
        for path in set(files):
            counts[path] += 1
            last.setdefault(path, age)
    return {path: FileHistory(n, last[path]) for path, n in counts.items()}


def refresh(conn: psycopg.Connection, repo_id: int, tree_id: int, root: Path) -> int | None:
    """Reads the history of ``root``'s HEAD when it is not the one stored; returns how many
    files it holds, or None when nothing was read (the same HEAD, or no git). A checkout
    that has no commit any more loses its rows. A failing git leaves the rows as they were,
    with a warning: they describe an older HEAD, which ranks better than none."""
    commit = head_commit(root)
    row = conn.execute(q.HISTORY_HEAD, (repo_id,)).fetchone()
    stored = row[0] if row else None
    if commit == stored:
        return None
    gdir = gitread.git_dir(root)
    if commit is None or gdir is None:
        with conn.transaction():
            conn.execute(q.HISTORY_CLEAR, (repo_id,))
            conn.execute(q.HISTORY_HEAD_CLEAR, (repo_id,))
        return None
    started = time.monotonic()
    try:
        changes = gitread.recent_changes(gdir, commit, COMMITS)
    except CodenavError as exc:
        log.warning("repo %s: recent history not read (%s); find_files keeps the previous",
                    repo_id, exc)
        return None
    indexed = {path for (path,) in conn.execute(q.TREE_PATHS, (tree_id,))}
    files = {p: h for p, h in summarise(changes).items() if p in indexed} \
        if len(changes) >= MIN_COMMITS else {}
    with conn.transaction():
        conn.execute(q.HISTORY_CLEAR, (repo_id,))
        with conn.cursor().copy(q.HISTORY_COPY) as copy:
            for path, h in files.items():
                copy.write_row((repo_id, path, h.commits, h.age))
        conn.execute(q.HISTORY_HEAD_PUT, (repo_id, commit, len(files)))
    log.info("repo %s: history of %d commits up to %s, %d indexed files changed, in %.2fs",
             repo_id, len(changes), commit[:12], len(files), time.monotonic() - started)
    return len(files)
