"""The trained file ranker over ``codenav.search.features``.

One model per mode family (``lexical``: no semantic features; ``hybrid``: with them), trained
by ``bench/train_ranker.py`` on the development suite and chosen by leave-one-repository-out
scores. Two kinds can ship in ``codenav/search/models/``: a tuned linear fusion
(``find_files_<family>.json``: a weight per feature, pure arithmetic) and a LightGBM
LambdaRank model (``find_files_<family>.txt``, read when no JSON model is there). The
lexical family ships LambdaRank (since 2026-12-06: ahead of the tuned fusion leave-one-
repository-out on the commit-history suite and on SWE-bench Verified; bench/README.md).
A model names the features it was trained on; scoring reads them by name, so a feature
added later is simply ignored by an older model. A repository whose recent git history
was read (``codenav.index.history``) is ranked in lexical mode by
``find_files_lexical_history.txt`` and in hybrid mode by ``find_files_hybrid_history.txt``,
both trained with the history features on commit subjects and issue texts; the lexical
model is trained with them read as 0 (a checkout without git, refs indexed from a mirror).
The hybrid history model is the mean of five trained with different seeds, shipped as one
(``codenav.search.trees.averaged``; ``train_ranker.BAGGED`` says why).
Without a loadable model (and for ``hybrid`` without history, which ships none), ``score``
uses the weights of ``codenav.search.weights.FALLBACK`` (and says so in the name it
returns); in hybrid mode a short query adds ``HYBRID_SHORT`` (the build-script weights).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from importlib import resources
from typing import Any

from codenav.search import weights as W
from codenav.search.features import FEATURES

log = logging.getLogger(__name__)

MODEL_FILES = {"lexical": "find_files_lexical", "hybrid": "find_files_hybrid",
               "lexical_history": "find_files_lexical_history",
               "hybrid_history": "find_files_hybrid_history"}
"""Model file stems per family: ``.json`` (linear) is tried first, then ``.txt`` (LightGBM)."""
SHIPS_NONE = {"hybrid"}
"""Families scored by the fallback weights by design: no model file is no warning."""
_lock = threading.Lock()
_cache: dict[str, Model | LinearModel | None] = {}


class Model:
    """A loaded booster and the feature columns it expects."""

    def __init__(self, booster: Any, name: str) -> None:
        self.booster = booster
        self.name = name
        self.columns = [FEATURES.index(f) if f in FEATURES else -1
                        for f in booster.feature_name()]
        self._same_columns = self.columns == list(range(len(FEATURES)))

    def feature_name(self) -> list[str]:
        return list(self.booster.feature_name())

    def predict(self, rows: list[list[float]]) -> list[float]:
        import numpy as np

        x = np.asarray(rows, dtype=np.float64)
        if self._same_columns:  # trained on today's features: the rows as they are
            matrix = x
        else:  # by name; a feature this codenav no longer computes reads as 0
            matrix = np.zeros((len(rows), len(self.columns)))
            for j, c in enumerate(self.columns):
                if c >= 0:
                    matrix[:, j] = x[:, c]
        return [float(v) for v in self.booster.predict(matrix, num_threads=1)]


LONG_QUERY = math.log1p(7)
"""``q_groups`` from which a query is long (an issue text, ``filerank.LONG_QUERY_GROUPS``)."""


class LinearModel:
    """Tuned fusion: a weight per feature, for short queries (``weights``) and for long
    ones (``long_weights``, optional): ``{"kind": "linear", "weights": {...}, ...}``."""

    def __init__(self, spec: dict[str, Any], name: str) -> None:
        if spec.get("kind") != "linear" or not isinstance(spec.get("weights"), dict):
            raise ValueError(f"{name}: not a linear model (kind and weights expected)")
        self.name = name
        self.spec = spec
        self.short = self._pairs(spec["weights"])
        self.long = self._pairs(spec.get("long_weights") or spec["weights"])
        self._q = FEATURES.index("q_groups")

    @staticmethod
    def _pairs(weights: dict[str, Any]) -> list[tuple[int, float]]:
        return [(FEATURES.index(f), float(w)) for f, w in weights.items() if f in FEATURES]

    def feature_name(self) -> list[str]:
        return sorted(set(self.spec["weights"]) | set(self.spec.get("long_weights") or {}))

    def predict(self, rows: list[list[float]]) -> list[float]:
        out = []
        for row in rows:
            pairs = self.long if row[self._q] >= LONG_QUERY else self.short
            out.append(sum(row[i] * w for i, w in pairs))
        return out


def load_text(text: str, name: str) -> Model:
    """A LightGBM model from its text, scored by LightGBM's C library
    (``codenav.search.trees``: the Python package would import SciPy and scikit-learn)."""
    from codenav.search.trees import NativeBooster

    return Model(NativeBooster(text), name)


def load_linear(text: str, name: str) -> LinearModel:
    return LinearModel(json.loads(text), name)


def model_for(family: str) -> Model | LinearModel | None:
    """The shipped model of ``family`` (``lexical`` or ``hybrid``), loaded once; None when it
    cannot be loaded (the reason is logged once)."""
    with _lock:
        if family in _cache:
            return _cache[family]
        model: Model | LinearModel | None = None
        folder = resources.files("codenav.search.models")
        linear = folder.joinpath(MODEL_FILES[family] + ".json")
        tree = folder.joinpath(MODEL_FILES[family] + ".txt")
        try:
            if linear.is_file():
                model = load_linear(linear.read_text(encoding="utf-8"), linear.name)
            elif tree.is_file() or family not in SHIPS_NONE:
                model = load_text(tree.read_text(encoding="utf-8"), tree.name)
        except (ImportError, OSError, ValueError, KeyError) as exc:
            log.warning("file ranker model %s not loaded (%s); using the fallback weights",
                        family, exc)
        except Exception as exc:  # noqa: BLE001 - the library's own errors, a corrupt file
            log.warning("file ranker model %s not loaded (%s: %s); using the fallback "
                        "weights", family, type(exc).__name__, exc)
        _cache[family] = model
        return model


def fallback(rows: list[list[float]], family: str = "lexical") -> list[float]:
    """Scores by the hand-set weights: ``FALLBACK``, plus ``HYBRID_SHORT`` for a short query
    in hybrid mode."""
    index = {name: i for i, name in enumerate(FEATURES)}
    weights = [(index[name], w) for name, w in W.FALLBACK.items() if name in index]
    if family != "hybrid":
        return [sum(row[i] * w for i, w in weights) for row in rows]
    short = [(index[name], w) for name, w in (W.FALLBACK | W.HYBRID_SHORT).items()
             if name in index]
    q = index["q_groups"]
    return [sum(row[i] * w for i, w in (weights if row[q] >= LONG_QUERY else short))
            for row in rows]


def score(rows: list[list[float]], family: str, model: Any = None,
          history: bool = False) -> tuple[list[float], str]:
    """A score per feature row (higher ranks first) and the name of what scored them.
    ``model`` overrides the shipped one (the evaluation scores held-out models this way).
    ``history``: the rows' repository has its recent history read (``Pool.history``); a
    pool is then scored by the model of its family trained with it (``lexical_history``,
    ``hybrid_history``: the hybrid one on commit subjects and issue texts). A family
    without a shipped model is scored by the fallback weights: for ``hybrid`` without
    history, no model beat them leave-one-repository-out at SWE-bench Acc@5 (see
    bench/README.md)."""
    if not rows:
        return [], "none"
    chosen = model
    if chosen is None and history:
        chosen = model_for(f"{family}_history")
    if chosen is None:
        chosen = model_for(family)
    if chosen is None:
        return fallback(rows, family), "fallback"
    return chosen.predict(rows), chosen.name
