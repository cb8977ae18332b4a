"""The graph of an indexed fixture repository, in the shape of its hand-written
``expected.json``, and the comparison of the two (exact, plus precision and recall of the
verified edges per language).

    definitions  [path, qualname, kind]
    imports      [src, spec, dst or null]               null: external
    edges        [src, line, scope, kind, dst, qualname, how]   verified call/type/import
    inheritance  [src, class, extends|implements, dst, qualname]   verified
    potential    [src, line, kind, name, dst, qualname]  ambiguous or name-only matches
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg

from codenav.lang import language_for

# Every potential edge of a repository: ambiguous resolutions, and references that resolved
# to nothing matched by name to declarations of a fitting kind (tests and graph_eval).
GRAPH_POTENTIAL_ALL = """
SELECT e.src_path, e.line, e.kind, split_part(e.dst_qual, '.', -1), e.dst_path, e.dst_qual
FROM graph_edges e WHERE e.repo_id = %(repo)s AND NOT e.verified
UNION
SELECT f.path, r.line, r.kind, r.name, df.path, s.qualname
FROM refs r
JOIN files f ON f.content_id = r.content_id AND f.repo_id = %(repo)s
JOIN symbols s ON s.name = r.name
JOIN files df ON df.content_id = s.content_id AND df.repo_id = %(repo)s
WHERE r.kind IN ('call', 'type', 'extends', 'implements')
  AND NOT EXISTS (SELECT 1 FROM graph_edges e WHERE e.repo_id = f.repo_id
                  AND e.src_path = f.path AND e.ord = r.ord)
  AND CASE r.kind WHEN 'call' THEN s.kind IN ('function', 'method', 'constructor', 'class',
                                              'macro', 'type', 'enum')
                  ELSE s.kind IN ('class', 'interface', 'enum', 'type', 'module') END
ORDER BY 1, 2, 5, 6"""

SECTIONS = ("definitions", "imports", "edges", "inheritance", "potential")

_DEFINITIONS = """
SELECT f.path, s.qualname, s.kind FROM symbols s JOIN files f ON f.content_id = s.content_id
WHERE f.repo_id = %s"""
_IMPORTS = "SELECT DISTINCT src_path, spec, dst_path FROM graph_imports WHERE repo_id = %s"
_EDGES = """
SELECT src_path, line, src_scope, kind, dst_path, dst_qual, how FROM graph_edges
WHERE repo_id = %s AND verified AND kind NOT IN ('extends', 'implements')"""
_INHERITANCE = """
SELECT DISTINCT src_path, src_scope, kind, dst_path, dst_qual FROM graph_edges
WHERE repo_id = %s AND verified AND kind IN ('extends', 'implements')"""


def _sorted(rows: Any) -> list[list[Any]]:
    return sorted(([*r] for r in rows), key=lambda r: [("" if v is None else str(v)) if
                                                         not isinstance(v, int) else f"{v:08d}"
                                                         for v in r])


def snapshot(conn: psycopg.Connection, repo_id: int) -> dict[str, list[list[Any]]]:
    return {
        "definitions": _sorted(conn.execute(_DEFINITIONS, (repo_id,))),
        "imports": _sorted(conn.execute(_IMPORTS, (repo_id,))),
        "edges": _sorted(conn.execute(_EDGES, (repo_id,))),
        "inheritance": _sorted(conn.execute(_INHERITANCE, (repo_id,))),
        "potential": _sorted(conn.execute(GRAPH_POTENTIAL_ALL, {"repo": repo_id})),
    }


def load(path: Path) -> dict[str, list[list[Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {key: _sorted(data.get(key, [])) for key in SECTIONS}


def differences(expected: dict[str, list[list[Any]]],
                actual: dict[str, list[list[Any]]]) -> dict[str, dict[str, list[Any]]]:
    """Per section, what is missing from the actual graph and what it has in excess."""
    out = {}
    for key in SECTIONS:
        want = {json.dumps(r) for r in expected[key]}
        have = {json.dumps(r) for r in actual[key]}
        if want != have:
            out[key] = {"missing": sorted(json.loads(r) for r in want - have),
                        "unexpected": sorted(json.loads(r) for r in have - want)}
    return out


def verified_edges(graph: dict[str, list[list[Any]]]) -> set[tuple[str, ...]]:
    """Verified edges as (src, line-or-class, kind, dst, qualname): what P/R is over."""
    out = {(e[0], str(e[1]), e[3], e[4], e[5]) for e in graph["edges"]}
    out |= {(i[0], i[1], i[2], i[3], i[4]) for i in graph["inheritance"]}
    return out


def precision_recall(expected: dict[str, list[list[Any]]],
                     actual: dict[str, list[list[Any]]]) -> dict[str, dict[str, float]]:
    """Precision and recall of verified edges, per language of the referencing file."""
    want, have = verified_edges(expected), verified_edges(actual)
    by_language: dict[str, dict[str, set[tuple[str, ...]]]] = defaultdict(
        lambda: {"want": set(), "have": set()})
    for edge in want:
        by_language[language_for(edge[0])]["want"].add(edge)
    for edge in have:
        by_language[language_for(edge[0])]["have"].add(edge)
    out = {}
    for language, sets in sorted(by_language.items()):
        hit = len(sets["want"] & sets["have"])
        out[language] = {
            "expected": len(sets["want"]), "found": len(sets["have"]), "correct": hit,
            "precision": round(hit / len(sets["have"]), 3) if sets["have"] else 1.0,
            "recall": round(hit / len(sets["want"]), 3) if sets["want"] else 1.0,
        }
    return out
