"""Adapter entrypoint: ``python -m codenav_adapter`` or ``codenav mcp``.

Configured by CODENAV_URL, CODENAV_TOKEN and optionally CODENAV_REPO; without
CODENAV_URL it finds the local stack through $CODENAV_HOME/stack.json. It answers with the
uncommitted edits of the git checkout it runs in (CODENAV_ROOT names another;
CODENAV_OVERLAY=false turns that off).
"""

from __future__ import annotations

import logging
import sys

from codenav.config import Settings
from codenav.errors import CodenavError
from codenav_adapter.server import build_server


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] in ("-h", "--help"):
        sys.stderr.write(__doc__ or "")
        return 0
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        settings = Settings.load()
    except CodenavError as exc:
        sys.stderr.write(f"codenav mcp: {exc.message}\n")
        return 1
    build_server(settings).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
