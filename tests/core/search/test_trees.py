"""The shipped LightGBM ranker scored through LightGBM's C library: the same scores as the
``lightgbm`` package, without importing it (nor SciPy, nor scikit-learn)."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import lightgbm
import numpy as np
import pytest

from codenav.search import learned, trees
from codenav.search.features import FEATURES


def _shipped_text() -> str:
    return resources.files("codenav.search.models").joinpath(
        learned.MODEL_FILES["lexical"] + ".txt").read_text(encoding="utf-8")


def test_the_native_booster_scores_as_the_lightgbm_package_does() -> None:
    text = _shipped_text()
    rows = np.random.default_rng(11).random((150, len(FEATURES)))
    rows[:, FEATURES.index("q_groups")] = np.log1p(3)
    native = trees.NativeBooster(text)
    reference = lightgbm.Booster(model_str=text)
    assert native.feature_name() == reference.feature_name() == list(FEATURES)
    np.testing.assert_allclose(native.predict(rows), reference.predict(rows, num_threads=1),
                               rtol=0, atol=1e-12)
    assert native.predict(rows[:1]).shape == (1,)


def test_a_broken_model_or_wrong_rows_are_refused_with_an_error() -> None:
    with pytest.raises(ValueError, match="not a LightGBM model"):
        trees.NativeBooster("not a model at all")
    text = _shipped_text()
    with pytest.raises(ValueError, match="features"):
        trees.NativeBooster(text).predict(np.zeros((2, 3)))
    # a file cut short, or a tree edited: LightGBM itself would crash the process on these
    for damaged in (text[:len(text) // 2], text.replace("Tree=7\n", "Tree=7\nx=1\n", 1),
                    text.replace("tree_sizes=", "tree_sizes=1 ", 1)):
        with pytest.raises(ValueError, match="incomplete or damaged"):
            trees.NativeBooster(damaged)


def test_scoring_with_the_shipped_model_imports_no_lightgbm_scipy_or_sklearn() -> None:
    """The API process loads the model on its first find_files: the package's imports
    would cost it 82 MB (bench/README.md)."""
    code = ("import sys\n"
            "from codenav.search import learned\n"
            "model = learned.model_for('lexical')\n"
            "assert isinstance(model, learned.Model), model\n"
            "print(len(model.predict([[0.5] * len(learned.FEATURES)] * 3)))\n"
            "print(sorted(m for m in ('lightgbm', 'scipy', 'sklearn') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["3", "[]"], out.stdout


def test_a_bag_of_models_averaged_into_one_scores_their_mean() -> None:
    """The hybrid model ships as the mean of five (``train_ranker.BAGGED``): one model
    text whose trees are all of theirs, each leaf divided by their number."""
    rng = np.random.default_rng(5)
    x = rng.random((600, 4))
    y = (x[:, 0] + 0.5 * x[:, 1] * rng.random(600) > 0.9).astype(int)
    params = {"objective": "lambdarank", "num_leaves": 7, "bagging_fraction": 0.8,
              "bagging_freq": 1, "feature_fraction": 0.8, "verbose": -1, "num_threads": 1}
    boosters = [lightgbm.train({**params, "seed": seed},
                               lightgbm.Dataset(x, y, group=[20] * 30), num_boost_round=12)
                for seed in (7, 11, 23)]
    texts = [b.model_to_string() for b in boosters]
    assert len(set(texts)) == 3  # the seeds made three different models
    bag = trees.averaged(texts)
    rows = rng.random((40, 4))
    mean = np.mean([b.predict(rows, num_threads=1) for b in boosters], axis=0)
    np.testing.assert_allclose(trees.NativeBooster(bag).predict(rows), mean, rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(lightgbm.Booster(model_str=bag).predict(rows), mean, rtol=0,
                               atol=1e-12)
    assert bag.count("\nTree=") == sum(b.num_trees() for b in boosters)
    with pytest.raises(ValueError, match="no models"):
        trees.averaged([])
    other = lightgbm.train({**params, "seed": 7}, lightgbm.Dataset(
        x[:, :3], y, group=[20] * 30), num_boost_round=2).model_to_string()
    with pytest.raises(ValueError, match="different features"):
        trees.averaged([texts[0], other])
    with pytest.raises(ValueError, match="incomplete or damaged"):
        trees.averaged([texts[0], texts[1][:len(texts[1]) // 2]])
