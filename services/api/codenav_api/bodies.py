"""Request bodies the routes read themselves (uploads, large JSON): gzip-compressed when
they say so (``Content-Encoding: gzip``), bounded before and after decompression."""

from __future__ import annotations

import json
import zlib
from typing import Any

from fastapi import Request

from codenav.errors import InvalidRequest
from codenav.validate import check_value

JSON_MAX_BYTES = 256 << 20
"""A JSON body (a commit's file list, a list of contents), uncompressed."""


async def body_bytes(request: Request, limit: int) -> bytes:
    """The request body, gunzipped when it says so, at most ``limit`` bytes either way."""
    data = bytearray()
    async for block in request.stream():
        data += block
        if len(data) > limit:
            raise InvalidRequest("the request body is larger than this server accepts")
    if request.headers.get("content-encoding", "").lower() != "gzip":
        return bytes(data)
    unpack = zlib.decompressobj(31)
    try:
        out = unpack.decompress(bytes(data), limit + 1)
    except zlib.error:
        raise InvalidRequest("the request body is not gzip") from None
    if len(out) > limit or unpack.unconsumed_tail:
        raise InvalidRequest("the request body is larger than this server accepts")
    return out


async def body_json(request: Request) -> dict[str, Any]:
    raw = await body_bytes(request, JSON_MAX_BYTES)
    try:
        data = json.loads(raw)
    except ValueError:
        raise InvalidRequest("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise InvalidRequest("the request body is a JSON object")
    check_value(data, "")
    return data
