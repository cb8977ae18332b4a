"""A sentence-transformers model and the runtime that runs its transformer.

Every backend shares the model's own preprocessing (tokenizer, truncation to ``max_tokens``)
and its own pooling; only the transformer step differs:

    torch       sentence-transformers on PyTorch, fp32
    onnx        the transformer exported to ONNX, run by ONNX Runtime, fp32
    onnx-int8   the same graph with int8 dynamic quantisation of its weights

For the ONNX backends the graph is exported in a child process (``_onnx``), which also
checks whether the model can run without torch (``onnx_serve``); when it can, this process
never imports torch or sentence-transformers (``OnnxEncoder``), else sentence-transformers
hosts the model here and the graph replaces its transformer (``Encoder``).

Vectors always come back L2-normalised, in float32, in the order of the inputs.
"""

from __future__ import annotations

import copy
import gc
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from codenav.proc import trim_heap
from codenav_embedder import onnx_serve

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("codenav.embedder")

BACKENDS = ("torch", "onnx", "onnx-int8")
CHARS_PER_TOKEN_CAP = 32
"""Texts are cut to ``max_tokens * CHARS_PER_TOKEN_CAP`` characters before tokenising, so a
megabyte of input costs no more than a full window; a cut text is reported as truncated."""
PROBE_CHARS_PER_TOKEN = 8
"""A longer text is first tokenised up to its last whitespace within ``max_tokens *
PROBE_CHARS_PER_TOKEN`` characters: when that prefix already fills the window, it is all the
model is given (the same tokens, for a fraction of the tokenising)."""


@dataclass(frozen=True)
class Prepared:
    """Inputs ready for the model: cut texts, tokens embedded per text, which were cut."""

    texts: list[str]
    tokens: list[int]
    truncated: list[bool]


class BaseEncoder:
    """What every runtime shares: cutting and counting texts, batching by length,
    normalising. ``encode`` is not thread-safe: a single thread calls it; a second thread
    uses its own ``for_queries`` copy (the tokenizer is shared, the runtime session is not)."""

    name: str
    backend: str
    dimension: int
    max_tokens: int
    own_tokens: int
    """The model's own limit (``max_tokens`` may cut below it)."""
    threads: int
    _session: Any
    _counter: _CountingTokenizer

    def __init__(self, *, name: str, backend: str, graph: Path | None, session: Any,
                 threads: int) -> None:
        self.name = name
        self.backend = backend
        self._graph = graph
        self._session = session
        self.threads = threads
        self._tokenize = threading.Lock()  # the fast tokenizer is not safe to share

    def open(self) -> BaseEncoder:
        """Open the runtime session (``load(..., open_session=False)`` defers it, so that the
        thread that opens it, whose priority its threads inherit, can be chosen)."""
        return self

    def close(self) -> None:
        """Drop the runtime session (``open`` makes another: 0.06 s for the default model)
        and hand the memory it freed back to the system. After bulk work a MiniLM session
        holds about 120 MB, mostly its arena."""
        if self._graph is None:  # hosted by sentence-transformers: no session of ours
            return
        self._session = None
        gc.collect()
        trim_heap()

    def for_queries(self, threads: int = 1) -> BaseEncoder:
        """A copy for the query lane: same model and tokenizer, its own ONNX session with
        ``threads`` threads, so a query never waits for a bulk batch to finish."""
        clone = copy.copy(self)
        clone.threads = threads
        clone._session = None
        return clone.open()

    def prepare(self, texts: Sequence[str]) -> Prepared:
        """Cut over-long texts and count tokens (special tokens included, as the model sees
        them). Safe to call from any thread.

        A long text is first cut at a whitespace within ``PROBE_CHARS_PER_TOKEN`` characters
        per token. With a tokenizer that ends words at whitespace, that prefix's tokens begin
        the whole text's tokens; when it holds more than ``max_tokens`` of them, the prefix
        is what the model gets: exactly the tokens it would have read, for a few hundred
        characters of tokenising instead of up to ``max_tokens * CHARS_PER_TOKEN_CAP``."""
        cap = self.max_tokens * CHARS_PER_TOKEN_CAP
        cut = [text[:cap] for text in texts]
        counts: list[int | None] = [None] * len(cut)
        if self._counter.splits_at_whitespace:
            probe = self.max_tokens * PROBE_CHARS_PER_TOKEN
            heads = {i: head for i, text in enumerate(cut)
                     if len(text) > probe and (head := _head(text, probe))}
            for (i, head), n in zip(heads.items(), self._counter.count(list(heads.values())),
                                    strict=True):
                if n > self.max_tokens:
                    cut[i], counts[i] = head, n
        rest = [i for i, n in enumerate(counts) if n is None]
        for i, n in zip(rest, self._counter.count([cut[i] for i in rest]), strict=True):
            counts[i] = n
        full = [n or 0 for n in counts]
        truncated = [len(text) > cap or n > self.max_tokens
                     for text, n in zip(texts, full, strict=True)]
        return Prepared(cut, [min(n, self.max_tokens) for n in full], truncated)

    def encode(self, texts: Sequence[str], *, batch_size: int = 32,
               sort_by_length: bool = True) -> np.ndarray:
        """Embed ``texts`` in micro-batches of ``batch_size``; with ``sort_by_length`` texts of
        similar length share a batch, so little compute goes to padding."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = list(range(len(texts)))
        if sort_by_length:
            order.sort(key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            out[idx] = self._encode_batch([texts[i] for i in idx])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


class Encoder(BaseEncoder):
    """sentence-transformers hosts the model in this process (torch is loaded); with a
    graph, ONNX Runtime replaces its transformer step."""

    def __init__(self, model: SentenceTransformer, *, name: str, backend: str,
                 session: Any = None, graph: Path | None = None, threads: int = 1,
                 own_tokens: int = 0) -> None:
        super().__init__(name=name, backend=backend, graph=graph, session=session,
                         threads=threads)
        self.model = model
        self._tail = list(model)[1:]
        dimension = model.get_embedding_dimension()
        if not dimension:
            raise ValueError(f"model {name!r} does not declare its embedding dimension")
        self.dimension = int(dimension)
        if not model.max_seq_length:
            raise ValueError(f"model {name!r} does not declare its max sequence length")
        self.max_tokens = int(model.max_seq_length)
        self.own_tokens = max(own_tokens, self.max_tokens)
        self._counter = _CountingTokenizer.of_model(model)

    def open(self) -> Encoder:
        if self._graph is not None and self._session is None:
            self._session = onnx_serve.open_session(self._graph, self.threads)
        return self

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        import torch

        from codenav_embedder import _onnx

        with torch.inference_mode():
            with self._tokenize:
                features = self.model.preprocess(texts)
            if self._graph is None:
                features = self.model.forward(features)
            else:
                features["token_embeddings"] = _onnx.run(self._session, features)
                for module in self._tail:
                    features = module(features)
            return features["sentence_embedding"].float().numpy()


class OnnxEncoder(BaseEncoder):
    """The exported graph without torch: the model's tokenizer, ONNX Runtime, and its
    pooling in numpy (``onnx_serve``)."""

    _graph: Path  # always exported: this runtime has nothing else to run

    def __init__(self, base: Path, manifest: onnx_serve.Manifest, *, graph: Path, name: str,
                 backend: str, max_tokens: int, threads: int) -> None:
        super().__init__(name=name, backend=backend, graph=graph, session=None,
                         threads=threads)
        self.manifest = manifest
        self.dimension = manifest.dimension
        self.own_tokens = manifest.own_tokens
        self.max_tokens = min(max_tokens, manifest.own_tokens) if max_tokens \
            else manifest.own_tokens
        self._tokenizer = onnx_serve.tokenizer(base, self.max_tokens)
        self._counter = _CountingTokenizer(onnx_serve.counting_tokenizer(base),
                                           manifest.splits_at_whitespace)

    def open(self) -> OnnxEncoder:
        if self._session is None:
            self._session = onnx_serve.open_session(self._graph, self.threads)
        return self

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        with self._tokenize:
            features = onnx_serve.features(self._tokenizer, texts)
        feeds = {name: features[name] for name in self.manifest.inputs}
        tokens = self._session.run(None, feeds)[0]
        return onnx_serve.pool(tokens, features["attention_mask"], self.manifest.pooling,
                               self.manifest.normalize)


def _head(text: str, chars: int) -> str:
    """``text`` up to its last whitespace within ``chars`` characters ('' if it has none)."""
    end = max(text.rfind(space, 0, chars) for space in " \n\t")
    return text[:end].rstrip() if end > 0 else ""


class _CountingTokenizer:
    """The model's tokenizer without truncation or padding, to count what a text costs."""

    def __init__(self, fast: Any, splits_at_whitespace: bool, hf: Any = None) -> None:
        self._fast = fast
        self._hf = hf
        self.splits_at_whitespace = splits_at_whitespace

    @classmethod
    def of_model(cls, model: SentenceTransformer) -> _CountingTokenizer:
        backend = getattr(model.tokenizer, "backend_tokenizer", None)
        if backend is None:
            return cls(None, False, hf=model.tokenizer)
        from tokenizers import Tokenizer

        fast = onnx_serve.uncut(Tokenizer.from_str(backend.to_str()))
        return cls(fast, type(backend.pre_tokenizer).__name__ in onnx_serve.WORD_SPLITTERS)

    def count(self, texts: list[str]) -> list[int]:
        stripped = [text.strip() for text in texts]
        if self._fast is not None:
            return [len(enc.ids) for enc in self._fast.encode_batch(stripped)]
        return [len(ids) for ids in self._hf(stripped, truncation=False)["input_ids"]]


def load(model_name: str, *, backend: str = "torch", max_tokens: int = 0, threads: int = 0,
         cache_dir: Path | None = None, open_session: bool = True) -> BaseEncoder:
    """Load ``model_name`` (a sentence-transformers id or a local directory) for ``backend``.

    ``max_tokens`` 0 keeps the model's own limit (it is capped at that limit). ``threads`` 0
    means one per core. ONNX graphs are exported once into ``cache_dir`` (by a child
    process) and reused; with ``open_session=False`` the caller opens the session
    (``BaseEncoder.open``)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    threads = threads or (os.cpu_count() or 1)
    if backend != "torch":
        int8 = backend == "onnx-int8"
        cache = cache_dir or default_cache_dir()
        base = cache / onnx_serve.cache_key(model_name)
        graph = onnx_serve.graph_path(base, int8)
        if not graph.is_file() or not onnx_serve.described(base):
            try:
                _export_in_child(model_name, cache, int8)
            except RuntimeError:
                if not graph.is_file():
                    raise
                # a graph exported before serve.json existed, in a cache this process cannot
                # write (an older image): sentence-transformers hosts it, as it did then
                log.warning("%s could not be described for serving without torch; hosting "
                            "it in sentence-transformers", model_name, exc_info=True)
        manifest = onnx_serve.read(base)
        if manifest is not None:
            lean = OnnxEncoder(base, manifest, graph=graph, name=model_name, backend=backend,
                               max_tokens=max_tokens, threads=threads)
            return lean.open() if open_session else lean
    return _load_hosted(model_name, backend=backend, max_tokens=max_tokens, threads=threads,
                        cache_dir=cache_dir, open_session=open_session)


def _export_in_child(model_name: str, cache: Path, int8: bool) -> None:
    """Export (and quantise) the graph in a child process: torch is loaded there, not here.
    ``-P`` keeps a ``codenav_embedder`` folder in the working directory from shadowing us."""
    log.info("exporting %s to ONNX in %s (a child process)", model_name, cache)
    argv = [sys.executable, "-P", "-m", "codenav_embedder._onnx", model_name, str(cache)]
    done = subprocess.run(argv + (["--int8"] if int8 else []), capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"exporting {model_name} to ONNX failed: " + " | ".join(tail))


def _load_hosted(model_name: str, *, backend: str, max_tokens: int, threads: int,
                 cache_dir: Path | None, open_session: bool) -> Encoder:
    """sentence-transformers in this process: the torch backend, or an ONNX graph for a
    model ``onnx_serve`` cannot describe."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    from codenav_embedder import _onnx

    hf_logging.disable_progress_bar()  # a bar per model load is noise in a service log
    torch.set_num_threads(threads)
    model = SentenceTransformer(model_name, device="cpu")
    model.eval()
    own_tokens = int(model.max_seq_length or 0)
    if max_tokens:
        model.max_seq_length = min(max_tokens, int(model.max_seq_length or max_tokens))
    graph = None
    if backend != "torch":
        cache = cache_dir or default_cache_dir()
        graph = _onnx.ensure_exported(model, model_name, cache, int8=backend == "onnx-int8")
    encoder = Encoder(model, name=model_name, backend=backend, graph=graph, threads=threads,
                      own_tokens=own_tokens)
    return encoder.open() if open_session else encoder


def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "codenav-embedder"
