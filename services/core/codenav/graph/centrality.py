"""File centrality: PageRank over the links between files (imports and references).

Pure functions, pinned by tests: ``pagerank`` over weighted links, and ``priors`` that map
ranks to [0, 1] on a log scale (PageRank is heavy-tailed: a handful of files hold most of
it, and a linear scale would leave every other file at ~0).
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Iterable

DAMPING = 0.85
ITERATIONS = 50
TOLERANCE = 1e-8


def pagerank(nodes: Iterable[str], links: Iterable[tuple[str, str, float]],
             damping: float = DAMPING) -> dict[str, float]:
    """PageRank with link weights; a file with no outgoing link spreads its rank evenly.
    Ranks sum to 1."""
    names = sorted(set(nodes))
    if not names:
        return {}
    position = {name: i for i, name in enumerate(names)}
    n = len(names)
    out_weight = [0.0] * n
    edges: list[tuple[int, int, float]] = []
    for src, dst, weight in links:
        i, j = position.get(src), position.get(dst)
        if i is None or j is None or i == j or weight <= 0:
            continue
        edges.append((i, j, weight))
    # Sums in one order whatever order the links come in (a table's rows come back in the
    # order they lie on disk): the same graph gives the same ranks, to the last bit.
    edges.sort()
    for i, _j, weight in edges:
        out_weight[i] += weight
    incoming: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for i, j, weight in edges:  # each link's share of its source's rank
        incoming[j].append((i, damping * weight / out_weight[i]))
    columns = [(j, [i for i, _w in pairs], [w for _i, w in pairs])
               for j, pairs in incoming.items()]
    dangling_nodes = [i for i in range(n) if out_weight[i] == 0.0]
    rank = [1.0 / n] * n
    for _ in range(ITERATIONS):
        dangling = sum(rank[i] for i in dangling_nodes)
        base = (1.0 - damping) / n + damping * dangling / n
        new = [base] * n
        for j, sources, shares in columns:
            new[j] += sum(map(operator.mul, map(rank.__getitem__, sources), shares))
        delta = sum(map(abs, map(operator.sub, new, rank)))
        rank = new
        if delta < TOLERANCE:
            break
    return {name: rank[i] for name, i in position.items()}


def priors(ranks: dict[str, float]) -> dict[str, float]:
    """Ranks mapped to [0, 1]: log(1 + rank * n) / log(1 + max_rank * n)."""
    if not ranks:
        return {}
    n = len(ranks)
    top = max(ranks.values())
    scale = math.log1p(top * n)
    if scale <= 0:
        return dict.fromkeys(ranks, 0.0)
    return {path: math.log1p(r * n) / scale for path, r in ranks.items()}


def link_weight(count: int) -> float:
    """Many references between two files count more, with diminishing returns."""
    return 1.0 + math.log(max(count, 1))
