"""The torch-free runtime: the exported graph served with the model's tokenizer, ONNX Runtime
and numpy pooling, checked against sentence-transformers hosting the same graph."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from codenav_embedder import _onnx, encoder, onnx_serve
from codenav_embedder.settings import default_model

TEXTS = [
    "def add(a, b):\n    return a + b",
    "public final class KafkaProducer<K, V> implements Producer<K, V> {\n" + "    int x;\n" * 80,
    "SELECT name FROM users WHERE id = %s",
    "\u4e2d\u6587 caf\u00e9 \U0001f600 " * 40,
    "",
    "   \n\t",
    "x" * 5000,
    "a",
]


@pytest.fixture(scope="module")
def lean() -> encoder.BaseEncoder:
    return encoder.load(default_model(), backend="onnx-int8", max_tokens=64, threads=1)


def test_the_bundled_model_is_served_without_torch_in_the_process() -> None:
    """A fresh interpreter loads and runs the default backend; neither torch nor
    sentence-transformers is imported (the export, when needed, ran in a child)."""
    script = textwrap.dedent("""
        import sys
        from codenav_embedder import encoder
        from codenav_embedder.settings import default_model
        enc = encoder.load(default_model(), backend="onnx-int8", max_tokens=64)
        vectors = enc.encode(["def f(): pass", "class A: pass"])
        loaded = [m for m in ("torch", "sentence_transformers", "transformers")
                  if m in sys.modules]
        print(type(enc).__name__, vectors.shape, loaded)
    """)
    done = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["OnnxEncoder", "(2,", "384)", "[]"]


def test_it_gives_the_hosted_models_tokens_and_vectors(lean: encoder.BaseEncoder,
                                                       tmp_path: Path) -> None:
    """The same graph hosted by sentence-transformers (what a model the manifest cannot
    describe gets) prepares the same texts and embeds them to the same vectors."""
    assert isinstance(lean, encoder.OnnxEncoder)
    base = encoder.default_cache_dir() / onnx_serve.cache_key(default_model())
    copy = tmp_path / base.name
    shutil.copytree(base, copy)
    onnx_serve.write_unservable(copy, "test: hosted on purpose")
    hosted = encoder.load(default_model(), backend="onnx-int8", max_tokens=64, threads=1,
                          cache_dir=tmp_path)
    assert isinstance(hosted, encoder.Encoder)
    assert (hosted.dimension, hosted.max_tokens, hosted.own_tokens) == (
        lean.dimension, lean.max_tokens, lean.own_tokens) == (384, 64, 256)
    assert hosted.prepare(TEXTS) == lean.prepare(TEXTS)
    texts = lean.prepare(TEXTS).texts
    got, want = lean.encode(texts), hosted.encode(texts)
    assert np.abs(got - want).max() < 1e-6
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_the_export_describes_only_pipelines_it_reproduces() -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense

    model = SentenceTransformer(default_model(), device="cpu")
    assert _onnx._unservable(model) == ""
    with_dense = SentenceTransformer(modules=[model[0], model[1], Dense(384, 128)],
                                     device="cpu")
    assert "Dense" in _onnx._unservable(with_dense)


def test_a_manifest_of_another_version_or_a_missing_tokenizer_is_not_served(
        tmp_path: Path) -> None:
    base = encoder.default_cache_dir() / onnx_serve.cache_key(default_model())
    assert onnx_serve.read(base) is not None
    copy = tmp_path / "m"
    shutil.copytree(base, copy)
    (copy / onnx_serve.TOKENIZER).unlink()
    assert onnx_serve.read(copy) is None
    shutil.copy(base / onnx_serve.TOKENIZER, copy / onnx_serve.TOKENIZER)
    data = json.loads((copy / onnx_serve.MANIFEST).read_text())
    (copy / onnx_serve.MANIFEST).write_text(json.dumps({**data, "version": 0}))
    assert onnx_serve.read(copy) is None
    assert not onnx_serve.described(copy)  # the next load exports and describes it again


def test_a_failed_export_names_the_cause(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="exporting .* failed"):
        encoder.load(str(tmp_path / "no-such-model"), backend="onnx-int8", cache_dir=tmp_path)


def test_a_graph_that_cannot_be_described_is_still_served_hosted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache from before ``serve.json`` in a place the child cannot write (an older image):
    the graph is there, the description fails, sentence-transformers hosts the graph."""
    base = encoder.default_cache_dir() / onnx_serve.cache_key(default_model())
    copy = tmp_path / base.name
    shutil.copytree(base, copy)
    (copy / onnx_serve.MANIFEST).unlink()
    (copy / onnx_serve.TOKENIZER).unlink()

    def unwritable(*_args: object) -> None:
        raise RuntimeError("exporting failed: PermissionError: read-only cache")

    monkeypatch.setattr(encoder, "_export_in_child", unwritable)
    hosted = encoder.load(default_model(), backend="onnx-int8", max_tokens=64, threads=1,
                          cache_dir=tmp_path)
    assert isinstance(hosted, encoder.Encoder)
    assert hosted.encode(["def f(): pass"]).shape == (1, 384)
    with pytest.raises(RuntimeError, match="read-only"):  # without a graph nothing to host
        encoder.load(default_model(), backend="onnx-int8", cache_dir=tmp_path / "empty")
