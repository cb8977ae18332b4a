"""Embedder entrypoint: ``python -m codenav_embedder`` serves /v1/embeddings.

Settings come from CODENAV_EMBED_* (see codenav_embedder/settings.py and the README);
``--prepare`` loads the model once (exporting and quantising the ONNX graph into the cache)
and exits, so an image can ship ready to serve offline.
"""

from __future__ import annotations

import argparse
import socket
import sys

from codenav import logs
from codenav.config import Settings
from codenav.errors import CodenavError
from codenav_embedder.settings import DEFAULT_PORT, EmbedderSettings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codenav-embedder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=None, help="bind address (default CODENAV_EMBED_HOST "
                        "or 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None,
                        help=f"port (default CODENAV_EMBED_PORT or {DEFAULT_PORT})")
    parser.add_argument("--fd", type=int, default=None,
                        help="serve on this inherited listening socket instead (a supervisor "
                        "such as `codenav up` holds the port, so it stays this service's "
                        "across restarts)")
    parser.add_argument("--prepare", action="store_true",
                        help="load the model (export ONNX into the cache), then exit")
    args = parser.parse_args(argv)
    try:
        settings = EmbedderSettings.load()
        core_settings = Settings.load()
        log_level, log_format = core_settings.log_level.upper(), core_settings.log_format
    except CodenavError as exc:
        print(f"codenav-embedder: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else ""),
              file=sys.stderr)
        return 1
    log_config = logs.setup(log_level, log_format, "embedder")
    if args.prepare:
        from codenav_embedder import encoder

        enc = encoder.load(settings.model_name(), backend=settings.backend,
                           max_tokens=settings.max_tokens, threads=settings.threads,
                           cache_dir=settings.cache_path())
        enc.encode(["def prepare(): pass"])
        print(f"ready: {settings.model_name()} ({enc.backend}, {enc.dimension} dimensions, "
              f"{enc.max_tokens} tokens)")
        return 0

    import uvicorn

    from codenav_embedder.app import create_app

    sock: socket.socket | None = None
    if args.fd is not None:
        try:
            sock = socket.socket(fileno=args.fd)  # family and type read from the socket
        except OSError as exc:
            print(f"codenav-embedder: --fd {args.fd} is not a socket this process inherited "
                  f"({exc.strerror})", file=sys.stderr)
            return 2
    config = uvicorn.Config(create_app(settings), host=args.host or settings.host,
                            port=args.port or settings.port, log_level=log_level.lower(),
                            access_log=False, log_config=log_config,
                            timeout_graceful_shutdown=2)  # a stop cuts bulk requests short
    server = uvicorn.Server(config)
    server.run(sockets=None if sock is None else [sock])
    return 0 if server.started else 3  # 3: uvicorn's start-up failure (a port taken)


if __name__ == "__main__":
    sys.exit(main())
