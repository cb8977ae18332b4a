"""Request and response bodies of the embedder API (OpenAI's embeddings shape, plus
``truncated``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    input: Any
    """A string or a list of strings (checked by the route, for clear messages)."""
    model: str | None = None
    """Optional; when given it must name the served model (its id or its short name)."""
    encoding_format: Literal["float", "base64"] | None = None
    """``base64``: little-endian float32 bytes, as OpenAI's client asks by default."""
    dimensions: int | None = None
    """Optional; when given it must equal the model's dimension (no truncated vectors)."""
    user: str | None = None


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class Usage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: Usage
    truncated: list[int]
    """Indices of the inputs cut to the model's max sequence length before embedding."""


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    owned_by: str = "codenav"
    dimension: int
    max_tokens: int
    backend: str
    path: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class ErrorBody(BaseModel):
    error: str
    message: str
    hint: str | None = None
