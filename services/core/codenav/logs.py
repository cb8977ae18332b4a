"""Logging for every service: one line per record on stderr, as text or as JSON.

``CODENAV_LOG_FORMAT=json`` makes each record one JSON object (``time``, ``level``,
``logger``, ``service``, ``message``, ``pid``, and ``exc`` with the traceback when there is
one), for a log collector; ``text`` (the default) is for people. ``config`` is a
``logging.config.dictConfig`` dictionary, so uvicorn applies the same one in each of its
worker processes.
"""

from __future__ import annotations

import json
import logging
import logging.config
import os
import sys
from datetime import UTC, datetime
from typing import Any

TEXT_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str = "") -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "service": self.service,
            "pid": record.process, "message": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def config(level: str, fmt: str, service: str) -> dict[str, Any]:
    """The dictConfig of a service: the root logger to stderr in ``fmt`` (text or json);
    uvicorn's loggers go through it too."""
    formatter: dict[str, Any] = {"()": JsonFormatter, "service": service} if fmt == "json" \
        else {"format": TEXT_FORMAT}
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"codenav": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "codenav",
                                "stream": "ext://sys.stderr"}},
        "root": {"level": level.upper(), "handlers": ["stderr"]},
        "loggers": {name: {"handlers": [], "propagate": True}
                    for name in ("uvicorn", "uvicorn.error", "uvicorn.access")},
    }


def setup(level: str, fmt: str, service: str) -> dict[str, Any]:
    """Configure logging for ``service``; returns the configuration (for uvicorn)."""
    cfg = config(level, fmt, service or os.path.basename(sys.argv[0]))
    logging.config.dictConfig(cfg)
    return cfg
