"""The layout holds: the engine (``codenav``) names no service and no launcher module, in
an import or in a string; a service depends on the engine only; the launcher
(``codenav_cli``) may depend on everything, and nothing depends on it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "services"
PACKAGES = {"codenav_api": "api", "codenav_worker": "worker", "codenav_watcher": "watcher",
            "codenav_adapter": "adapter", "codenav_embedder": "embedder", "codenav_cli": "cli"}
NAMED = re.compile(r"\b(" + "|".join(PACKAGES) + r")\b")


def _sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "egg-info" not in p.parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def test_the_engine_names_no_service_or_launcher_module_anywhere() -> None:
    found = []
    for path in _sources(SERVICES / "core" / "codenav"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if NAMED.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "the engine names a service or the launcher:\n" + "\n".join(found)


def test_the_check_sees_an_engine_module_naming_a_service(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text('JOB = "codenav_worker.jobs.reconcile_repo"\n', encoding="utf-8")
    assert NAMED.search(sample.read_text(encoding="utf-8"))


def test_services_import_the_engine_and_no_other_service() -> None:
    wrong = []
    for package, folder in PACKAGES.items():
        if package == "codenav_cli":
            continue  # the launcher starts every service
        for path in _sources(SERVICES / folder / package):
            others = (_imports(path) & set(PACKAGES)) - {package}
            if others:
                wrong.append(f"{path.relative_to(ROOT)} imports {sorted(others)}")
    assert not wrong, "\n".join(wrong)


def test_the_thirteen_tool_names_are_listed_together_only_in_the_registry() -> None:
    from codenav.tools import TOOL_NAMES

    assert len(TOOL_NAMES) == 13
    together = [p.relative_to(ROOT).as_posix() for p in _sources(SERVICES)
                if all(re.search(rf"\b{n}\b", p.read_text(encoding="utf-8"))
                       for n in TOOL_NAMES)]
    assert together == ["services/core/codenav/tools/__init__.py"]


GROUPS = {"access": "access", "auth": "access", "repos": "access", "roots": "access",
          "ratelimit": "access",
          "answers": "answers", "navigate": "answers", "status": "status", "usage": "status",
          "admin": "admin", "snapshot": "admin", "archive": "archive", "roles": "roles",
          "client": "client", "serve": "serve", "refs": "refs", "publish": "publish",
          "overlays": "overlays"}
"""The README's names for the engine's top-level modules (the rest is the foundation)."""
PACKAGES_OF_CORE = {"db", "index", "parse", "lang", "search", "graph", "embed", "jobs",
                    "tools"}


def _unit(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "codenav":
        if len(parts) == 1:
            return "foundation"
        if parts[1] in PACKAGES_OF_CORE:
            return parts[1]
        return GROUPS.get(parts[1], "foundation")
    return parts[0] if parts[0] in PACKAGES else None


def _package_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in _sources(SERVICES):
        parts = path.relative_to(SERVICES).parts[1:]
        source = _unit(".".join(parts).removesuffix(".py").removesuffix(".__init__"))
        if source is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [f"{node.module}.{a.name}" if node.module == "codenav" else
                         node.module for a in node.names]
            for name in names:
                target = _unit(name)
                if target and target not in (source, "foundation"):
                    edges.setdefault(source, set()).add(target)
    return edges


def test_the_readme_draws_every_package_dependency_and_no_other() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("One arrow per dependency between packages"):]
    block = section[section.index("```\n") + 4:]
    block = block[:block.index("```")]
    drawn: dict[str, set[str]] = {}
    source = ""
    for line in block.splitlines():
        if "->" in line:
            source, _, rest = line.partition("->")
            source = source.strip()
        else:
            rest = line
        rest = rest.split("(")[0].replace("and starts", ",")
        targets = {t.strip() for t in rest.split(",") if t.strip()} - {"foundation"}
        drawn.setdefault(source, set()).update(targets)
    drawn = {k: v for k, v in drawn.items() if v}
    actual = _package_graph()
    for service in ("codenav_api", "codenav_worker", "codenav_watcher", "codenav_embedder"):
        actual.setdefault("codenav_cli", set()).add(service)  # started by name (``-m``)
    assert drawn == actual
