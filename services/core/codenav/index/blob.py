"""Reading one file safely: git blob ids, binary and minified detection, decoding.

Nothing here raises on bad content. A file is either decoded text (NUL-free, valid UTF-8)
or a skip reason the walker records.
"""

from __future__ import annotations

import codecs
import hashlib
from dataclasses import dataclass

BINARY_SNIFF_BYTES = 8192
MINIFIED_MIN_BYTES = 4096
MINIFIED_MEAN_LINE = 300
BINARY_DETAIL = f"NUL byte in first {BINARY_SNIFF_BYTES // 1024} KiB"
MINIFIED_DETAIL = f"average line longer than {MINIFIED_MEAN_LINE} characters"
SETTLED_SKIPS = {"binary": BINARY_DETAIL, "minified": MINIFIED_DETAIL}
"""Skip reasons that are verdicts on a file's path and bytes alone, with the detail each is
recorded with: a file skipped for one of them, and of the same size and mtime since, is not
read again (``codenav.index.reconcile``). A rule that changes must change its detail, so
the files it judged are read again."""


def git_blob_sha(data: bytes) -> str:
    """The object id git gives ``data`` as a blob (``git hash-object``)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str
    replaced: bool
    """True when invalid bytes were replaced by U+FFFD."""


def looks_binary(data: bytes) -> bool:
    head = data[:BINARY_SNIFF_BYTES]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\0" in head


def looks_minified(path: str, data: bytes) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    if ".min." in name or name.endswith((".bundle.js", "-bundle.js")):
        return True
    if len(data) < MINIFIED_MIN_BYTES:
        return False
    lines = data.count(b"\n") + 1
    return len(data) / lines > MINIFIED_MEAN_LINE


def decode(data: bytes) -> Decoded:
    """Decode as UTF-8 (or UTF-16 with a BOM); invalid bytes become U+FFFD, NULs too."""
    encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    try:
        text = data.decode(encoding)
        replaced = False
    except UnicodeDecodeError:
        text = data.decode(encoding, errors="replace")
        replaced = True
    if "\0" in text:
        text = text.replace("\0", "\ufffd")
        replaced = True
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return Decoded(text=text, encoding=encoding, replaced=replaced)
