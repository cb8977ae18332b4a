"""HTTP client for the codenav API (used by the CLI and the stdio adapter).

Finds the API through ``CODENAV_URL``/``CODENAV_TOKEN`` or, when those are unset, through
``$CODENAV_HOME/stack.json`` written by ``codenav up``. Maps error bodies back to the
exceptions in ``codenav.errors``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx

from codenav.config import Settings
from codenav.errors import (
    CodenavError,
    ConfigError,
    Conflict,
    Forbidden,
    Gone,
    InvalidRequest,
    NotFound,
    RateLimited,
    SchemaMismatch,
    Unauthorized,
    Unavailable,
)
from codenav.tools import get

_BY_STATUS: dict[int, type[CodenavError]] = {400: InvalidRequest, 401: Unauthorized,
                                             403: Forbidden, 404: NotFound, 409: Conflict,
                                             410: Gone, 413: InvalidRequest,
                                             422: InvalidRequest}

def stack_file(settings: Settings) -> Path:
    return settings.home_path / "stack.json"


def endpoint(settings: Settings) -> tuple[str, str]:
    """(base URL, token) for clients: settings first, then the local stack's file."""
    if settings.url:
        return settings.url.rstrip("/"), settings.token
    path = stack_file(settings)
    if not path.is_file():
        raise ConfigError("no codenav API configured",
                          hint="set CODENAV_URL and CODENAV_TOKEN, or start `codenav up`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        url = data["url"].rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url {url!r} is not an http(s) address")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"cannot read {path}: {type(exc).__name__} {exc}",
                          hint="restart the stack with `codenav up`, which rewrites it") from None
    return url, settings.token or str(data.get("token", ""))


RATE_WAIT_S = 30.0
"""How long one call of ours waits in all, over its retries, when the server says the
token is over its rate limit (429 with ``Retry-After``: ``codenav.ratelimit``)."""


def _retry_after(response: httpx.Response) -> float:
    """The wait a 429 names: the body's ``retry_after_s`` is exact, ``Retry-After`` counts
    whole seconds."""
    try:
        exact = response.json().get("retry_after_s")
    except ValueError:
        exact = None
    try:
        return max(0.01, float(exact if exact is not None else
                               response.headers.get("retry-after", "1")))
    except (TypeError, ValueError):
        return 1.0


def rate_wait(response: httpx.Response, waited: float) -> float | None:
    """Seconds to wait before sending the call again: the server refused it for the rate
    limit, and waiting that long keeps within ``RATE_WAIT_S``; otherwise None."""
    if response.status_code != 429:
        return None
    wait = _retry_after(response)
    return wait if waited + wait <= RATE_WAIT_S else None


def error_from(response: httpx.Response) -> CodenavError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    message = body.get("message") or f"HTTP {response.status_code} from the codenav API"
    hint = body.get("hint")
    if body.get("error") == "schema_mismatch":
        return SchemaMismatch(message, hint=hint)
    if response.status_code == 429:
        return RateLimited(message, hint=hint, retry_after_s=_retry_after(response))
    cls = _BY_STATUS.get(response.status_code)
    if cls is None:
        cls = Unavailable if response.status_code >= 500 else InvalidRequest
    return cls(message, hint=hint)


class ApiClient:
    def __init__(self, base_url: str, token: str, timeout: float = 60.0) -> None:
        self.base_url = base_url
        self.token = token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout)

    @classmethod
    def from_settings(cls, settings: Settings) -> ApiClient:
        url, token = endpoint(settings)
        return cls(url, token)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                      params: dict[str, Any] | None = None, *,
                      headers: dict[str, str] | None = None,
                      content: bytes | None = None) -> dict[str, Any]:
        """One call; ``content`` (raw bytes, with their ``headers``) instead of a JSON
        ``body`` for uploads. Refused for the token's rate limit, it is sent again after
        the wait the server names (``rate_wait``)."""
        waited = 0.0
        while True:
            try:
                if content is not None:
                    response = await self._client.request(method, path, content=content,
                                                          params=params, headers=headers)
                else:
                    response = await self._client.request(method, path, json=body,
                                                          params=params, headers=headers)
            except httpx.HTTPError as exc:
                raise Unavailable(f"cannot reach the codenav API at {self.base_url}: "
                                  f"{type(exc).__name__}",
                                  hint="is the stack running? start it with `codenav up`"
                                  ) from None
            wait = rate_wait(response, waited)
            if wait is None:
                break
            await anyio.sleep(wait)
            waited += wait
        if response.status_code >= 400:
            raise error_from(response)
        data: dict[str, Any] = response.json()
        return data

    async def call(self, tool: str, args: dict[str, Any],
                   overlay: str | None = None) -> dict[str, Any]:
        """A tool of the registry: ``POST /v1/<tool>`` with its arguments as the body; with
        ``overlay``, answered with that overlay of the caller's local edits."""
        headers = {"X-Codenav-Overlay": overlay} if overlay else None
        return await self.request("POST", f"/v1/{get(tool).name}", args, headers=headers)


def _sync_client(settings: Settings) -> httpx.Client:
    url, token = endpoint(settings)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=httpx.Timeout(60.0, read=3600.0))


def download(settings: Settings, path: str, params: list[tuple[str, str]],
             out: Path) -> dict[str, Any]:
    """GET a file (a snapshot) to ``out`` (atomically); the summary comes in a header."""
    tmp = out.with_name(out.name + ".part")
    try:
        query = httpx.QueryParams(tuple(params))
        with _sync_client(settings) as client, client.stream("GET", path, params=query) as resp:
            if resp.status_code >= 400:
                resp.read()
                raise error_from(resp)
            with tmp.open("wb") as handle:
                for block in resp.iter_bytes(1 << 20):
                    handle.write(block)
            summary: dict[str, Any] = json.loads(resp.headers.get("x-codenav-summary", "{}"))
        tmp.replace(out)
    except httpx.HTTPError as exc:
        raise Unavailable(f"cannot reach the codenav API: {type(exc).__name__}",
                          hint="is the server running?") from None
    finally:
        tmp.unlink(missing_ok=True)
    summary["path"] = str(out.resolve())
    return summary


def upload(settings: Settings, path: str, params: list[tuple[str, str]],
           source: Path) -> dict[str, Any]:
    """POST a file (a snapshot) as the request body, streamed."""
    def chunks() -> Any:
        with source.open("rb") as handle:
            yield from iter(lambda: handle.read(1 << 20), b"")

    try:
        with _sync_client(settings) as client:
            resp = client.post(path, params=httpx.QueryParams(tuple(params)), content=chunks(),
                               headers={"Content-Type": "application/octet-stream"})
    except httpx.HTTPError as exc:
        raise Unavailable(f"cannot reach the codenav API: {type(exc).__name__}",
                          hint="is the server running?") from None
    except OSError as exc:
        raise InvalidRequest(f"cannot read {source}: {exc.strerror or exc}") from None
    if resp.status_code >= 400:
        raise error_from(resp)
    data: dict[str, Any] = resp.json()
    return data
