"""An exported ONNX graph served without PyTorch: the model's own tokenizer (``tokenizers``),
ONNX Runtime for the transformer, and its pooling in numpy.

The export (``_onnx``, run in a child process: it needs torch and sentence-transformers)
writes ``serve.json`` and ``tokenizer.json`` beside the graphs. It describes the model only
when its pipeline is a transformer, a mean, CLS or max pooling and an optional
normalisation, with no prompt, and only after checking on sample texts that this tokenizer
gives exactly sentence-transformers' input ids and masks and this pooling its vectors.
Otherwise ``serve.json`` says why, and the embedder hosts the model in sentence-transformers
as before.

On the bundled MiniLM the embedder process then never imports torch: its resident memory
drops from about 750 MB to about 350 MB at the peak of a Kafka index (``bench/README.md``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "serve.json"
TOKENIZER = "tokenizer.json"
MANIFEST_VERSION = 1
POOLINGS = ("mean", "cls", "max")
WORD_SPLITTERS = ("BertPreTokenizer", "Whitespace", "WhitespaceSplit")
"""Pre-tokenizers that end every word at whitespace, whatever follows it: a text cut at a
whitespace is tokenised into the first of the whole text's tokens."""
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


def graph_path(base: Path, int8: bool) -> Path:
    return base / ("int8" if int8 else "fp32") / "model.onnx"


@dataclass(frozen=True)
class Manifest:
    """What the model does around its transformer, as the export found it."""

    dimension: int
    own_tokens: int
    """The model's own token limit (``max_seq_length``)."""
    pooling: str
    normalize: bool
    inputs: list[str]
    """The graph's inputs, in order: from ``input_ids``, ``attention_mask``, ``token_type_ids``."""
    splits_at_whitespace: bool
    """The tokenizer ends every word at whitespace (see ``encoder.Encoder.prepare``)."""
    version: int = MANIFEST_VERSION

    def write(self, base: Path, tokenizer_json: str) -> None:
        _write_atomic(base / TOKENIZER, tokenizer_json)
        _write_atomic(base / MANIFEST, json.dumps({"servable": True, **asdict(self)}, indent=1))


def write_unservable(base: Path, reason: str) -> None:
    """Record that the model needs sentence-transformers to run, so no start exports again."""
    _write_atomic(base / MANIFEST, json.dumps({"servable": False, "reason": reason,
                                               "version": MANIFEST_VERSION}, indent=1))


def described(base: Path) -> bool:
    """Whether the export has judged this model (servable or not) at this manifest version."""
    try:
        data = json.loads((base / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("version") == MANIFEST_VERSION


def read(base: Path) -> Manifest | None:
    """The manifest of a model servable without torch, or None (not described, or not servable)."""
    try:
        data = json.loads((base / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not data.pop("servable", False) \
            or data.get("version") != MANIFEST_VERSION or not (base / TOKENIZER).is_file():
        return None
    return Manifest(**data)


def tokenizer(base: Path, max_tokens: int) -> Any:
    """The model's tokenizer, cutting at ``max_tokens`` and padding to the longest text of a
    batch, as sentence-transformers calls it."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(base / TOKENIZER))
    padding = tok.padding or {}
    tok.enable_truncation(max_length=max_tokens)
    tok.enable_padding(pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]"),
                       pad_type_id=padding.get("pad_type_id", 0),
                       direction=padding.get("direction", "right"))
    return tok


def counting_tokenizer(base: Path) -> Any:
    """The same tokenizer without truncation or padding: what a whole text costs."""
    from tokenizers import Tokenizer

    return uncut(Tokenizer.from_file(str(base / TOKENIZER)))


def uncut(tok: Any) -> Any:
    """``tok`` with truncation and padding turned off (it is changed and returned)."""
    tok.no_truncation()
    tok.no_padding()
    return tok


def features(tok: Any, texts: list[str]) -> dict[str, np.ndarray]:
    """Input arrays for a batch of texts (stripped, as sentence-transformers strips them)."""
    encodings = tok.encode_batch([text.strip() for text in texts])
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


def pool(tokens: np.ndarray, mask: np.ndarray, mode: str, normalize: bool) -> np.ndarray:
    """Sentence vectors from token vectors, as sentence-transformers' Pooling computes them."""
    tokens = tokens.astype(np.float32, copy=False)
    if mode == "cls":
        out = tokens[:, 0]
    elif mode == "max":
        masked = np.where(mask[:, :, None] > 0, tokens, np.float32(-1e9))
        out = masked.max(axis=1)
    else:
        weights = mask[:, :, None].astype(np.float32)
        out = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), np.float32(1e-9))
    if normalize:
        out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
    return out.astype(np.float32, copy=False)


def open_session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # No memory patterns: they plan one arena block per input shape, and sorted batches come
    # in every length up to the cut. Kafka windows, 2 threads, batches of 32: the bulk
    # session held 171 MB more after a pass with them and 87 MB without, within 1.5% of
    # their speed (bench/README.md, issue 18).
    options.enable_mem_pattern = False
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one writer per process
    tmp.write_text(text)
    tmp.chmod(0o644)
    tmp.replace(path)
