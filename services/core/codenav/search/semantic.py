"""What a query gets from the embeddings: its vector, the model, coverage, and why it is
degraded when it is. Built once per request by the API; search and find_files only read it.

Semantic search never turns into an error: without an embedder, or while embeddings are
incomplete, answers fall back to (or lean on) the lexical rankers and say so.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import psycopg

from codenav.access import Scope
from codenav.db import queries as q
from codenav.embed import vectors
from codenav.embed.client import EmbedClient
from codenav.errors import Busy, CodenavError
from codenav.search.query import semantic_text

MODES = ("hybrid", "lexical", "semantic")
RETRY_FIRST_S, RETRY_AFTER_S = 0.5, 10.0
"""After the embedder fails, queries skip it for a while instead of waiting on it each time:
0.5 s after a first failure, doubling with each one in a row up to 10 s. An embedder that
is loading its model (a stack starting) is then used within a second of being ready, and
one that is down costs a failed attempt every 10 s."""
BUSY_IN_A_ROW = 3
"""Answers over the time budget in a row that count as the embedder being down."""
COVERAGE_TTL_S = 5.0


@dataclass
class SemanticContext:
    model: vectors.Model | None = None
    vector: list[float] | None = None
    coverage: dict[str, Any] | None = None
    note: str | None = None

    @property
    def usable(self) -> bool:
        return self.model is not None and self.vector is not None


def describe_semantic(answer: dict[str, Any], mode: str,
                      semantic: SemanticContext | None) -> None:
    """Say in the answer why semantic ranking was degraded, and how far coverage goes."""
    if mode == "lexical":
        return
    if semantic is None:
        answer["note"] = "semantic ranking not available here; lexical results only"
    elif semantic.note:
        answer["note"] = semantic.note
        if semantic.coverage is not None:
            answer["semantic_coverage"] = semantic.coverage


@dataclass
class QueryEmbedder:
    """The API's side of embeddings: query vectors (cached), a short circuit-breaker when
    the embedder is down, and per-repo coverage (cached briefly)."""

    client: EmbedClient | None
    _vectors: OrderedDict[str, list[float]] = field(default_factory=OrderedDict)
    _down_until: float = 0.0
    _failures: int = 0
    _down_reason: str = ""
    _busy: int = 0
    _model_name: str = ""
    _coverage: dict[tuple[int, int], tuple[float, dict[str, Any]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _vector(self, text: str) -> list[float]:
        assert self.client is not None
        with self._lock:
            cached = self._vectors.get(text)
            if cached is not None:
                self._vectors.move_to_end(text)
                return cached
        vector = self.client.embed([self.client.query_prefix + text])[0]
        with self._lock:
            self._vectors[text] = vector
            while len(self._vectors) > 512:
                self._vectors.popitem(last=False)
        return vector

    def _back_off(self) -> None:
        self._failures += 1
        wait = min(RETRY_AFTER_S, RETRY_FIRST_S * 2 ** min(self._failures - 1, 8))
        self._down_until = time.monotonic() + wait

    def context(self, conn: psycopg.Connection, scope: Scope, text: str,
                mode: str) -> SemanticContext | None:
        if mode == "lexical":
            return None
        if self.client is None:
            return SemanticContext(note="semantic search is not configured "
                                   "(CODENAV_EMBED_URL); lexical results only")
        if time.monotonic() < self._down_until:
            return self._down(conn, scope)
        try:
            info = self.client.info()
            vector = self._vector(semantic_text(text))
        except Busy as exc:  # over the time budget: this answer is lexical, the next tries
            self._busy += 1
            if self._busy >= BUSY_IN_A_ROW:
                self._back_off()
            self._down_reason = f"{exc.message}, busy"
            return self._down(conn, scope)
        except CodenavError as exc:
            self._back_off()
            self._down_reason = exc.message
            return self._down(conn, scope)
        self._busy = self._failures = 0
        self._model_name = info.name
        model = vectors.find_model(conn, info.name)
        if model is None:
            coverage = vectors.coverage(conn, None, scope)
            coverage.update(model=info.name, backlog=coverage["total"])
            return SemanticContext(vector=vector, coverage=coverage,
                                   note="no chunk is embedded yet; lexical results only")
        coverage = self._repo_coverage(conn, model, scope)
        ctx = SemanticContext(model=model, vector=vector, coverage=coverage)
        if coverage.get("ratio", 1.0) < 1.0:
            ctx.note = (f"embeddings cover {coverage['embedded']} of {coverage['total']} "
                        "chunks so far; the rest is found lexically only")
        elif not coverage.get("total"):
            ctx.note = (f"no indexed chunk here has {coverage['min_lines']} lines or more, "
                        "so none has a vector; lexical results only")
        return ctx

    def _down(self, conn: psycopg.Connection, scope: Scope) -> SemanticContext:
        """The embedder is unreachable: lexical results, and the coverage the index holds
        for the model last seen (what semantic search will have once it is back)."""
        ctx = SemanticContext(note=f"embedder unavailable ({self._down_reason}); "
                              "lexical results only")
        name = self._model_name
        if not name:  # not seen since this process started: the index's only model, if one
            names = [r[0] for r in conn.execute(q.EMBED_MODEL_NAMES).fetchall()]
            name = names[0] if len(names) == 1 else ""
        model = vectors.find_model(conn, name) if name else None
        if model is not None:
            ctx.coverage = self._repo_coverage(conn, model, scope)
        return ctx

    def _repo_coverage(self, conn: psycopg.Connection, model: vectors.Model,
                       scope: Scope) -> dict[str, Any]:
        key = (model.id, scope.at.id)
        now = time.monotonic()
        hit = self._coverage.get(key)
        if hit is not None and now - hit[0] < COVERAGE_TTL_S:
            return hit[1]
        value = vectors.coverage(conn, model, scope)
        self._coverage[key] = (now, value)
        return value
