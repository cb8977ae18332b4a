"""Client for an OpenAI-compatible embeddings endpoint: codenav's own embedder service,
or TEI, vLLM or a hosted API (``CODENAV_EMBED_URL``, optional ``CODENAV_EMBED_KEY``).

Vectors come back L2-normalised (cosine distance is what the index uses). The model's name
and dimension come from the endpoint, never from a guess.
"""

from __future__ import annotations

import base64
import math
import sys
from array import array
from dataclasses import dataclass

import httpx

from codenav.config import Settings
from codenav.errors import Busy, CodenavError, ConfigError, Unavailable


@dataclass(frozen=True)
class ModelInfo:
    name: str
    dim: int


def _decode(embedding: object) -> list[float]:
    """A vector as the endpoint sent it: base64 of little-endian float32 (asked for: a
    tenth of the JSON to parse), or a list of floats (an endpoint that ignores the ask)."""
    if isinstance(embedding, str):
        values = array("f", base64.b64decode(embedding))
        if sys.byteorder != "little":
            values.byteswap()
        return values.tolist()
    if isinstance(embedding, list):
        return [float(v) for v in embedding]
    raise Unavailable(f"embedder sent a vector of type {type(embedding).__name__}")


def _normalise(vec: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class EmbedClient:
    def __init__(self, base_url: str, model: str = "", key: str = "",
                 timeout: float = 120.0, query_prefix: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.query_prefix = query_prefix
        """Put before query texts (``QueryEmbedder``), never before indexed code."""
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)
        self._info: ModelInfo | None = None
        self._base64 = True

    @classmethod
    def from_settings(cls, settings: Settings, timeout: float = 120.0) -> EmbedClient | None:
        """The configured client, or None when semantic search is not configured."""
        if not settings.embed_url:
            return None
        return cls(settings.embed_url, settings.embed_model, settings.embed_key, timeout,
                   settings.embed_query_prefix)

    def close(self) -> None:
        self._http.close()

    def _post(self, texts: list[str]) -> dict:
        body: dict[str, object] = {"input": texts}
        if self._base64:
            body["encoding_format"] = "base64"
        if self.model:
            body["model"] = self.model
        try:
            response = self._http.post("/v1/embeddings", json=body)
        except httpx.TimeoutException:
            raise Busy(f"the embedder did not answer within {self.timeout:g}s") from None
        except httpx.HTTPError as exc:
            raise Unavailable(f"embedder unreachable at {self.base_url}: "
                              f"{type(exc).__name__}") from None
        if response.status_code == 400 and self._base64 and "encoding_format" in response.text:
            self._base64 = False  # an endpoint without base64: floats from now on
            return self._post(texts)
        if response.status_code >= 400:
            try:
                message = response.json().get("message") or response.json().get("error")
            except ValueError:
                message = response.text[:200]
            if response.status_code in (502, 503, 504):
                raise Unavailable(f"embedder not ready: {message}")
            raise ConfigError(f"embedder refused the request ({response.status_code}): "
                              f"{message}")
        data: dict = response.json()
        return data

    def reset(self) -> None:
        """Forget what the endpoint said about its model (ask again: it may have changed)."""
        self._info = None

    def info(self) -> ModelInfo:
        """The model's name and dimension (asked once)."""
        if self._info is None:
            data = self._post(["dimension probe"])
            name = str(data.get("model") or self.model or "unknown")
            self._info = ModelInfo(name=name, dim=len(_decode(data["data"][0]["embedding"])))
        return self._info

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        data = self._post(texts)
        rows = sorted(data["data"], key=lambda d: d.get("index", 0))
        vectors = [_normalise(_decode(row["embedding"])) for row in rows]
        if len(vectors) != len(texts):
            raise Unavailable(f"embedder returned {len(vectors)} vectors for {len(texts)} "
                              "inputs")
        if self._info is None:
            self._info = ModelInfo(str(data.get("model") or self.model or "unknown"),
                                   len(vectors[0]))
        return vectors


def served_model(url: str, model: str, key: str, timeout: float) -> tuple[str, int] | None:
    """The model the embedder at ``url`` serves (name, dimension), or None when it does
    not answer (a snapshot import then cannot check its vectors' model)."""
    client = EmbedClient(url, model, key, timeout)
    try:
        info = client.info()
    except CodenavError:
        return None
    finally:
        client.close()
    return info.name, info.dim
