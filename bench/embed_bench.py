"""Embedding throughput and quality on CPU: torch vs ONNX Runtime vs int8, window, batching.

    .venv/bin/python bench/embed_bench.py                  # the full table (about 30 min, 2 cores)
    .venv/bin/python bench/embed_bench.py --quick          # 300 chunks, 1 run, main variants

The corpus is ~1,500 real code chunks: functions, methods and classes of the Python standard
library, at most 60 lines each, behind a "path / kind / name" header as the indexer writes
them. For every variant it reports throughput (chunks/s, median of --runs timed runs after a
warm-up) and quality against the baseline (torch fp32, 256 tokens): cosine of same-text
vectors (mean, min), and retrieval on 200 documented functions, query = first docstring
sentence, corpus = the 200 bodies without their docstrings (MRR, recall@1, recall@10).

Every variant runs through codenav_embedder.encoder, the code the service runs.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import statistics
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import numpy as np

from codenav_embedder import _onnx, encoder
from codenav_embedder.settings import default_model

SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__", "config-3.11-x86_64"
             "-linux-gnu"}
MAX_LINES = 60


@dataclass(frozen=True)
class Variant:
    label: str
    backend: str  # a backend of codenav_embedder.encoder, or onnx-int8-pt (bench only)
    max_tokens: int = 256
    batch_size: int = 32
    sort_by_length: bool = True


BASELINE = Variant("a  torch fp32 (baseline)", "torch")
MAIN = [
    BASELINE,
    Variant("b  onnx fp32", "onnx"),
    Variant("c  onnx int8, per-channel (onnx-int8)", "onnx-int8"),
    Variant("c2 onnx int8, per-tensor", "onnx-int8-pt"),
    Variant("d  torch fp32, 128 tokens", "torch", max_tokens=128),
    Variant("d  onnx int8, 128 tokens", "onnx-int8", max_tokens=128),
]
BATCHING = [
    Variant("e  torch b32 unsorted", "torch", sort_by_length=False),
    Variant("e  onnx b1", "onnx", batch_size=1),
    Variant("e  onnx-int8 b1", "onnx-int8", batch_size=1),
    *(Variant(f"e  onnx-int8 b{size} {'sorted' if ordered else 'unsorted'}", "onnx-int8",
              batch_size=size, sort_by_length=ordered)
      for size in (8, 32, 128) for ordered in (True, False) if (size, ordered) != (32, True)),
]


def _walk(root: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS
                             and not d.startswith(("test", "config-")))
        files += [Path(dirpath) / f for f in sorted(filenames)
                  if f.endswith(".py") and not f.startswith("test")]
    return files


def _declarations(tree: ast.AST) -> list[tuple[str, str, ast.AST]]:
    """(kind, qualified name, node) for every function, method and class."""
    found: list[tuple[str, str, ast.AST]] = []

    def visit(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                found.append(("class", prefix + child.name, child))
                visit(child, prefix + child.name + ".", True)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append(("method" if in_class else "function", prefix + child.name, child))

    visit(tree, "", False)
    return found


def _first_sentence(doc: str) -> str:
    para = doc.strip().split("\n\n", 1)[0].replace("\n", " ")
    sentence = para.split(". ", 1)[0].strip().rstrip(".")
    return " ".join(sentence.split())


def build_corpus(root: Path, n_chunks: int, n_queries: int) -> tuple[list[str], list[str],
                                                                     list[str]]:
    """(chunks, queries, bodies): ``n_chunks`` sampled chunks, and ``n_queries`` docstring
    sentences with the matching function bodies (docstring removed)."""
    chunks: list[str] = []
    pairs: list[tuple[str, str]] = []
    for path in _walk(root):
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = source.splitlines()
        rel = path.relative_to(root).as_posix()
        for kind, name, node in _declarations(tree):
            start, end = node.lineno - 1, node.end_lineno or node.lineno
            header = f"{rel} / {kind} / {name}\n"
            chunks.append(header + "\n".join(lines[start:min(end, start + MAX_LINES)]))
            if kind == "class":
                continue
            doc = ast.get_docstring(node)  # type: ignore[arg-type]
            body_nodes = node.body  # type: ignore[attr-defined]
            if not doc or len(body_nodes) < 2:
                continue
            query = _first_sentence(doc)
            if not 4 <= len(query.split()) <= 30:
                continue
            ds = body_nodes[0]
            kept = lines[start:ds.lineno - 1] + lines[(ds.end_lineno or ds.lineno):end]
            if sum(1 for line in kept if line.strip()) < 3:
                continue
            pairs.append((query, header + "\n".join(kept[:MAX_LINES])))
    rng = random.Random(0)
    sample = rng.sample(chunks, min(n_chunks, len(chunks)))
    unique = list({q: (q, b) for q, b in pairs}.values())
    chosen = random.Random(1).sample(unique, min(n_queries, len(unique)))
    return sample, [q for q, _ in chosen], [b for _, b in chosen]


def load_variant(v: Variant, model: str, cache: Path, threads: int) -> encoder.BaseEncoder:
    if v.backend != "onnx-int8-pt":
        return encoder.load(model, backend=v.backend, max_tokens=v.max_tokens, threads=threads,
                            cache_dir=cache)
    base = encoder.load(model, backend="torch", max_tokens=v.max_tokens, threads=threads,
                        cache_dir=cache)
    assert isinstance(base, encoder.Encoder)
    fp32 = _onnx.ensure_exported(base.model, model, cache, int8=False)
    target = fp32.parent.parent / "int8-per-tensor" / "model.onnx"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        _onnx.quantise(fp32, target, per_channel=False)
    return encoder.Encoder(base.model, name=model, backend=v.backend, graph=target,
                           threads=threads).open()


def retrieval(enc: encoder.BaseEncoder, queries: list[str], bodies: list[str]) -> dict[str, float]:
    q = enc.encode(queries)
    d = enc.encode(bodies)
    scores = q @ d.T
    ranks = np.array([1 + int((row > row[i]).sum()) for i, row in enumerate(scores)])
    return {"mrr": float((1.0 / ranks).mean()), "r1": float((ranks <= 1).mean()),
            "r10": float((ranks <= 10).mean())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--model", default="", help="model id or path (default: bundled)")
    parser.add_argument("--chunks", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="0 = one per core")
    parser.add_argument("--quick", action="store_true", help="300 chunks, 1 run, a-d only")
    parser.add_argument("--only", default="", help="run variants whose label contains this")
    parser.add_argument("--cache", type=Path, default=None, help="ONNX cache (default: temp)")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.chunks, args.runs = 300, 1
    variants = MAIN if args.quick else MAIN + BATCHING
    if args.only:
        variants = [BASELINE] + [v for v in variants if args.only in v.label and v != BASELINE]
    model = args.model or default_model()
    threads = args.threads or (os.cpu_count() or 1)
    tmp = tempfile.TemporaryDirectory(prefix="embed-bench-")
    cache = args.cache or Path(tmp.name)

    chunks, queries, bodies = build_corpus(args.stdlib, args.chunks, args.queries)
    print(f"corpus: {len(chunks)} chunks from {args.stdlib}, {len(queries)} retrieval queries; "
          f"model {model}; {threads} threads", flush=True)

    print(f"load average before: {_load()}", flush=True)
    encoders: dict[tuple[str, int], encoder.BaseEncoder] = {}
    for v in variants:
        if (v.backend, v.max_tokens) not in encoders:
            encoders[v.backend, v.max_tokens] = load_variant(v, model, cache, threads)
    base = encoders[BASELINE.backend, BASELINE.max_tokens]
    prepared = base.prepare(chunks)
    t = time.perf_counter()
    base.prepare(chunks)
    print(f"tokens per chunk: mean {statistics.mean(prepared.tokens):.0f} (after the 256 cut); "
          f"cut at 256: {sum(prepared.truncated) / len(chunks):.0%}; cut at 128: "
          f"{sum(n > 128 for n in base._counter.count(chunks)) / len(chunks):.0%}; "
          f"counting all: {time.perf_counter() - t:.2f}s", flush=True)

    # Rounds run every variant in turn, so a busy machine slows all variants alike; each
    # variant's figure is the median of its rounds. An untimed warm-up on a slice comes
    # first (oneDNN and ONNX Runtime prepare kernels per input shape on first sight).
    for v in variants:
        encoders[v.backend, v.max_tokens].encode(chunks[:256], batch_size=v.batch_size,
                                                 sort_by_length=v.sort_by_length)
    times: dict[Variant, list[float]] = {v: [] for v in variants}
    vectors: dict[Variant, np.ndarray] = {}
    for round_ in range(1, args.runs + 1):
        for v in variants:
            enc = encoders[v.backend, v.max_tokens]
            t = time.perf_counter()
            vectors[v] = enc.encode(chunks, batch_size=v.batch_size,
                                    sort_by_length=v.sort_by_length)
            times[v].append(time.perf_counter() - t)
            print(f"  round {round_}: {v.label}: {len(chunks) / times[v][-1]:.1f} chunks/s "
                  f"(load average {_load()})", flush=True)

    rows: list[dict[str, object]] = []
    baseline = vectors[BASELINE]
    quality: dict[tuple[str, int], dict[str, float]] = {}
    for v in variants:
        key = (v.backend, v.max_tokens)
        if key not in quality:
            quality[key] = retrieval(encoders[key], queries, bodies)
        cos = (vectors[v] * baseline).sum(axis=1)
        rows.append({"variant": v.label, "backend": v.backend, "max_tokens": v.max_tokens,
                     "batch": v.batch_size, "sorted": v.sort_by_length,
                     "chunks_per_s": len(chunks) / statistics.median(times[v]),
                     "cos_mean": float(cos.mean()), "cos_min": float(cos.min()),
                     **quality[key]})

    print(f"\nload average after: {_load()}")
    print(_HEADER)
    print("|" + "---|" * 10)
    for row in rows:
        print(_format(row))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    tmp.cleanup()
    return 0


_HEADER = ("| variant | tokens | batch | sorted | chunks/s | cos mean | cos min | MRR | R@1 "
           "| R@10 |")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _format(row: dict[str, object]) -> str:
    return (f"| {row['variant']} | {row['max_tokens']} | {row['batch']} | "
            f"{'yes' if row['sorted'] else 'no'} | {row['chunks_per_s']:.1f} | "
            f"{row['cos_mean']:.4f} | {row['cos_min']:.4f} | {row['mrr']:.3f} | "
            f"{row['r1']:.2f} | {row['r10']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
