"""The one settings object. Read order: environment, then ``.env`` in the working directory,
then the default. Every variable has the ``CODENAV_`` prefix; a malformed value fails loudly.

Secrets (database password, API tokens) have no defaults: the embedded stack generates them
into ``$CODENAV_HOME`` and team mode requires them from the environment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from codenav.errors import ConfigError

PREFIX = "CODENAV_"


def _read_dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values


def _default_home() -> str:
    return str(Path("~/.codenav").expanduser())


@dataclass(frozen=True)
class Settings:
    """Runtime settings; ``Settings.load()`` builds one from the environment."""

    home: str = field(default_factory=_default_home)
    """State directory of the embedded stack: pgdata, redis, logs, stack.json."""
    database_url: str = ""
    """Postgres DSN. Empty means: use the embedded store described in ``$CODENAV_HOME``."""
    redis_url: str = ""
    """Redis URL of the queue. Empty means: the embedded Redis in ``$CODENAV_HOME``."""
    api_host: str = "127.0.0.1"
    api_port: int = 8765
    url: str = ""
    """API base URL used by clients (CLI, adapter). Empty means: read ``stack.json``."""
    token: str = ""
    """Bearer token used by clients."""
    repo: str = ""
    """Default repository name for clients."""
    root: str = ""
    """The checkout the stdio adapter overlays (default: the git root of its directory)."""
    overlay: bool = True
    """The stdio adapter sends the checkout's uncommitted edits, so answers include them."""
    overlay_ttl_s: int = 7200
    """An overlay nobody used this long is dropped (the adapter makes a new one)."""
    overlay_max_files: int = 2000
    overlay_max_bytes: int = 64 * 1024 * 1024
    """Past either limit an overlay holds nothing and answers say so (from the base)."""
    overlay_wait_s: float = 10.0
    """How long sending an overlay waits for its files to be stored (searchable)."""
    max_file_bytes: int = 1024 * 1024
    """Files larger than this are skipped (reason ``too_large``)."""
    parse_processes: int = 0
    """Parser processes per worker job; 0 means one per CPU core."""
    parse_timeout_s: float = 20.0
    """A parser process that spends longer on one file is killed; the file is stored as
    plain text, or skipped if even that stalls (``codenav.index.ingest``). Reading, parsing
    and cutting 844 KB of Java takes 0.3 s on a 2-core machine; the budget is also the
    most a hung file holds its job (and the edits queued behind it)."""
    chunk_max_lines: int = 120
    """Declarations longer than this are split into overlapping parts."""
    chunk_overlap_lines: int = 10
    text_window_lines: int = 60
    """Line-window size for text files without a structure parser."""
    job_timeout_s: int = 3600
    allowed_origins: tuple[str, ...] = ()
    """Extra Origin values accepted by /mcp (loopback origins are always accepted)."""
    allowed_roots: tuple[str, ...] = ()
    """Directories repository roots must resolve under (comma-separated). ``codenav up``
    adds its ``--repo`` directories; the system directories, ``/`` and the stack's own
    home are refused whatever this says (``codenav.roots``)."""
    rate_limit_per_s: float = 5.0
    """Calls a second one token may make on average, in each API process (REST and MCP
    alike; 0 turns the limit off). Over it the API answers 429 with ``Retry-After``. At 5,
    a token flooding at 10 times that moved another's search p99 by -13 to +14 % on Kafka
    on 2 cores; at 20, a token within its quota already raised it by 84 %
    (``bench/ratelimit_bench.py``)."""
    rate_limit_burst: int = 100
    """Calls one token may make at once before the average applies."""
    concurrent_calls: int = 2
    """Calls of one token served at the same time, in each API process; the others wait
    their turn (0: no cap), so one token's burst does not hold every worker thread. A token
    sending its whole burst of 100 at once raised another's search p99 on Kafka on 2 cores
    by 0-16 % with 2, 70-113 % with 4, and 7.7-8.3 times with no cap
    (``bench/ratelimit_bench.py --bursts``)."""
    open_docs: bool = True
    """Serve ``/docs`` and ``/openapi.json`` without a token (they hold no data)."""
    debounce_ms: int = 300
    reconcile_interval_s: int = 180
    watch_mode: str = "auto"
    """``auto`` (events, polling when the kernel refuses watches), ``events`` or ``polling``."""
    poll_interval_s: float = 2.0
    log_level: str = "INFO"
    log_format: str = "text"
    """``text`` (one line per record) or ``json`` (one JSON object per line: time, level,
    logger, message, service, and the exception if any), for every service."""
    metrics_open: bool = False
    """Serve ``/metrics`` without a token (for a Prometheus on a private network); by
    default it needs an admin token (``Authorization: Bearer ...``)."""
    grep_timeout_ms: int = 1500
    """The time budget of one grep: its statements run under this ``statement_timeout``
    and matching stops at it; the answer then says it is partial (``timed_out``)."""
    embed_url: str = ""
    embed_model: str = ""
    embed_key: str = ""
    embed_query_prefix: str = ""
    """Text put before every query (never before code) sent to the embedder: models trained
    with an instruction want it (CodeRankEmbed: ``Represent this query for searching
    relevant code: ``)."""
    embed_query_budget_ms: int = 500
    """How long a search waits for its query's vector; past it the answer is lexical and
    says why (the embedder is busy or slow)."""

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser()

    @classmethod
    def load(cls, env: dict[str, str] | None = None, dotenv: Path | None = None) -> Settings:
        settings = cls(**read_fields(cls, PREFIX, env, dotenv))
        settings.validate()
        return settings

    def validate(self) -> None:
        if not 0 < self.api_port < 65536:
            raise ConfigError(f"CODENAV_API_PORT must be 1-65535, got {self.api_port}")
        if self.embed_query_budget_ms <= 0:
            raise ConfigError("CODENAV_EMBED_QUERY_BUDGET_MS must be positive")
        if self.max_file_bytes <= 0:
            raise ConfigError("CODENAV_MAX_FILE_BYTES must be positive")
        if self.parse_timeout_s <= 0:
            raise ConfigError("CODENAV_PARSE_TIMEOUT_S must be positive")
        if self.chunk_max_lines < 10:
            raise ConfigError("CODENAV_CHUNK_MAX_LINES must be at least 10")
        if not 0 <= self.chunk_overlap_lines < self.chunk_max_lines // 2:
            raise ConfigError("CODENAV_CHUNK_OVERLAP_LINES must be below half of CHUNK_MAX_LINES")
        if self.overlay_ttl_s < 60 or self.overlay_max_files < 1 or self.overlay_max_bytes < 1:
            raise ConfigError("CODENAV_OVERLAY_TTL_S must be at least 60, the overlay limits "
                              "positive")
        if self.concurrent_calls < 0:
            raise ConfigError("CODENAV_CONCURRENT_CALLS must be 0 (no cap) or more")
        if self.rate_limit_per_s < 0 or self.rate_limit_burst < 1:
            raise ConfigError("CODENAV_RATE_LIMIT_PER_S must be 0 (off) or more, "
                              "CODENAV_RATE_LIMIT_BURST at least 1")
        if self.log_format not in ("text", "json"):
            raise ConfigError("CODENAV_LOG_FORMAT must be text or json")
        if not 10 <= self.grep_timeout_ms <= 600_000:
            raise ConfigError("CODENAV_GREP_TIMEOUT_MS must be 10-600000")
        if self.watch_mode not in ("auto", "events", "polling"):
            raise ConfigError("CODENAV_WATCH_MODE must be auto, events or polling")
        for url_name in ("database_url", "redis_url", "url", "embed_url"):
            value = getattr(self, url_name)
            if value and "://" not in value:
                raise ConfigError(f"CODENAV_{url_name.upper()} is not a URL: {value!r}")

    def workers(self) -> int:
        return self.parse_processes or (os.cpu_count() or 1)


def read_fields(cls: type, prefix: str, env: dict[str, str] | None = None,
                dotenv: Path | None = None, strip: bool = False) -> dict[str, Any]:
    """The values of the dataclass ``cls``'s fields found as ``prefix + FIELD``: the
    environment (or ``env``), then ``.env`` in the working directory (or ``dotenv``),
    converted to each field's type; a malformed value raises ``ConfigError``. Every
    settings object (this one, the embedder's) is read by this one loader."""
    source = dict(_read_dotenv(dotenv if dotenv is not None else Path.cwd() / ".env"))
    source.update(os.environ if env is None else env)
    values: dict[str, Any] = {}
    for f in fields(cls):
        key = prefix + f.name.upper()
        if key in source:
            raw = source[key].strip() if strip else source[key]
            values[f.name] = _convert(key, raw, f.type)
    return values


_BOOLS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}


def _convert(key: str, raw: str, type_name: Any) -> Any:
    text = str(type_name)
    try:
        if text == "int":
            return int(raw)
        if text == "float":
            return float(raw)
        if text.startswith("tuple"):
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        if text == "bool":
            value = raw.strip().lower()
            if value not in _BOOLS:
                raise ConfigError(f"{key} must be true or false, got {raw!r}")
            return _BOOLS[value]
    except ValueError:
        raise ConfigError(f"{key} must be a number, got {raw!r}") from None
    return raw
