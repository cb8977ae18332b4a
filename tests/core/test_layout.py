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


def test_the_twelve_tool_names_are_listed_together_only_in_the_registry() -> None:
    from codenav.tools import TOOL_NAMES

    together = [p.relative_to(ROOT).as_posix() for p in _sources(SERVICES)
                if all(re.search(rf"\b{n}\b", p.read_text(encoding="utf-8"))
                       for n in TOOL_NAMES)]
    assert together == ["services/core/codenav/tools/__init__.py"]
