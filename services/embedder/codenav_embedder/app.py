"""The FastAPI application: /v1/embeddings, /v1/models, /healthz, /readyz.

The model loads in a background thread at start-up, so /healthz answers at once and /readyz
(and every model route) answers 503 until the model is ready. Errors are JSON bodies
``{"error", "message", "hint"?}``, mapped from ``codenav.errors`` in one place.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from codenav.errors import CodenavError, InvalidRequest, Unavailable
from codenav_embedder import __version__, encoder
from codenav_embedder.batcher import Batcher
from codenav_embedder.models import EmbeddingList, EmbeddingRequest, ErrorBody, ModelList
from codenav_embedder.settings import EmbedderSettings, default_model

log = logging.getLogger("codenav.embedder")

BUNDLED_ID = "sentence-transformers/all-MiniLM-L6-v2"
_ERRORS: dict[int | str, dict[str, Any]] = {400: {"model": ErrorBody}, 503: {"model": ErrorBody}}


class Runtime:
    """What the routes need: the loaded encoder and its batcher, or why they are missing."""

    def __init__(self, settings: EmbedderSettings) -> None:
        self.settings = settings
        self.model_name = settings.model_name()
        self.base_id = BUNDLED_ID if self.model_name == default_model() else self.model_name
        self.model_id = self.base_id
        """The name vectors are stored under: ``base_id``, with ``@<tokens>`` when inputs are
        cut below the model's own limit (such vectors differ, and must not mix in an index
        with the uncut ones)."""
        self.encoder: encoder.BaseEncoder | None = None
        self.batcher: Batcher | None = None
        self.error: str | None = None
        self.ready = threading.Event()
        """set once the model serves"""
        self.settled = threading.Event()
        """set once loading ended, ready or failed"""
        self._closed = threading.Event()

    def load(self) -> None:
        try:
            self._load()
        finally:
            self.settled.set()

    def _load(self) -> None:
        """Load the model and give queries a runtime of their own (the query lane); the
        bulk runtime is opened by the bulk thread after it lowered its priority (its
        threads inherit it), so a query, an index job or a search never waits for bulk
        embedding."""
        s = self.settings
        try:
            enc = encoder.load(self.model_name, backend=s.backend, max_tokens=s.max_tokens,
                               threads=s.threads, cache_dir=s.cache_path(), open_session=False)
            queries = enc.for_queries(s.query_threads) if s.query_threads else enc.open()
            queries.encode(["warm up"], batch_size=1)
        except Exception as exc:  # reported by /readyz; the process stays up
            log.exception("loading %s (%s) failed", self.model_name, s.backend)
            self.error = f"model failed to load: {type(exc).__name__}: {exc}"
            return

        def query_encode(texts: list[str]) -> np.ndarray:
            return queries.encode(texts, batch_size=s.batch_size)

        batcher = Batcher(lambda texts: enc.encode(texts, batch_size=s.batch_size),
                          max_batch=s.max_batch, slice_size=2 * s.batch_size,
                          query_encode=query_encode if s.query_threads else None,
                          bulk_nice=s.bulk_nice,
                          bulk_setup=lambda: enc.open().encode(["warm up"], batch_size=1),
                          bulk_release=enc.close,
                          release_after_s=s.bulk_release_s if s.query_threads else 0.0)
        batcher.start()
        if enc.max_tokens < enc.own_tokens:
            self.model_id = f"{self.base_id}@{enc.max_tokens}"
        self.encoder, self.batcher = enc, batcher
        if self._closed.is_set():
            batcher.stop()
            return
        self.ready.set()
        log.info("ready: %s (%s, %d dimensions, %d tokens)", self.model_id, enc.backend,
                 enc.dimension, enc.max_tokens)

    def close(self) -> None:
        self._closed.set()
        if self.batcher is not None:
            self.batcher.stop()

    def require(self) -> tuple[encoder.BaseEncoder, Batcher]:
        if self.error:
            raise Unavailable(self.error, hint="see the embedder's log; fix the model setting")
        if not self.ready.is_set() or self.encoder is None or self.batcher is None:
            raise Unavailable("the model is loading", hint="retry when /readyz answers 200")
        return self.encoder, self.batcher

    def accepts(self, name: str) -> bool:
        names = {self.model_id, self.base_id, self.model_name,
                 *(n.rstrip("/").rsplit("/", 1)[-1] for n in (self.model_id, self.base_id))}
        return name.lower() in {n.lower() for n in names}


def create_app(settings: EmbedderSettings | None = None) -> FastAPI:
    runtime = Runtime(settings or EmbedderSettings.load())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(target=runtime.load, name="codenav-embed-load", daemon=True).start()
        yield
        runtime.close()

    app = FastAPI(title="codenav embedder", version=__version__, lifespan=lifespan,
                  description="OpenAI-compatible embeddings for codenav, on CPU.")
    app.state.runtime = runtime

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", responses=_ERRORS)
    def readyz() -> dict[str, str]:
        enc, _ = runtime.require()
        return {"status": "ready", "model": runtime.model_id, "backend": enc.backend}

    @app.get("/v1/models", response_model=ModelList, responses=_ERRORS)
    def models() -> dict[str, Any]:
        enc, _ = runtime.require()
        card = {"id": runtime.model_id, "object": "model", "owned_by": "codenav",
                "dimension": enc.dimension, "max_tokens": enc.max_tokens,
                "backend": enc.backend, "path": runtime.model_name}
        return {"object": "list", "data": [card]}

    @app.post("/v1/embeddings", response_model=EmbeddingList, responses=_ERRORS)
    async def embeddings(body: EmbeddingRequest) -> JSONResponse:
        texts = _texts(body.input, runtime.settings.max_inputs)
        enc, batcher = runtime.require()
        if body.model and not runtime.accepts(body.model):
            raise InvalidRequest(f"model {body.model!r} is not served here",
                                 hint=f"this embedder serves {runtime.model_id!r}")
        if body.dimensions is not None and body.dimensions != enc.dimension:
            raise InvalidRequest(f"dimensions must be {enc.dimension} for {runtime.model_id}")
        prepared = await run_in_threadpool(enc.prepare, texts)
        vectors = await asyncio.wrap_future(batcher.submit(prepared.texts))
        tokens = sum(prepared.tokens)
        return JSONResponse({
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": value}
                     for i, value in enumerate(_encode_vectors(vectors, body.encoding_format))],
            "model": runtime.model_id,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            "truncated": [i for i, cut in enumerate(prepared.truncated) if cut],
        })

    @app.exception_handler(CodenavError)
    async def codenav_error(_request: Request, exc: CodenavError) -> JSONResponse:
        return JSONResponse(exc.to_dict(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = str(first.get("msg", "invalid request"))
        return JSONResponse({"error": "invalid_request",
                             "message": f"{where}: {message}" if where else message},
                            status_code=400)

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return JSONResponse({"error": "internal", "message": "internal error; see the "
                             "embedder's log"}, status_code=500)

    return app


def _texts(value: Any, max_inputs: int) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise InvalidRequest("input must be a string or a list of strings")
    if not value:
        raise InvalidRequest("input is an empty list", hint="send at least one string")
    if len(value) > max_inputs:
        raise InvalidRequest(f"input has {len(value)} items; at most {max_inputs} per request",
                             hint="split the request")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise InvalidRequest(f"input[{i}] is {type(item).__name__}, not a string",
                                 hint="token-id inputs are not supported; send text")
    return value


def _encode_vectors(vectors: np.ndarray, encoding_format: str | None) -> list[Any]:
    if encoding_format == "base64":
        return [base64.b64encode(row.astype("<f4").tobytes()).decode("ascii") for row in vectors]
    return vectors.tolist()
