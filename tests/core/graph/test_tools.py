"""The six graph tools over REST (in-process TestClient, real Postgres and Redis), on the
fixture repositories: the answers an agent acts on, and what each says it could not see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from codenav import repos
from codenav.config import Settings
from codenav.index import reconcile
from codenav.tools import TOOL_NAMES
from tests.core.graph.test_fixture_graphs import index_fixture
from tests.polyglot import make_polyglot

GRAPH_TOOLS = ("definition", "references", "dependencies", "impact", "implementations",
               "skeleton")


@pytest.fixture
def fixtures(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> list[str]:
    names = ["python", "java", "go", "ts"]
    for name in names:
        index_fixture(settings, conn, name, tmp_path)
    return names


def call(client: TestClient, tool: str, **body: Any) -> dict[str, Any]:
    response = client.post(f"/v1/{tool}", json=body)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    assert data["_stats"]["duration_ms"] >= 0
    return data


def test_the_graph_tools_are_served_with_the_same_names_everywhere() -> None:
    assert set(GRAPH_TOOLS) <= set(TOOL_NAMES)


def test_definition_gives_the_declaration_and_the_types_its_signature_mentions(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "definition", symbol="Service.register", repo="python")
    (found,) = body["results"]
    assert (found["path"], found["start_line"]) == ("app/service.py", 14)
    assert found["signature"] == "def register(self, name: str) -> User"
    assert [(t["qualname"], t["path"]) for t in found["types"]] == [("User", "app/models.py")]
    java = call(client, "definition", symbol="Ledger.describe", repo="java")
    (describe,) = java["results"]
    assert [t["qualname"] for t in describe["types"]] == ["Entity"]
    assert describe["types"][0]["signature"] == "public interface Entity"
    assert describe["unresolved_types"] == ["String"]


def test_references_separate_verified_callers_from_name_only_matches(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "references", symbol="User.greet", repo="python")
    assert [(v["path"], v["line"], v["scope"], v["how"]) for v in body["verified"]] == [
        ("app/models.py", 23, "Admin.greet", "super"),
        ("app/service.py", 26, "Service.notify", "receiver"),
        ("app/service.py", 39, "greet_new", "receiver")]  # make_service().register(n).greet()
    assert [(p["path"], p["line"]) for p in body["potential"]] == [("app/util.py", 9)]
    assert "user" in body["potential"][0]["reason"]
    assert body["summary"] == {"verified": 3, "potential": 1, "files": 3}
    assert "potential_only" in body["unseen"]
    verified_only = call(client, "references", symbol="User.greet", repo="python",
                         include_potential=False)
    assert "potential" not in verified_only and verified_only["summary"]["potential"] == 0


def test_an_overloaded_method_is_one_name_its_callers_listed_once(
        client: TestClient, settings: Settings, conn: psycopg.Connection,
        tmp_path: Path) -> None:
    """Three overloads are three declarations of one name, and edges go to the name: each
    caller is one reference and one dependent, not one per overload."""
    src = tmp_path / "overloads" / "src/main/java/com/acme"
    src.mkdir(parents=True)
    (src / "Printer.java").write_text(
        "package com.acme;\n\npublic class Printer {\n    public void print(int n) {}\n"
        "    public void print(String s) {}\n    public void print(Object o, int k) {}\n}\n")
    (src / "Report.java").write_text(
        "package com.acme;\n\npublic class Report {\n    public void run(Printer printer) {\n"
        "        printer.print(1);\n    }\n}\n")
    repo = repos.register(conn, str(tmp_path / "overloads"), "overloads")
    reconcile.reconcile(settings, repo.id)
    body = call(client, "references", symbol="Printer.print", repo="overloads")
    assert len(body["targets"]) == 3
    assert [(v["path"], v["line"], v["scope"]) for v in body["verified"]] == [
        ("src/main/java/com/acme/Report.java", 5, "Report.run")]
    assert body["summary"]["verified"] == 1 and "target" not in body["verified"][0]
    impact = call(client, "impact", symbol_or_path="Printer.print", repo="overloads")
    assert [(d["qualname"], d["relation"]) for d in impact["dependents"]] == [
        ("Report.run", "calls")]


def test_references_of_an_unknown_symbol_say_why_they_are_empty(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "references", symbol="NoSuchThing", repo="python")
    assert body["verified"] == [] and body["empty"]["code"] == "no_symbol"


def test_dependencies_list_imports_importers_and_external_modules(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "dependencies", path="app/service.py", repo="python")
    assert [(f["path"], f["via"]) for f in body["imports"]] == [
        ("app/__init__.py", "app"), ("app/models.py", "reference"),  # User, via the barrel
        ("app/repo.py", ".repo"), ("app/util.py", ".util")]
    assert [f["path"] for f in body["importers"]] == ["scripts/run.py"]
    assert body["external"] == ["json"]
    util = next(f for f in body["imports"] if f["path"] == "app/util.py")
    assert util["exports"] == ["helper", "format_name"] and util["imported_by"] == 2
    deep = call(client, "dependencies", path="src/main/java/com/acme/model/Money.java",
                direction="importers", depth=2, repo="java")
    assert "imports" not in deep
    by_depth = {(f["path"].rsplit("/", 1)[-1], f["depth"]) for f in deep["importers"]}
    assert ("Ledger.java", 1) in by_depth and ("Report.kt", 1) in by_depth
    assert ("Cli.kt", 2) in by_depth


def test_impact_follows_calls_transitively_with_the_chains(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "impact", symbol_or_path="User.greet", repo="python")
    assert {(d["qualname"], d["relation"], d["depth"]) for d in body["dependents"]} == {
        ("Admin.greet", "overrides", 1), ("Service.notify", "calls", 1),
        ("Service.register", "calls", 2), ("quick_register", "calls", 3),
        ("greet_new", "calls", 1)}
    assert "quick_register (app/service.py) -calls-> Service.register (app/service.py) " \
           "-calls-> Service.notify (app/service.py) -calls-> User.greet (app/models.py)" \
        in body["chains"]
    assert {f["path"] for f in body["files"]} == {"app/models.py", "app/service.py"}


def test_impact_of_a_rename_lists_the_barrel_files_that_re_export_it(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "impact", symbol_or_path="User", repo="ts")
    assert [r["path"] for r in body["reexports"]] == ["src/models/index.ts"]
    relations = {(d["path"], d["relation"]) for d in body["dependents"]}
    assert ("src/services/userService.ts", "imports") in relations
    assert ("web/legacy.js", "calls") in relations  # new UserService(), two steps away


def test_impact_of_a_method_includes_the_overrides_in_subclasses(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "impact", symbol_or_path="Account.deposit", repo="java")
    overrides = [d for d in body["dependents"] if d["relation"] == "overrides"]
    assert [d["qualname"] for d in overrides] == ["SavingsAccount.deposit"]


def test_impact_of_a_file_lists_the_files_that_depend_on_it(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "impact", symbol_or_path="src/models/user.ts", repo="ts")
    assert body["target_kind"] == "file"
    assert {f["path"]: f["depth"] for f in body["files"]} == {
        "src/lib/format.ts": 1, "src/models/index.ts": 1, "src/services/audit.ts": 1,
        "src/services/userService.ts": 1, "web/legacy.js": 2, "web/main.js": 3}


def test_implementations_follow_subclasses_with_their_methods(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "implementations", symbol="Entity", repo="java")
    found = {r["qualname"]: r for r in body["results"]}
    assert set(found) == {"Account", "SavingsAccount"}
    assert (found["Account"]["relation"], found["Account"]["depth"]) == ("implements", 1)
    assert (found["SavingsAccount"]["via"], found["SavingsAccount"]["depth"]) == ("Account", 2)
    assert [m["name"] for m in found["Account"]["methods"]] == ["Account", "id", "deposit",
                                                               "audit"]


def test_go_interfaces_are_implemented_by_method_set(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "implementations", symbol="Store", repo="go")
    (found,) = body["results"]
    assert (found["qualname"], found["path"]) == ("MemoryStore", "store/memory.go")
    assert {m["name"] for m in found["methods"]} == {"Get", "Put"}


def test_skeleton_groups_exported_declarations_by_file(
        client: TestClient, fixtures: list[str]) -> None:
    body = call(client, "skeleton", path="src", repo="ts")
    assert {f["path"]: [e["name"] for e in f["exports"]] for f in body["files"]} == {
        "src/lib/format.ts": ["formatUser", "shout", "parseUser"],
        "src/models/user.ts": ["Entity", "Model", "User"],
        "src/services/audit.ts": ["audit", "shortName"],
        "src/services/userService.ts": ["UserService"]}
    shallow = call(client, "skeleton", path="src", depth=0, repo="ts")
    assert shallow["files"] == [] and shallow["empty"]["code"] == "no_exports"
    missing = call(client, "skeleton", path="nowhere", repo="ts")
    assert missing["empty"]["code"] == "path_not_indexed"


def test_answers_say_what_they_could_not_see(client: TestClient, settings: Settings,
                                             conn: psycopg.Connection, tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    body = call(client, "skeleton", repo="polyglot")
    assert body["unseen"]["skipped_files"] >= 5
    assert body["files"]


def test_bad_arguments_are_client_errors(client: TestClient, fixtures: list[str]) -> None:
    assert client.post("/v1/dependencies", json={"path": "../x", "repo": "python"}) \
        .status_code == 400
    assert client.post("/v1/dependencies", json={"path": "app/util.py", "depth": 9,
                                                 "repo": "python"}).status_code == 400
    assert client.post("/v1/dependencies", json={"path": "nope.py", "repo": "python"}) \
        .status_code == 404
