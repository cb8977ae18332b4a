"""The built-in rules of what codenav never indexes, by name alone (no ignore files, no
``pathspec``): dependency and build directories, lock files, secrets, binaries. Light: the
stdio adapter applies them before it sends a developer's files anywhere."""

from __future__ import annotations

import fnmatch
import functools
import re

# Directory names skipped wherever they appear: VCS data, dependencies, build output, caches.
DEFAULT_IGNORED_DIRS = frozenset(
    """.git .hg .svn .bzr node_modules bower_components jspm_packages __pycache__ .venv venv
    .tox .nox .mypy_cache .pytest_cache .ruff_cache .cache .gradle .idea .terraform
    build dist target vendor out .next .nuxt .svelte-kit .turbo coverage htmlcov
    .eggs site-packages Pods DerivedData .codenav""".split()
)

LOCK_FILES = frozenset(
    """package-lock.json npm-shrinkwrap.json yarn.lock pnpm-lock.yaml poetry.lock Pipfile.lock
    uv.lock pdm.lock Cargo.lock Gemfile.lock composer.lock go.sum mix.lock packages.lock.json
    flake.lock bun.lockb""".split()
)

SECRET_PATTERNS = (
    ".env*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "credentials", "credentials.*",
    "*credentials*.json", ".netrc", ".pgpass", ".htpasswd", "*.kdbx", "secrets.y*ml",
    "service-account*.json",
)

BINARY_EXTENSIONS = frozenset(
    """.png .jpg .jpeg .gif .bmp .ico .webp .tiff .psd .pdf .zip .gz .tgz .bz2 .xz .7z .rar
    .tar .jar .war .ear .class .so .dylib .dll .exe .o .a .lib .pyc .pyo .whl .egg .bin .dat
    .db .sqlite .sqlite3 .woff .woff2 .ttf .otf .eot .mp3 .mp4 .wav .ogg .flac .avi .mov
    .mkv .webm .iso .dmg .deb .rpm .parquet .avro .orc .npy .npz .pkl .pt .onnx .h5
    .safetensors .wasm""".split()
)


_SECRET_NAME = re.compile("|".join(fnmatch.translate(p) for p in SECRET_PATTERNS))
"""``SECRET_PATTERNS`` as one regex (``fnmatch.fnmatchcase`` of any of them)."""


@functools.lru_cache(maxsize=65536)
def default_reason(name: str, is_dir: bool) -> str | None:
    """The built-in skip reason for a file or directory ``name``, if any (names repeat: every
    file's directories are checked again, so answers are remembered)."""
    if is_dir:
        return "ignored_dir" if name in DEFAULT_IGNORED_DIRS else None
    if name in LOCK_FILES or name.endswith(".lock"):
        return "lock_file"
    if _SECRET_NAME.match(name) and not name.endswith((".example", ".sample", ".template")):
        return "secret"
    dot = name.rfind(".")
    if dot > 0 and name[dot:].lower() in BINARY_EXTENSIONS:
        return "binary"
    return None


def path_reason(rel_path: str) -> str | None:
    """The built-in skip reason for a file at ``rel_path`` (its directories included)."""
    parts = rel_path.split("/")
    for part in parts[:-1]:
        if default_reason(part, True):
            return "ignored_dir"
    return default_reason(parts[-1], False)


def name_problem(path: str) -> str | None:
    """Why a path cannot be indexed by its name (None: it can). Names come from the file
    system and git as ``surrogateescape`` text: bytes that are not UTF-8 are surrogates,
    which neither Postgres nor Redis can store."""
    if "\n" in path or "\r" in path or "\0" in path:
        return "control character in file name"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "file name is not valid UTF-8"
    return None


def shown(path: str) -> str:
    """``path`` as it can be stored and shown: bytes that are not UTF-8 as U+FFFD, line
    breaks escaped."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text.replace("\n", "\\n").replace("\r", "\\r").replace("\0", "\\0")
