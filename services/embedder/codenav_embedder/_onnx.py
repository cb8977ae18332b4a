"""ONNX helpers: export a sentence-transformers transformer offline, quantise it, run it.

The export uses ``torch.onnx.export`` (the dynamo exporter) on the model already in memory,
so it needs no network and no ``optimum``. Graphs are cached per model:

    <cache>/<slug>-<hash>/fp32/model.onnx
    <cache>/<slug>-<hash>/int8/model.onnx     weights quantised to int8 (dynamic quantisation)

Each directory appears atomically (written aside, then renamed), so concurrent starts of the
service at worst export twice.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from codenav_embedder import onnx_serve
from codenav_embedder.onnx_serve import cache_key, open_session

log = logging.getLogger("codenav.embedder")

def ensure_exported(model: SentenceTransformer, model_name: str, cache: Path, *,
                    int8: bool) -> Path:
    """Path of the model's ONNX graph (fp32, or int8 when ``int8``), exporting it if needed."""
    base = cache / cache_key(model_name)
    fp32 = onnx_serve.graph_path(base, False)
    if not fp32.is_file():
        log.info("exporting %s to ONNX in %s", model_name, fp32.parent)
        with _atomic_dir(fp32.parent) as tmp:
            _export(model, tmp / "model.onnx")
    if not int8:
        return fp32
    quantised = onnx_serve.graph_path(base, True)
    if not quantised.is_file():
        log.info("quantising %s to int8 in %s", model_name, quantised.parent)
        with _atomic_dir(quantised.parent) as tmp:
            quantise(fp32, tmp / "model.onnx")
    return quantised


def run(session: Any, features: dict[str, Any]) -> torch.Tensor:
    """Token embeddings for one preprocessed batch."""
    feeds = {i.name: features[i.name].numpy() for i in session.get_inputs()}
    return torch.from_numpy(session.run(None, feeds)[0])


def _input_names(model: SentenceTransformer) -> list[str]:
    sample = model.preprocess(["def f(x): return x", "a"])
    return [k for k, v in sample.items() if isinstance(v, torch.Tensor) and v.dim() == 2]


class _Wrapper(torch.nn.Module):
    def __init__(self, hf_model: torch.nn.Module, names: list[str]) -> None:
        super().__init__()
        self.hf_model = hf_model
        self.names = names

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        inputs = dict(zip(self.names, args, strict=True))
        return self.hf_model(**inputs, return_dict=True).last_hidden_state


def _export(model: SentenceTransformer, target: Path) -> None:
    first: Any = model[0]
    if list(first.modality_config) != ["text"] or first.modality_config["text"].get(
            "method_output_name") != "last_hidden_state":
        raise ValueError("ONNX export supports text models whose output is last_hidden_state")
    hf_model: Any = first.model
    names = _input_names(model)
    sample = model.preprocess(["def f(x):\n    return x + 1", "short", "a third one, longer"])
    args = tuple(sample[n] for n in names)
    batch, seq = torch.export.Dim("batch", min=1, max=4096), torch.export.Dim("seq", min=1,
                                                                               max=8192)
    previous = hf_model.config._attn_implementation
    hf_model.set_attn_implementation("eager")  # sdpa's masking does not export reliably
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(
                _Wrapper(hf_model, names).eval(), args, dynamo=True, opset_version=18,
                input_names=names, output_names=["token_embeddings"],
                dynamic_shapes=(tuple({0: batch, 1: seq} for _ in names),), verbose=False)
        if program is None:
            raise RuntimeError("torch.onnx.export returned no program")
        program.save(str(target))
    finally:
        hf_model.set_attn_implementation(previous)


def quantise(source: Path, target: Path, *, per_channel: bool = True) -> None:
    """Dynamic int8 quantisation: weights stored as int8 (one scale per output channel, or
    one per tensor), activations quantised on the fly. Per-tensor scales cost quality on
    MiniLM (cosine to fp32 0.95 mean vs 0.99 per-channel; see the README)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.INFO)  # the quantiser logs a line per tensor on the root logger
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8,
                         per_channel=per_channel)
    finally:
        logging.disable(logging.NOTSET)


@contextlib.contextmanager
def _atomic_dir(final: Path) -> Iterator[Path]:
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        yield tmp
        tmp.chmod(0o755)  # mkdtemp makes it private; an image's cache is read by another user
        try:
            os.replace(tmp, final)
        except OSError:  # another process got there first: keep theirs
            if not (final / "model.onnx").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


SAMPLE_TEXTS = [
    "def add(a, b):\n    return a + b",
    "  public final class KafkaProducer<K, V> implements Producer<K, V> {  ",
    "SELECT name FROM users WHERE id = %s",
    "\u4e2d\u6587\u6d4b\u8bd5 caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \U0001f600",
    "x" * 3000,
    "word " * 400,
    "\t\n  \n",
    "a",
    "fn main() { println!(\"{}\", 42); } // comment",
    "<div class=\"a\">&amp; text</div>",
]
"""Texts on which the torch-free path must match sentence-transformers exactly: code,
unicode, whitespace only, one letter, texts past every cut."""


def describe(model: SentenceTransformer, base: Path, graph: Path) -> str:
    """Write ``serve.json`` for ``model``: servable without torch when its pipeline is one
    ``onnx_serve`` reproduces and the sample texts give the same inputs and vectors; else
    the reason. Returns the reason ('' when servable)."""
    reason = _unservable(model)
    manifest: onnx_serve.Manifest | None = None
    if not reason:
        pooling: Any = model[1]
        backend = model.tokenizer.backend_tokenizer
        manifest = onnx_serve.Manifest(
            dimension=int(model.get_embedding_dimension() or 0),
            own_tokens=int(model.max_seq_length or 0),
            pooling=str(pooling.pooling_mode), normalize=len(model) == 3,
            inputs=_input_names(model),
            splits_at_whitespace=type(backend.pre_tokenizer).__name__ in
            onnx_serve.WORD_SPLITTERS)
        manifest.write(base, backend.to_str())
        reason = _mismatch(model, base, manifest, graph)
    if reason:
        log.info("%s needs sentence-transformers to run: %s", base.name, reason)
        onnx_serve.write_unservable(base, reason)
    return reason


def _unservable(model: SentenceTransformer) -> str:
    names = [type(m).__name__ for m in model]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return f"its modules are {names}"
    pooling: Any = model[1]
    if str(getattr(pooling, "pooling_mode", "")) not in onnx_serve.POOLINGS:
        return f"pooling {getattr(pooling, 'pooling_mode', '?')!r}"
    if not getattr(pooling, "include_prompt", True) or getattr(model, "default_prompt_name", None):
        return "it uses a prompt"
    if getattr(model.tokenizer, "backend_tokenizer", None) is None:
        return "it has no fast tokenizer"
    if getattr(model.tokenizer, "padding_side", "right") != "right" \
            or getattr(model.tokenizer, "truncation_side", "right") != "right":
        return "it pads or truncates on the left"
    if not model.get_embedding_dimension() or not model.max_seq_length:
        return "it declares no dimension or token limit"
    return ""


def _mismatch(model: SentenceTransformer, base: Path, manifest: onnx_serve.Manifest,
              graph: Path) -> str:
    """'' when the torch-free path gives sentence-transformers' inputs and vectors on the
    sample texts, at the model's own limit and at a short cut."""
    session = open_session(graph, 1)
    own = int(model.max_seq_length or 0)
    try:
        for cut in (own, min(16, own)):
            model.max_seq_length = cut
            tok = onnx_serve.tokenizer(base, cut)
            for batch in (SAMPLE_TEXTS, SAMPLE_TEXTS[:1], SAMPLE_TEXTS[6:8]):
                expected = model.preprocess(batch)
                got = onnx_serve.features(tok, batch)
                for name in manifest.inputs:
                    if not np.array_equal(expected[name].numpy(), got[name]):
                        return f"its tokenizer gives other {name} at {cut} tokens"
                with torch.inference_mode():
                    expected["token_embeddings"] = run(session, expected)
                    for module in list(model)[1:]:
                        expected = module(expected)
                want = expected["sentence_embedding"].float().numpy()
                tokens = session.run(None, {n: got[n] for n in manifest.inputs})[0]
                have = onnx_serve.pool(tokens, got["attention_mask"], manifest.pooling,
                                       manifest.normalize)
                if not np.allclose(want, have, atol=1e-5):
                    return f"its pooled vectors differ by {float(np.abs(want - have).max()):.2g}"
    finally:
        model.max_seq_length = own
    return ""


def main(argv: list[str] | None = None) -> int:
    """``python -P -m codenav_embedder._onnx MODEL CACHE [--int8]``: export (and quantise)
    the model's graph into the cache and describe it for the torch-free path. The embedder
    runs this in a child process, so that its own process never loads torch."""
    parser = argparse.ArgumentParser(prog="codenav_embedder._onnx")
    parser.add_argument("model")
    parser.add_argument("cache", type=Path)
    parser.add_argument("--int8", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.set_num_threads(os.cpu_count() or 1)
    model = SentenceTransformer(args.model, device="cpu")
    model.eval()
    graph = ensure_exported(model, args.model, args.cache, int8=args.int8)
    base = args.cache / cache_key(args.model)
    if not onnx_serve.described(base):
        describe(model, base, graph)
    return 0


if __name__ == "__main__":
    sys.exit(main())
