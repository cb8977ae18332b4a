"""``search`` for words so common that the chunks holding them are too many to score
(``codenav.search.chunks.CANDIDATE_CAP``): the answer is the same however the rows lie on
disk, and comes from the files where the words matter most."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from codenav import repos
from codenav.access import Scope
from codenav.config import Settings
from codenav.index import reconcile
from codenav.search import chunks
from tests.teamkit import write_tree


def _module(i: int) -> str:
    """A module that mentions widgets in passing, among other work."""
    return "\n\n".join(
        f"def step_{i}_{j}(queue, widget=None):\n"
        f"    item = queue.pop()\n"
        f"    total = item.size * {j + 1}\n"
        f"    if widget is not None:\n"
        f"        total += {i}\n"
        f"    return total\n" for j in range(3)) + "\n"


CORE = ('"""Widgets: the widget registry and the widget factory."""\n\n\n'
        "class Widget:\n"
        '    """A widget: one widget of the widget tree."""\n\n'
        "    def __init__(self, widget_id, parent_widget=None):\n"
        "        self.widget_id = widget_id\n"
        "        self.parent_widget = parent_widget\n\n\n"
        "def make_widget(widget_id, widgets):\n"
        '    """Make a widget and register the widget with the other widgets."""\n'
        "    widget = Widget(widget_id)\n"
        "    widgets[widget_id] = widget\n"
        "    return widget\n")


@pytest.fixture
def scope(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> Scope:
    files = {f"app/jobs/job_{i:02d}.py": _module(i) for i in range(40)}
    files["app/widgets/core.py"] = CORE
    r = repos.register(conn, str(write_tree(tmp_path / "app", files)), "app")
    reconcile.reconcile(settings, r.id)
    return Scope.system(r)


def _answer(conn: psycopg.Connection, scope: Scope, text: str) -> list[tuple[str, int]]:
    found = chunks.search(conn, scope, text, 10, mode="lexical")["results"]
    return [(r["path"], r["start_line"]) for r in found]


REVERSED = "CREATE INDEX chunks_order_tmp ON chunks (content_id DESC, id DESC)"
BY_ID = "CREATE INDEX chunks_order_tmp ON chunks (id)"


def _reorder(conn: psycopg.Connection, order: str) -> None:
    """Rewrite the chunks table in another physical order (as VACUUM FULL, a restored seed
    or a reindex of other files may leave it): ``order`` creates the index it follows."""
    conn.execute(order)
    conn.execute("CLUSTER chunks USING chunks_order_tmp")
    conn.execute("DROP INDEX chunks_order_tmp")
    conn.execute("ANALYZE chunks")


def test_a_query_of_common_words_answers_the_same_whatever_the_physical_order(
        conn: psycopg.Connection, scope: Scope, monkeypatch: pytest.MonkeyPatch) -> None:
    # over a hundred chunks hold "widget": over a cap of 8, the lexical ranker scored the
    # first 8 the index scan met, in the table's physical order
    monkeypatch.setattr(chunks, "CANDIDATE_CAP", 8)
    assert chunks.weigh(conn, chunks.parse_query("widget")).over_cap
    first = _answer(conn, scope, "widget")
    _reorder(conn, REVERSED)
    second = _answer(conn, scope, "widget")
    _reorder(conn, BY_ID)
    assert first == second == _answer(conn, scope, "widget")
    # ranked inside the files BM25 ranks best: the module about widgets leads
    assert first[0][0] == "app/widgets/core.py"
    assert len(first) == 10


def test_a_query_under_the_cap_is_ranked_over_every_chunk_holding_it(
        conn: psycopg.Connection, scope: Scope) -> None:
    weighted = chunks.weigh(conn, chunks.parse_query("widget"))
    assert not weighted.over_cap
    found = _answer(conn, scope, "widget")
    assert found[0][0] == "app/widgets/core.py"
    # every chunk holding the word was scored, so no order of the rows can change it
    _reorder(conn, REVERSED)
    assert _answer(conn, scope, "widget") == found


def test_with_a_kind_filter_too(conn: psycopg.Connection, scope: Scope,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    filters = chunks.Filters(kind="function")

    def answer() -> list[tuple[str, int, str]]:
        found = chunks.search(conn, scope, "widget", 10, filters, mode="lexical")["results"]
        return [(r["path"], r["start_line"], r["kind"]) for r in found]

    # under the cap, every function holding the word is ranked
    whole = answer()
    assert not chunks.capped(conn, chunks.weigh(conn, chunks.parse_query("widget")))
    monkeypatch.setattr(chunks, "CANDIDATE_CAP", 8)
    assert chunks.capped(conn, chunks.weigh(conn, chunks.parse_query("widget")))
    first = answer()
    _reorder(conn, REVERSED)
    assert answer() == first
    assert len(first) == 10 and {kind for _p, _l, kind in first} == {"function"}
    assert first[0][0] == whole[0][0] == "app/widgets/core.py"
