"""Graph accuracy on the fixture repositories: precision and recall of verified edges per
language, against each family's hand-written ``tests/fixtures/graph/<family>/expected.json``.
Not a test (tests/core/graph asserts these are perfect): it prints the table.

    .venv/bin/python bench/graph_eval.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import psycopg

from benchkit import stores
from codenav import repos
from codenav.config import Settings
from codenav.index import reconcile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for tests/
from tests.core.graph.expected import differences, load, precision_recall, snapshot

FIXTURES = Path(__file__).parents[1] / "tests" / "fixtures" / "graph"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", default="", help="also write the table here")
    args = parser.parse_args()
    families = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())
    rows = []
    mismatches = 0
    with tempfile.TemporaryDirectory(prefix="codenav-graph-eval-") as tmp:
        base = Path(tmp)
        with stores(base / "store", queue=False) as started:
            pg = started.pg
            with psycopg.connect(pg.url, autocommit=True) as conn:
                settings = Settings.load(env={"CODENAV_DATABASE_URL": pg.url,
                                              "CODENAV_HOME": str(base / "home"),
                                              "CODENAV_PARSE_PROCESSES": "1",
                                              "CODENAV_ALLOWED_ROOTS": str(base / "repos")},
                                         dotenv=Path("/nonexistent"))
                for family in families:
                    root = base / "repos" / family
                    shutil.copytree(FIXTURES / family, root,
                                    ignore=shutil.ignore_patterns("expected.json"))
                    repo = repos.register(conn, str(root), family)
                    reconcile.reconcile(settings, repo.id)
                    expected = load(FIXTURES / family / "expected.json")
                    actual = snapshot(conn, repo.id)
                    mismatches += len(differences(expected, actual))
                    for language, score in precision_recall(expected, actual).items():
                        rows.append({"family": family, "language": language, **score})
    print(f"{'family':<8} {'language':<11} {'expected':>8} {'found':>6} {'correct':>7} "
          f"{'precision':>9} {'recall':>6}")
    for r in rows:
        print(f"{r['family']:<8} {r['language']:<11} {r['expected']:>8} {r['found']:>6} "
              f"{r['correct']:>7} {r['precision']:>9.3f} {r['recall']:>6.3f}")
    total = {k: sum(r[k] for r in rows) for k in ("expected", "found", "correct")}
    print(f"{'all':<20} {total['expected']:>8} {total['found']:>6} {total['correct']:>7} "
          f"{total['correct'] / max(total['found'], 1):>9.3f} "
          f"{total['correct'] / max(total['expected'], 1):>6.3f}")
    if mismatches:
        print(f"{mismatches} section(s) differ from expected.json (see tests/core/graph)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
