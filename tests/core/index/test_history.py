"""A checkout's recent git history (``codenav.index.history``) against real git and a real
Postgres: what each file's counts are, when they are read again, and find_files ranking a
file that changes often above one that does not, with the model trained on them."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

from codenav import repos, status
from codenav.access import Scope
from codenav.config import Settings
from codenav.index import gitread, history, reconcile
from codenav.jobs import tasks
from codenav.search import find, learned
from tests.gitkit import commit, git

ROWS = "SELECT path, commits, age FROM file_history WHERE repo_id = %s ORDER BY path"
HEAD = "SELECT commit, files FROM history_heads WHERE repo_id = %s"


def _service(name: str, extra: str = "") -> str:
    return (f'"""The {name} order service: it handles order requests."""\n\n\n'
            "def handle_order_request(order, ledger):\n"
            "    total = sum(line.price for line in order.lines)\n"
            "    ledger.record(order.id, total)\n"
            f"    return total{extra}\n")


def _repo(root: Path) -> list[str]:
    """A repository where ``zeta_orders.py`` changed in four commits, and ``alpha_orders.py``
    (the same text at HEAD) only in the first."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    shas = [commit(root, {"app/alpha_orders.py": _service("orders"),
                          "app/zeta_orders.py": _service("orders"),
                          "app/util.py": "def helper():\n    return 1\n",
                          "app/gone.py": "def gone():\n    return 0\n"}, "first")]
    for i in range(3):
        shas.append(commit(root, {"app/zeta_orders.py": _service("orders", f"  # {i}")},
                           f"zeta {i}"))
    shas.append(commit(root, {"app/zeta_orders.py": _service("orders"), "app/gone.py": None},
                       "zeta back; gone removed"))
    shas.append(commit(root, {"app/util.py": "def helper():\n    return 2\n"}, "util"))
    return shas


def test_summarise_counts_each_files_commits_and_leaves_sweeps_out() -> None:
    sweep = [f"f{i}.py" for i in range(history.SWEEP + 1)] + ["a.py"]
    got = history.summarise([["a.py", "b.py"], sweep, [], ["a.py", "c.py"]])
    assert got == {"a.py": history.FileHistory(2, 0), "b.py": history.FileHistory(1, 0),
                   "c.py": history.FileHistory(1, 3)}
    assert history.summarise([]) == {}


def test_recent_changes_reads_the_log_newest_first_with_any_file_name(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, {"a.py": "1\n", "b.py": "1\n"}, "one")
    git(root, "commit", "-q", "--allow-empty", "-m", "empty")
    head = commit(root, {"dir/ünï code.py": "1\n", "a.py": None}, "two")
    gdir = gitread.git_dir(root)
    assert gdir is not None
    assert gitread.recent_changes(gdir, head, 10) == [["a.py", "dir/ünï code.py"], [],
                                                      ["a.py", "b.py"]]
    assert gitread.recent_changes(gdir, head, 1) == [["a.py", "dir/ünï code.py"]]


def test_an_index_reads_the_history_again_only_when_head_moves(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    shas = _repo(root)
    repo = repos.register(conn, str(root), "shop")
    reconcile.reconcile(settings, repo.id)
    # files of the tree only (gone.py was deleted); age counts commits back from HEAD
    assert conn.execute(ROWS, (repo.id,)).fetchall() == [
        ("app/alpha_orders.py", 1, 5), ("app/util.py", 2, 0), ("app/zeta_orders.py", 5, 1)]
    assert conn.execute(HEAD, (repo.id,)).fetchone() == (shas[-1], 3)
    said = status.repo_status(conn, Scope.system(repo))["history"]
    assert (said["commit"], said["files_changed"]) == (shas[-1], 3)
    tree_id = reconcile.worktree(conn, repo.id)
    assert history.refresh(conn, repo.id, tree_id, root) is None  # same HEAD: not read

    moved = commit(root, {"app/alpha_orders.py": _service("orders", "  # moved")}, "alpha")
    reconcile.reconcile(settings, repo.id, paths=["app/alpha_orders.py"])
    assert conn.execute(ROWS, (repo.id,)).fetchall()[0] == ("app/alpha_orders.py", 2, 0)
    assert conn.execute(HEAD, (repo.id,)).fetchone() == (moved, 3)

    shutil.rmtree(root / ".git")  # no git any more: no history
    reconcile.reconcile(settings, repo.id)
    assert conn.execute(ROWS, (repo.id,)).fetchall() == []
    assert conn.execute(HEAD, (repo.id,)).fetchone() is None
    assert "history" not in status.repo_status(conn, Scope.system(repo))


def test_a_first_index_leaves_the_history_to_the_graph_job(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "shop"
    shas = _repo(root)
    repo = repos.register(conn, str(root), "shop")
    reconcile.reconcile(settings, repo.id, defer_graph=True)
    assert conn.execute(HEAD, (repo.id,)).fetchone() is None
    monkeypatch.setattr(tasks, "_SETTINGS", settings)
    tasks.build_graph(repo.id)
    assert conn.execute(HEAD, (repo.id,)).fetchone() == (shas[-1], 3)


def test_find_files_ranks_the_file_that_changes_often_first(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    _repo(root)
    plain = tmp_path / "plain"  # the same files without git
    shutil.copytree(root, plain, ignore=shutil.ignore_patterns(".git"))
    answers = {}
    for name, where in (("shop", root), ("plain", plain)):
        repo = repos.register(conn, str(where), name)
        reconcile.reconcile(settings, repo.id)
        scope = Scope.system(repo)
        _q, pool, _asked, _family = find.collect(conn, scope, "order request handling",
                                                 mode="lexical")
        values = {c.path: (c.values["churn"], c.values["churn_rel"], c.values["recent"])
                  for c in pool.candidates}
        if name == "shop":
            assert pool.history
            assert values["app/zeta_orders.py"][1] == 1.0
            assert 0 < values["app/alpha_orders.py"][0] < values["app/zeta_orders.py"][0]
        else:
            assert not pool.history
            assert set(values.values()) == {(0.0, 0.0, 0.0)}
        answer = find.find_files(conn, scope, "order request handling", 2, mode="lexical")
        answers[name] = [r["path"] for r in answer["results"]]
        reasons = {r["path"]: r["reason"] for r in answer["results"]}
        if name == "shop":  # why a file ranks: its history too
            assert "recently changed (5 commits, last 1 ago)" in reasons["app/zeta_orders.py"]
        else:
            assert not any("recently changed" in r for r in reasons.values())
    # the same text at HEAD: without history the tie goes by path, with it to the churn
    assert answers["plain"] == ["app/alpha_orders.py", "app/zeta_orders.py"]
    assert answers["shop"] == ["app/zeta_orders.py", "app/alpha_orders.py"]


def test_the_history_models_ship_and_score_only_pools_with_history() -> None:
    with_history = learned.model_for("lexical_history")
    assert isinstance(with_history, learned.Model)
    assert with_history.name == "find_files_lexical_history.txt"
    row = [0.0] * len(learned.FEATURES)
    _scores, name = learned.score([row], "lexical", history=True)
    assert name == "find_files_lexical_history.txt"
    _scores, name = learned.score([row], "lexical")
    assert name == "find_files_lexical.txt"
    # hybrid: the history model for a short query and for an issue text (it was trained
    # on both); without history, the hand-set weights
    _scores, name = learned.score([row], "hybrid", history=True)
    assert name == "find_files_hybrid_history.txt"
    long_row = list(row)
    long_row[learned.FEATURES.index("q_groups")] = learned.LONG_QUERY
    _scores, name = learned.score([long_row], "hybrid", history=True)
    assert name == "find_files_hybrid_history.txt"
    _scores, name = learned.score([row], "hybrid")
    assert name == "fallback"
    _scores, name = learned.score([long_row], "hybrid")
    assert name == "fallback"


@pytest.mark.parametrize("n_files", [3, history.SWEEP + 1])
def test_a_history_that_says_nothing_is_none(settings: Settings, conn: psycopg.Connection,
                                            tmp_path: Path, n_files: int) -> None:
    """A shallow clone's single commit adds every file: one commit (or a sweep) says
    nothing about which files change, so no file has a history, and find_files ranks as
    without git."""
    root = tmp_path / "shallow"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    files = {f"app/mod_{i}.py": f"def order_job_{i}():\n    return {i}\n"
             for i in range(n_files)}
    head = commit(root, files, "import")
    repo = repos.register(conn, str(root), "shallow")
    reconcile.reconcile(settings, repo.id)
    assert conn.execute(HEAD, (repo.id,)).fetchone() == (head, 0)
    assert conn.execute(ROWS, (repo.id,)).fetchall() == []
    _q, pool, _asked, _family = find.collect(conn, Scope.system(repo), "order job",
                                             mode="lexical")
    assert pool.candidates and not pool.history
