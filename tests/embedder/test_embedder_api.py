"""The embedder API in-process (TestClient runs the lifespan) with the real bundled model."""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from transformers import AutoTokenizer

from codenav_embedder.app import BUNDLED_ID, Runtime, create_app
from codenav_embedder.encoder import CHARS_PER_TOKEN_CAP, PROBE_CHARS_PER_TOKEN
from codenav_embedder.settings import EmbedderSettings

LOAD_TIMEOUT_S = 300  # a first run exports and quantises the ONNX graph (~30 s on 2 cores)
DIMENSION = 384
MAX_TOKENS = 64  # the default cut, below MiniLM's own 256
SERVED_ID = f"{BUNDLED_ID}@{MAX_TOKENS}"

CODE = [
    "def add(a, b):\n    return a + b",
    "class Stack:\n    def __init__(self):\n        self.items = []",
    "SELECT name FROM users WHERE id = %s",
]


def _wait_until_ready(client: TestClient, runtime: Runtime) -> None:
    """Poll /readyz, waiting on the runtime's event between polls, within a bound."""
    deadline = time.monotonic() + LOAD_TIMEOUT_S
    while time.monotonic() < deadline:
        if client.get("/readyz").status_code == 200:
            return
        assert runtime.error is None, runtime.error
        runtime.settled.wait(timeout=0.5)
    pytest.fail(f"the model did not load within {LOAD_TIMEOUT_S}s")


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(EmbedderSettings(max_inputs=512, max_batch=256))) as c:
        _wait_until_ready(c, c.app.state.runtime)  # type: ignore[attr-defined]
        yield c


@pytest.fixture(scope="module")
def runtime(client: TestClient) -> Runtime:
    return client.app.state.runtime  # type: ignore[attr-defined,no-any-return]


def _embed(client: TestClient, inputs: object, **extra: object) -> dict:  # type: ignore[type-arg]
    r = client.post("/v1/embeddings", json={"input": inputs, **extra})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _vectors(body: dict) -> np.ndarray:  # type: ignore[type-arg]
    return np.array([d["embedding"] for d in body["data"]], dtype=np.float32)


# --- before the model is loaded -------------------------------------------------------------

def test_health_answers_at_once_and_readiness_is_503_until_the_model_is_loaded() -> None:
    app = create_app(EmbedderSettings())
    plain = TestClient(app)  # no `with`: the lifespan (and so the loading) never starts
    assert plain.get("/healthz").json() == {"status": "ok"}
    for r in (plain.get("/readyz"), plain.get("/v1/models"),
              plain.post("/v1/embeddings", json={"input": ["x"]})):
        assert r.status_code == 503
        assert r.json()["error"] == "unavailable"
        assert "loading" in r.json()["message"]


def test_a_model_that_cannot_load_keeps_readiness_at_503_with_the_reason(tmp_path: Path) -> None:
    with TestClient(create_app(EmbedderSettings(model=str(tmp_path)))) as c:
        runtime: Runtime = c.app.state.runtime  # type: ignore[attr-defined]
        assert c.get("/healthz").status_code == 200
        assert runtime.settled.wait(timeout=120)
        r = c.get("/readyz")
        assert r.status_code == 503
        assert "failed to load" in r.json()["message"]


# --- the contract -----------------------------------------------------------------------------

def test_readyz_is_200_once_the_model_is_loaded(client: TestClient) -> None:
    body = client.get("/readyz").json()
    assert body["status"] == "ready"
    assert body["model"] == SERVED_ID


def test_models_lists_the_served_model_with_its_dimension_and_token_limit(
        client: TestClient, runtime: Runtime) -> None:
    body = client.get("/v1/models").json()
    assert body["object"] == "list"
    [card] = body["data"]
    assert card["id"] == SERVED_ID
    assert card["object"] == "model"
    assert card["dimension"] == DIMENSION
    assert card["max_tokens"] == MAX_TOKENS
    assert card["backend"] == runtime.settings.backend


def test_the_models_own_limit_is_served_under_the_plain_id(client: TestClient) -> None:
    """Cut and uncut vectors of a long text differ: each cut has its own id, and an index
    keeps each id's vectors apart."""
    long_text = Path(json.__file__).read_text()[:4000]
    with TestClient(create_app(EmbedderSettings(max_tokens=0))) as plain:
        _wait_until_ready(plain, plain.app.state.runtime)  # type: ignore[attr-defined]
        [card] = plain.get("/v1/models").json()["data"]
        assert (card["id"], card["max_tokens"]) == (BUNDLED_ID, 256)
        full = _embed(plain, [long_text, CODE[0]], model="all-MiniLM-L6-v2")
        assert full["model"] == BUNDLED_ID
        r = plain.post("/v1/embeddings", json={"input": ["x"], "model": SERVED_ID})
        assert r.status_code == 400 and "not served" in r.json()["message"]
    for name in (SERVED_ID, BUNDLED_ID, "all-MiniLM-L6-v2"):
        assert _embed(client, ["x"], model=name)["model"] == SERVED_ID
    cut = _embed(client, [long_text, CODE[0]])
    assert full["truncated"] == cut["truncated"] == [0]
    uncut, short = _vectors(full), _vectors(cut)
    assert float(uncut[0] @ short[0]) < 0.98  # the long text's tail is not in the cut vector
    assert float(uncut[1] @ short[1]) > 0.98  # a short text's vector is the same


def test_embeddings_come_in_the_openai_shape_unit_length_with_token_usage(
        client: TestClient, runtime: Runtime) -> None:
    body = _embed(client, CODE, model="all-MiniLM-L6-v2")
    assert body["object"] == "list"
    assert body["model"] == SERVED_ID
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    assert all(d["object"] == "embedding" for d in body["data"])
    vectors = _vectors(body)
    assert vectors.shape == (3, DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert runtime.encoder is not None
    expected_tokens = sum(runtime.encoder.prepare(CODE).tokens)
    assert body["usage"] == {"prompt_tokens": expected_tokens, "total_tokens": expected_tokens}
    assert body["truncated"] == []


def test_a_single_string_is_one_embedding(client: TestClient) -> None:
    body = _embed(client, "def main(): pass")
    assert len(body["data"]) == 1
    assert len(body["data"][0]["embedding"]) == DIMENSION


def test_base64_encoding_carries_the_same_float32_vector(client: TestClient) -> None:
    floats = _vectors(_embed(client, [CODE[0]]))[0]
    packed = _embed(client, [CODE[0]], encoding_format="base64")["data"][0]["embedding"]
    decoded = np.frombuffer(base64.b64decode(packed), dtype="<f4")
    np.testing.assert_array_equal(decoded, floats)


def test_an_input_over_the_token_limit_is_cut_and_reported(client: TestClient) -> None:
    long_text = "def handler(request):\n" + "    value = compute(value) + 1\n" * 400
    body = _embed(client, ["short", long_text, "def f(): pass"])
    assert body["truncated"] == [1]
    shorter_but_still_over = "def handler(request):\n" + "    value = compute(value) + 1\n" * 60
    cut = _vectors(_embed(client, [shorter_but_still_over]))[0]
    alone = _vectors(_embed(client, [long_text]))[0]
    np.testing.assert_allclose(alone, cut, atol=1e-6)  # both keep the same first tokens
    tokens = _embed(client, [long_text])["usage"]["prompt_tokens"]
    assert tokens == MAX_TOKENS


def test_a_megabyte_input_is_cut_without_tokenising_all_of_it(client: TestClient,
                                                              runtime: Runtime) -> None:
    megabyte = "x = 1\n" * 200_000
    body = _embed(client, [megabyte])
    assert body["truncated"] == [0]
    assert body["usage"]["prompt_tokens"] == MAX_TOKENS
    # what reaches the tokenizer and the model is a bounded prefix, never the megabyte
    enc = runtime.encoder
    assert enc is not None
    prepared = enc.prepare([megabyte])
    assert megabyte.startswith(prepared.texts[0])
    assert len(prepared.texts[0]) <= enc.max_tokens * CHARS_PER_TOKEN_CAP


def test_a_long_text_is_tokenised_only_as_far_as_the_model_reads(runtime: Runtime) -> None:
    """The model is given a prefix of a long text, cut at a whitespace, when that prefix
    already fills its window: exactly the tokens the whole text would have given it."""
    enc = runtime.encoder
    assert enc is not None
    line = "    total = compute(total, item) + offset  # keep the running total\n"
    texts = [
        "def handler(request):\n" + line * 300,  # the prefix fills the window
        "x" * 5000,  # no whitespace: cut at the character cap
        "value " * 10 + "y" * 3000,  # whitespace early only: the prefix is too short
        "\u4e2d\u6587 " * 900,  # each character is a word
        "short text",
        "    \n" * 1000 + "return x",  # nothing but whitespace within the cap
    ]
    prepared = enc.prepare(texts)
    cap = enc.max_tokens * CHARS_PER_TOKEN_CAP
    reference = AutoTokenizer.from_pretrained(runtime.model_name)  # the model's own, via HF
    ids = reference([t[:cap] for t in texts], truncation=True,
                    max_length=enc.max_tokens)["input_ids"]
    assert reference(prepared.texts, truncation=True,
                     max_length=enc.max_tokens)["input_ids"] == ids
    assert prepared.tokens == [len(i) for i in ids]
    assert prepared.truncated == [True, True, True, True, False, True]
    assert len(prepared.texts[0]) < enc.max_tokens * PROBE_CHARS_PER_TOKEN  # a prefix only
    assert prepared.texts[4] == "short text"


@pytest.mark.parametrize(("payload", "fragment"), [
    ({"input": []}, "empty"),
    ({"input": ["a"] * 513}, "at most 512"),
    ({"input": ["a", 3]}, "input[1]"),
    ({"input": [["a"]]}, "input[0]"),
    ({"input": 42}, "string or a list of strings"),
    ({}, "input"),
    ({"input": ["a"], "model": "text-embedding-3-small"}, "not served"),
    ({"input": ["a"], "dimensions": 1536}, "dimensions"),
    ({"input": ["a"], "encoding_format": "int8"}, "encoding_format"),
])
def test_malformed_requests_get_400_with_a_json_error(client: TestClient, payload: dict,  # type: ignore[type-arg]
                                                      fragment: str) -> None:
    r = client.post("/v1/embeddings", json=payload)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid_request"
    assert fragment in r.json()["message"]


def test_a_body_that_is_not_json_gets_400(client: TestClient) -> None:
    r = client.post("/v1/embeddings", content=b"{not json",
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"] == "invalid_request"


# --- batching and determinism ---------------------------------------------------------------
# The default backend (onnx-int8) quantises activations per forward batch, so a text's vector
# moves slightly (cosine > 0.98; 0.993 on average) with the texts that share its batch; with
# CODENAV_EMBED_BATCH_SIZE=1 (or the fp32 backends) it depends on the text alone.

def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)  # type: ignore[no-any-return]


def test_concurrent_callers_are_batched_and_each_gets_its_own_vectors(
        client: TestClient, runtime: Runtime) -> None:
    assert runtime.encoder is not None and runtime.batcher is not None
    callers = 12
    texts = [[f"def handler_{i}_{j}(request):\n    return respond(request, code={i * 10 + j})"
              for j in range(2)] for i in range(callers)]
    # Keep the model thread busy so that every caller queues behind this request.
    busy = [f"class Busy{k}:\n" + "    def run(self):\n        return work()\n" * 40
            for k in range(64)]
    blocker = runtime.batcher.submit(busy)
    blocker_slices = -(-len(busy) // runtime.batcher.slice_size)  # each counts as a request
    before = dataclasses.replace(runtime.batcher.stats)
    start = threading.Barrier(callers)
    results: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        start.wait(timeout=30)
        results[i] = _vectors(_embed(client, texts[i]))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=LOAD_TIMEOUT_S)
    blocker.result(timeout=LOAD_TIMEOUT_S)
    assert sorted(results) == list(range(callers))

    after = runtime.batcher.stats
    assert after.requests - before.requests == callers + blocker_slices
    assert after.batches - before.batches < callers + blocker_slices, \
        "no two requests shared an encode"
    assert after.largest_batch >= 4  # at least two callers' texts in one encode call

    flat_texts = [t for group in texts for t in group]
    direct = np.stack([runtime.encoder.encode([t])[0] for t in flat_texts])
    got = np.concatenate([results[i] for i in range(callers)])
    assert _cosines(got, direct).min() > 0.98
    # each caller's vectors are nearest to their own texts, not a neighbour's
    assert (np.argmax(got @ direct.T, axis=1) == np.arange(len(flat_texts))).all()


TEXT = "def parse_header(line):\n    key, _, value = line.partition(':')"
OTHERS = [*CODE, "x" * 500, "class Config:\n    debug = False\n" * 10]


def test_the_same_text_gets_the_same_vector_alone_or_repeated(client: TestClient) -> None:
    alone = _vectors(_embed(client, [TEXT]))[0]
    np.testing.assert_array_equal(_vectors(_embed(client, TEXT))[0], alone)
    twice = _vectors(_embed(client, [TEXT, TEXT]))
    np.testing.assert_array_equal(twice[0], twice[1])
    among_others = _vectors(_embed(client, [*OTHERS, TEXT]))[-1]
    assert float(among_others @ alone) > 0.98


def test_with_batch_size_one_the_vector_never_depends_on_the_other_inputs() -> None:
    settings = EmbedderSettings(batch_size=1)
    with TestClient(create_app(settings)) as c:
        _wait_until_ready(c, c.app.state.runtime)  # type: ignore[attr-defined]
        alone = _vectors(_embed(c, [TEXT]))[0]
        among_others = _vectors(_embed(c, [*OTHERS, TEXT, *OTHERS]))
        np.testing.assert_array_equal(among_others[len(OTHERS)], alone)


def test_an_idle_bulk_runtime_is_closed_and_the_next_bulk_request_gets_the_same_vectors(
        ) -> None:
    """After ``bulk_release_s`` without bulk work the bulk session is dropped (its memory
    goes back); the next bulk request opens it again and gets the same vectors. Queries
    keep their own session throughout."""
    settings = EmbedderSettings(bulk_release_s=0.3)
    texts = [*OTHERS, TEXT, *CODE]  # more than a query's 4 texts: the bulk runtime
    with TestClient(create_app(settings)) as c:
        runtime: Runtime = c.app.state.runtime  # type: ignore[attr-defined]
        _wait_until_ready(c, runtime)
        assert runtime.batcher is not None and runtime.encoder is not None
        first = _vectors(_embed(c, texts))
        deadline = time.monotonic() + 30
        while runtime.batcher.stats.releases < 1:
            assert time.monotonic() < deadline, "the bulk runtime was not released"
            time.sleep(0.05)
        assert runtime.encoder._session is None
        query = _vectors(_embed(c, [TEXT]))[0]  # the query lane: nothing reopened for it
        assert runtime.encoder._session is None
        np.testing.assert_array_equal(_vectors(_embed(c, texts)), first)
        assert float(query @ first[len(OTHERS)]) > 0.98
