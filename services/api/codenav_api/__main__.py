"""API entrypoint: ``python -m codenav_api`` (migrates the schema, then serves)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys

import uvicorn

from codenav import logs
from codenav.config import Settings
from codenav.db import migrations
from codenav.db.connect import connect
from codenav.errors import CodenavError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codenav-api", description=__doc__)
    parser.add_argument("--host", default=None, help="bind address (default CODENAV_API_HOST)")
    parser.add_argument("--port", type=int, default=None, help="port (default CODENAV_API_PORT)")
    parser.add_argument("--no-migrate", action="store_true", help="do not migrate at start-up")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    args = parser.parse_args(argv)
    try:
        settings = Settings.load()
        log_config = logs.setup(settings.log_level, settings.log_format, "api")
        if not args.no_migrate:
            with connect(settings) as conn:
                migrations.migrate(conn)
    except CodenavError as exc:
        print(f"codenav-api: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else ""),
              file=sys.stderr)
        return 1
    if args.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # /metrics sums every worker's figures through files in this directory
        metrics_dir = settings.home_path / f"metrics-{args.port or settings.api_port}"
        shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True, mode=0o700)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    uvicorn.run("codenav_api.app:server_app", factory=True, host=args.host or settings.api_host,
                port=args.port or settings.api_port, workers=args.workers,
                log_level=settings.log_level.lower(), access_log=False, log_config=log_config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
