"""A LightGBM model scored through LightGBM's own C library, without its Python package.

``import lightgbm`` imports SciPy, and scikit-learn where it is installed (the embedder's
``sentence-transformers`` installs it beside the local stack): 82 MB more in the API
process for a ranker that scores 150 rows a query. The C library alone (``lib_lightgbm``,
shipped inside the ``lightgbm`` wheel) loads the same model text and predicts the same
scores: measured, 13 ms and 3.6 MB to load the shipped model, against 693 ms and 82 MB
through the package (bench/README.md, 2026-12-06). Only the calls the
ranker needs are bound: load a model from its text, predict for a row-major matrix of
float64, free.
"""

from __future__ import annotations

import ctypes
import importlib.util
import threading
from pathlib import Path
from typing import Any

import numpy as np

_DTYPE_FLOAT64 = 1
_PREDICT_NORMAL = 0
_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def library_path() -> Path:
    """``lib_lightgbm.so`` of the installed ``lightgbm`` wheel, found without importing the
    package (``find_spec`` of a top-level package does not run it)."""
    spec = importlib.util.find_spec("lightgbm")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("lightgbm is not installed (codenav-core[server] installs it)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "lib"
    for name in ("lib_lightgbm.so", "lib_lightgbm.dylib", "lib_lightgbm.dll"):
        if (folder / name).is_file():
            return folder / name
    raise ImportError(f"no LightGBM library in {folder}")


def _library() -> ctypes.CDLL:
    global _lib
    with _lock:
        if _lib is None:
            lib = ctypes.CDLL(str(library_path()))
            lib.LGBM_GetLastError.restype = ctypes.c_char_p
            lib.LGBM_BoosterLoadModelFromString.argtypes = [
                ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_void_p)]
            lib.LGBM_BoosterPredictForMat.argtypes = [
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int32, ctypes.c_int32,
                ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
            lib.LGBM_BoosterFree.argtypes = [ctypes.c_void_p]
            _lib = lib
        return _lib


def _check(lib: ctypes.CDLL, status: int) -> None:
    if status != 0:
        message = lib.LGBM_GetLastError()
        raise ValueError(message.decode(errors="replace") if message else "LightGBM error")


class NativeBooster:
    """A LightGBM model from its text (``Booster.model_to_string()``): ``feature_name()``
    and ``predict()`` as ``lightgbm.Booster`` has them, for dense float64 rows."""

    def __init__(self, text: str) -> None:
        self._names = _feature_names(text)
        data = text.encode()
        _check_complete(data)
        lib = _library()
        handle = ctypes.c_void_p()
        iterations = ctypes.c_int()
        _check(lib, lib.LGBM_BoosterLoadModelFromString(
            data, ctypes.byref(iterations), ctypes.byref(handle)))
        self._lib, self._handle = lib, handle

    def feature_name(self) -> list[str]:
        return list(self._names)

    def predict(self, data: Any, num_threads: int = 1) -> np.ndarray:
        matrix = np.ascontiguousarray(data, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[1] != len(self._names):
            raise ValueError(f"expected rows of {len(self._names)} features, got "
                             f"{matrix.shape}")
        out = np.zeros(matrix.shape[0], dtype=np.float64)
        written = ctypes.c_int64()
        _check(self._lib, self._lib.LGBM_BoosterPredictForMat(
            self._handle, matrix.ctypes.data, _DTYPE_FLOAT64, matrix.shape[0], matrix.shape[1],
            1, _PREDICT_NORMAL, 0, -1, f"num_threads={num_threads}".encode(),
            ctypes.byref(written), out.ctypes.data))
        return out[:written.value]

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None and handle.value:
            self._lib.LGBM_BoosterFree(handle)


def _check_complete(data: bytes) -> None:
    """LightGBM reads each tree by the byte size its header lists (``tree_sizes``) and
    crashes the process on a text cut short (a half-written file: a segmentation fault, not
    an error). The trees must be there, whole, as the header says."""
    sizes = next((line.split(b"=", 1)[1].split() for line in data.splitlines()
                  if line.startswith(b"tree_sizes=")), None)
    start, end = data.find(b"Tree=0\n"), data.find(b"end of trees")
    if sizes is None or start < 0 or end < 0 or \
            sum(int(n) for n in sizes if n.isdigit()) != end - start:
        raise ValueError("LightGBM model incomplete or damaged: its trees do not add up to "
                         "the sizes its header lists")


def _feature_names(text: str) -> list[str]:
    return _header_value(text, "feature_names").split()


def averaged(texts: list[str]) -> str:
    """One model text that scores the mean of the models in ``texts`` (a bag: the same
    data, different seeds): every model's trees in turn, each leaf's value divided by their
    number. LightGBM sums its trees, so the sum is the mean of the models' scores. The
    header and what follows the trees (importances, parameters: seed included) are the first
    model's, with a ``tree_sizes`` for the new trees; all must have the same features."""
    if not texts:
        raise ValueError("no models to average")
    names = [_feature_names(text) for text in texts]
    if any(n != names[0] for n in names):
        raise ValueError("the models to average have different features")
    scale = 1.0 / len(texts)
    blocks: list[str] = []
    for text in texts:
        data = text.encode()
        _check_complete(data)  # the sizes below add up to the trees, exactly
        at = data.find(b"Tree=0\n")
        for size in (int(n) for n in _header_value(text, "tree_sizes").split()):
            blocks.append(data[at:at + size].decode())  # one tree, as LightGBM reads it
            at += size
    out = []
    for i, tree in enumerate(blocks):
        lines = tree.split("\n")
        lines[0] = f"Tree={i}"
        for j, line in enumerate(lines):
            key, _, values = line.partition("=")
            if key in ("leaf_value", "internal_value"):
                lines[j] = key + "=" + " ".join(repr(float(v) * scale) for v in values.split())
        out.append("\n".join(lines))
    first = texts[0]
    start, end = first.index("Tree=0\n"), first.index("end of trees")
    header = "\n".join(
        "tree_sizes=" + " ".join(str(len(t.encode())) for t in out)
        if line.startswith("tree_sizes=") else line for line in first[:start].split("\n"))
    return header + "".join(out) + first[end:]


def _header_value(text: str, key: str) -> str:
    for line in text.splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1]
        if line.startswith("Tree="):
            break
    raise ValueError(f"not a LightGBM model: no {key} line")
