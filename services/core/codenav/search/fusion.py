"""Ranking as pure functions: IDF, Reciprocal Rank Fusion, and path/kind priors.

Kept free of I/O so golden tests can pin the behaviour on fixed inputs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from codenav.lang import conventions
from codenav.search import weights as W
from codenav.search.weights import QUALIFIED_BOOST, RRF_K, SEMANTIC_WEIGHT

__all__ = ["QUALIFIED_BOOST", "RRF_K", "SEMANTIC_WEIGHT"]  # the weights, named in weights.py

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
    """Tests and test fixtures, by the conventions of the file's ecosystem."""
    return conventions.is_test(path)


def is_generated_path(path: str) -> bool:
    return conventions.role(path) in (conventions.GENERATED, conventions.VENDORED)


def is_doc_path(path: str) -> bool:
    """Documentation, examples and benchmarks: around the code, rarely what a task edits."""
    return conventions.role(path) in (conventions.DOCS, conventions.EXAMPLE, conventions.BENCH)


_CONFIG_PATH = re.compile(r"\.(ya?ml|json|toml|ini|cfg|conf|properties|xml)$|"
                          r"(^|/)(Makefile|Dockerfile|.*\.gradle|setup\.cfg)$")
_DOCS_WORDS = re.compile(r"\b(docs?|documentation|readme|guide|tutorial|config|"
                         r"configuration|settings?|yaml|json|toml|changelog|architecture|"
                         r"overview|examples?|samples?|demos?|benchmarks?)\b", re.IGNORECASE)


def is_config_path(path: str) -> bool:
    return bool(_CONFIG_PATH.search(path))


def asks_for_docs(text: str) -> bool:
    """Whether a query is about documentation or configuration rather than code."""
    return bool(_DOCS_WORDS.search(text))


def path_prior(path: str, wants_tests: bool, about_docs: bool = False,
               build_asked: bool = False) -> float:
    """Multiplier for a result's path: tests, generated and vendored code, docs and config
    rank lower unless the query asks for them (``build_asked``: a build script is what a
    query about dependencies, versions or the build is after)."""
    factor = 1.0
    if is_test_path(path):
        factor *= W.TEST_PRIOR_WANTED if wants_tests else W.TEST_PRIOR
    if is_generated_path(path):
        factor *= W.GENERATED_PRIOR
    if not about_docs and (is_doc_path(path) or is_config_path(path)) and \
            not (build_asked and conventions.is_build_script(path)):
        factor *= W.DOCS_PRIOR
    return factor


def centrality_prior(prior: float) -> float:
    """Multiplier for a result's file centrality: small, so it orders near-ties only."""
    return 1.0 + W.CENTRALITY_WEIGHT * min(max(prior, 0.0), 1.0)


def path_terms_prior(path_terms: Sequence[str], query_terms: set[str]) -> float:
    """Path tokens count: a result whose path carries query words ranks a little higher."""
    hits = len(set(path_terms) & query_terms)
    return 1.0 + W.PATH_TERM_BOOST * min(hits, W.PATH_TERM_CAP)


def kind_prior(kind: str, definition_intent: bool, build_asked: bool = False,
               path: str = "") -> float:
    """Multiplier for a chunk's kind: declarations above blocks and text, except in a build
    script when the query is about the build (its top-level calls are what it declares)."""
    prose = kind in ("block", "text", "section")
    if prose and build_asked and conventions.is_build_script(path):
        return W.KIND_PRIOR_BUILD_ASKED
    prior = W.KIND_PRIOR.get(kind, W.KIND_PRIOR_OTHER)
    if definition_intent and prose:
        prior *= W.DEFINITION_PROSE_PRIOR
    return prior


def ordered(scores: dict[Hashable, float]) -> list[Hashable]:
    return [item for item, _ in sorted(scores.items(), key=lambda kv: (-kv[1], str(kv[0])))]


def top_groups(groups: Iterable[tuple[int, float]], limit: int) -> list[int]:
    """Indices of the ``limit`` most informative groups (by IDF), in their original order."""
    best = sorted(groups, key=lambda g: -g[1])[:limit]
    return sorted(i for i, _ in best)


def match_confidence(top: Sequence[Hashable], top_scores: Sequence[float],
                     lists: Mapping[str, Sequence[Hashable]], exact: set[Hashable] | set[Any],
                     top_distance: float | None) -> dict[str, str]:
    """How much to trust the first result: ``high`` when it declares exactly what the query
    names or several rankers agree on it, ``medium`` when it is clearly ahead, ``low``
    otherwise. The reason says which."""
    if not top:
        return {"level": "low", "reason": "no results"}
    first = top[0]
    if first in exact:
        return {"level": "high", "reason": "declares exactly the symbol the query names"}
    agreeing = [name for name, ranking in lists.items() if first in list(ranking)[:5]]
    if len(agreeing) >= 2:
        return {"level": "high", "reason": "top result agreed by " + " and ".join(agreeing)}
    margin = top_scores[0] / top_scores[1] if len(top_scores) > 1 and top_scores[1] else 9.9
    if agreeing == ["semantic"] and top_distance is not None and top_distance > 0.55:
        return {"level": "low", "reason": f"only a weak semantic match "
                f"(cosine distance {top_distance:.2f})"}
    if margin >= 1.25:
        return {"level": "medium", "reason": f"top result clearly ahead ({margin:.2f}x the "
                "next), found by " + (agreeing[0] if agreeing else "the fused ranking")}
    return {"level": "low", "reason": "several results score alike; refine the query or "
            "add an identifier"}
