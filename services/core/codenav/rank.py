"""Ranking as pure functions: IDF, Reciprocal Rank Fusion, and path/kind priors.

Kept free of I/O so golden tests can pin the behaviour on fixed inputs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Sequence

RRF_K = 60
QUALIFIED_BOOST = 1.6
"""A declaration whose owner and name the query both names (``Owner member``)."""

_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing|testdata|test_data|fixtures?|e2e|"
    r"integration[-_]tests?)(/|$)|(^|/)(test_[^/]*|[^/]*_test|[^/]*Tests?|[^/]*Spec|"
    r"[^/]*[._-](test|spec)s?)\.[a-z0-9]+$|(^|/)conftest\.py$"
)
_GENERATED_PATH = re.compile(
    r"(^|/)(generated|gen|__generated__|autogen|third[-_]party|vendored|external|"
    r"node_modules|migrations)(/|$)|[._-](pb|pb2|generated|gen|min)\.[a-z0-9]+$|"
    r"_pb2(_grpc)?\.py$"
)
_DOC_PATH = re.compile(r"(^|/)(docs?|documentation|examples?|samples?)(/|$)|\.(md|rst|txt)$")


def idf(df: int, n_docs: int) -> float:
    """BM25's IDF, floored so very common terms still count a little."""
    n = max(n_docs, 1)
    return max(math.log(1.0 + (n - df + 0.5) / (df + 0.5)), 0.05)


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K,
        weights: Sequence[float] | None = None) -> dict[Hashable, float]:
    """Reciprocal Rank Fusion: each list adds weight / (k + rank) to an item's score."""
    scores: dict[Hashable, float] = {}
    for i, ranking in enumerate(rankings):
        w = weights[i] if weights else 1.0
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    return scores


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def is_generated_path(path: str) -> bool:
    return bool(_GENERATED_PATH.search(path))


def is_doc_path(path: str) -> bool:
    return bool(_DOC_PATH.search(path))


def path_prior(path: str, wants_tests: bool) -> float:
    """Multiplier for a result's path: tests, generated and vendored code rank lower
    unless the query asks for them."""
    factor = 1.0
    if is_test_path(path):
        factor *= 1.15 if wants_tests else 0.45
    if is_generated_path(path):
        factor *= 0.5
    return factor


KIND_PRIOR = {
    "class": 1.1, "interface": 1.1, "enum": 1.05, "type": 1.05, "function": 1.1,
    "method": 1.05, "constructor": 1.0, "module": 1.0, "macro": 1.0, "property": 1.0,
    "section": 0.85, "block": 0.8, "text": 0.75,
}


def kind_prior(kind: str, definition_intent: bool) -> float:
    prior = KIND_PRIOR.get(kind, 0.9)
    if definition_intent and kind in ("block", "text", "section"):
        prior *= 0.6
    return prior


def ordered(scores: dict[Hashable, float]) -> list[Hashable]:
    return [item for item, _ in sorted(scores.items(), key=lambda kv: (-kv[1], str(kv[0])))]


def top_groups(groups: Iterable[tuple[int, float]], limit: int) -> list[int]:
    """Indices of the ``limit`` most informative groups (by IDF), in their original order."""
    best = sorted(groups, key=lambda g: -g[1])[:limit]
    return sorted(i for i, _ in best)
