"""ONNX helpers: export a sentence-transformers transformer offline, quantise it, run it.

The export uses ``torch.onnx.export`` (the dynamo exporter) on the model already in memory,
so it needs no network and no ``optimum``. Graphs are cached per model:

    <cache>/<slug>-<hash>/fp32/model.onnx
    <cache>/<slug>-<hash>/int8/model.onnx     weights quantised to int8 (dynamic quantisation)

Each directory appears atomically (written aside, then renamed), so concurrent starts of the
service at worst export twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformer

log = logging.getLogger("codenav.embedder")

EXPORT_VERSION = 1
"""Bump when the export or quantisation recipe changes, so cached graphs are rebuilt.
1: dynamo export (opset 18, eager attention); int8 = dynamic, per-channel, signed weights."""


def cache_key(model_name: str) -> str:
    """Directory name for one model's graphs: a readable slug plus a hash of the recipe, the
    name and, for a local directory, its weight files' sizes and times (new weights at the
    same path get new graphs)."""
    stamp = f"{EXPORT_VERSION}:{model_name}"
    local = Path(model_name)
    if local.is_dir():
        for path in sorted(local.glob("*")):
            if path.suffix in (".safetensors", ".bin", ".json"):
                st = path.stat()
                stamp += f":{path.name}:{st.st_size}:{st.st_mtime_ns}"
    digest = hashlib.sha1(stamp.encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", model_name.rstrip("/").rsplit("/", 1)[-1])[:40]
    return f"{slug}-{digest}"


def ensure_exported(model: SentenceTransformer, model_name: str, cache: Path, *,
                    int8: bool) -> Path:
    """Path of the model's ONNX graph (fp32, or int8 when ``int8``), exporting it if needed."""
    base = cache / cache_key(model_name)
    fp32 = base / "fp32" / "model.onnx"
    if not fp32.is_file():
        log.info("exporting %s to ONNX in %s", model_name, fp32.parent)
        with _atomic_dir(fp32.parent) as tmp:
            _export(model, tmp / "model.onnx")
    if not int8:
        return fp32
    quantised = base / "int8" / "model.onnx"
    if not quantised.is_file():
        log.info("quantising %s to int8 in %s", model_name, quantised.parent)
        with _atomic_dir(quantised.parent) as tmp:
            quantise(fp32, tmp / "model.onnx")
    return quantised


def open_session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


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
