"""Per-token rate limits (the reliability plan's G10; the MCP specification's "servers MUST
rate limit tool invocations"): over its limit a token gets 429 with Retry-After, on REST and
MCP alike, while other tokens and health checks are served; our own clients wait and send
again. A token's calls beyond its slots wait their turn; a refused token is refused again
without the store. The API runs on a real uvicorn server over the test Postgres."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import psycopg
import pytest

from codenav import repos
from codenav.auth import create_token
from codenav.client import ApiClient
from codenav.config import Settings
from codenav.errors import ConfigError, RateLimited
from codenav.index import reconcile
from codenav.ratelimit import RateLimiter
from tests.polyglot import make_polyglot
from tests.teamkit import serve

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_its_burst_then_its_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.wait_s("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.wait_s("a") == pytest.approx(0.5)  # one call comes back every 0.5 s
    assert limiter.wait_s("b") == 0.0  # another token has its own bucket
    clock.now += 0.5
    assert limiter.wait_s("a") == 0.0
    assert limiter.wait_s("a") == pytest.approx(0.5)
    clock.now += 10  # refilled up to the burst, not beyond
    assert [limiter.wait_s("a") for _ in range(4)][-1] == pytest.approx(0.5)


def test_refused_calls_do_not_count() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=1.0, burst=1, clock=clock)
    assert limiter.wait_s("a") == 0.0
    for _ in range(50):  # a client hammering while refused does not push its wait out
        assert limiter.wait_s("a") == pytest.approx(1.0)
    clock.now += 1.0
    assert limiter.wait_s("a") == 0.0


def test_rate_zero_is_off_and_idle_buckets_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    off = RateLimiter(rate=0.0, burst=1)
    assert all(off.wait_s("a") == 0.0 for _ in range(1000))
    monkeypatch.setattr("codenav.ratelimit.MAX_BUCKETS", 10)
    clock = Clock()
    limiter = RateLimiter(rate=1.0, burst=2, clock=clock)
    for key in range(10):
        limiter.wait_s(key)
    clock.now += 5  # every bucket full again
    limiter.wait_s("late")
    limiter.wait_s("later")
    assert set(limiter._buckets) == {"late", "later"}


def test_settings_refuse_a_negative_rate() -> None:
    with pytest.raises(ConfigError, match="RATE_LIMIT"):
        Settings.load(env={"CODENAV_RATE_LIMIT_PER_S": "-1"}, dotenv=Path("/nonexistent"))
    with pytest.raises(ConfigError, match="RATE_LIMIT"):
        Settings.load(env={"CODENAV_RATE_LIMIT_BURST": "0"}, dotenv=Path("/nonexistent"))


@pytest.fixture
def limited(settings: Settings, conn: psycopg.Connection, tmp_path: Path,
            request: pytest.FixtureRequest) -> Iterator[tuple[str, str, str]]:
    """A server allowing 3 calls at once and 2 a second per token (or the rate the test's
    ``rate`` mark names); two tokens."""
    mark = request.node.get_closest_marker("rate")
    rate = float(mark.args[0]) if mark else 2.0
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    first, _ = create_token(conn, "flooding", "read")
    second, _ = create_token(conn, "patient", "read")
    tight = dataclasses.replace(settings, rate_limit_per_s=rate, rate_limit_burst=3,
                                metrics_open=True)
    with serve(tight) as url:
        yield url, first, second


SLOW = 0.02
"""One call back every 50 s: however slowly a loaded machine answers, a test's calls past
the burst are refused."""


def _search(url: str, token: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/search", json={"query": "parse config", "limit": 3},
                      headers={"Authorization": f"Bearer {token}"})


@pytest.mark.rate(0.5)  # Retry-After up to 2 s; 8 calls pass a burst of 3 unless each takes 2 s
def test_over_its_limit_a_token_gets_429_and_others_are_served(
        limited: tuple[str, str, str]) -> None:
    url, first, second = limited
    answers = [_search(url, first) for _ in range(8)]
    assert answers[0].status_code == 200
    refused = [r for r in answers if r.status_code == 429]
    assert refused, [r.status_code for r in answers]
    body = refused[0].json()
    assert body["error"] == "rate_limited" and "retry in" in body["message"]
    assert int(refused[0].headers["retry-after"]) >= 1
    assert 0 < float(body["retry_after_s"]) <= 2.0  # exact: one call back every 2 s
    assert _search(url, second).status_code == 200  # its own bucket
    for _ in range(5):  # health checks need no token and are never limited
        assert httpx.get(f"{url}/healthz").status_code == 200
        assert httpx.get(f"{url}/readyz").status_code in (200, 503)
    metrics = httpx.get(f"{url}/metrics").text  # the operator sees who is refused
    counted = [line for line in metrics.splitlines()
               if line.startswith("codenav_rate_limited_total{") and "flooding" in line]
    assert counted and float(counted[0].split()[-1]) == len(refused), counted
    time.sleep(float(refused[-1].headers["retry-after"]))
    assert _search(url, first).status_code == 200


@pytest.mark.rate(SLOW)
def test_mcp_over_http_is_limited_too(limited: tuple[str, str, str]) -> None:
    url, first, second = limited
    answers = [httpx.post(f"{url}/mcp", json=LIST_TOOLS,
                          headers={"Authorization": f"Bearer {first}", **MCP_HEADERS})
               for _ in range(5)]
    assert [r.status_code for r in answers] == [200, 200, 200, 429, 429]
    refused = answers[-1]
    assert refused.headers["retry-after"] and refused.json()["error"] == "rate_limited"
    # REST and MCP count against the same bucket: the token is refused on REST as well
    assert _search(url, first).status_code == 429
    assert _search(url, second).status_code == 200


def test_our_client_waits_and_sends_again(limited: tuple[str, str, str]) -> None:
    url, first, _second = limited

    async def calls() -> list[dict[str, object]]:
        client = ApiClient(url, first)
        try:
            return [await client.call("search", {"query": "parse config", "limit": 3})
                    for _ in range(8)]
        finally:
            await client.aclose()

    started = time.monotonic()
    answers = anyio.run(calls)
    took = time.monotonic() - started
    assert all("results" in a for a in answers)  # none refused: each waited its turn
    assert took >= 2.0  # 5 calls past the burst of 3, at 2 a second: 2.5 s less the refill


@pytest.mark.rate(SLOW)
def test_our_client_gives_up_past_its_wait(limited: tuple[str, str, str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    url, first, _second = limited
    monkeypatch.setattr("codenav.client.RATE_WAIT_S", 0.0)

    async def calls() -> None:
        client = ApiClient(url, first)
        try:
            for _ in range(8):
                await client.call("search", {"query": "parse config", "limit": 3})
        finally:
            await client.aclose()

    with pytest.raises(RateLimited, match="retry in"):
        anyio.run(calls)


def test_a_refused_token_is_refused_again_without_the_store(
        conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client looping on a revoked or mistyped token has no caller, so no rate limit
    holds it: its refusal is remembered instead, and the store is not asked again."""
    from contextlib import contextmanager

    from codenav.auth import TokenVerifier, revoke_token
    from codenav.errors import Unauthorized

    asked = []

    @contextmanager
    def factory():  # type: ignore[no-untyped-def]
        asked.append(1)
        yield conn

    token, token_id = create_token(conn, "soon-revoked", "read")
    revoke_token(conn, token_id)
    verifier = TokenVerifier()
    for header in (f"Bearer {token}", "Bearer cnv_never-made"):
        with pytest.raises(Unauthorized, match="unknown or revoked"):
            verifier.verify(factory, header)
        before = len(asked)
        for _ in range(20):
            with pytest.raises(Unauthorized, match="unknown or revoked"):
                verifier.cached(header)  # the API's first look, on the event loop
            with pytest.raises(Unauthorized, match="unknown or revoked"):
                verifier.verify(factory, header)
        assert len(asked) == before  # not asked again
    monkeypatch.setattr("codenav.auth.REFUSED_SECONDS", 0.0)
    fresh = TokenVerifier()
    with pytest.raises(Unauthorized):
        fresh.verify(factory, "Bearer cnv_never-made")
    with pytest.raises(Unauthorized):
        fresh.verify(factory, "Bearer cnv_never-made")
    assert len(asked) == 4  # with no memory of refusals, each is asked
    good, _ = create_token(conn, "valid", "read")
    assert fresh.verify(factory, f"Bearer {good}").name == "valid"


def test_a_token_has_at_most_its_slots_in_flight_and_the_rest_wait() -> None:
    from codenav.access import Caller
    from codenav.ratelimit import InFlight

    busy = Caller(1, "busy", "read", 1, "t")
    other = Caller(2, "other", "read", 1, "t")

    def peaks(slots: InFlight, callers: list[Caller]) -> dict[str, int]:
        """The most calls of each token that ran at once, all ``callers`` at the same time."""
        running: dict[str, int] = {}
        peak: dict[str, int] = {}

        async def call(caller: Caller) -> None:
            async with slots.slot(caller):
                running[caller.name] = running.get(caller.name, 0) + 1
                peak[caller.name] = max(peak.get(caller.name, 0), running[caller.name])
                await anyio.sleep(0.05)
                running[caller.name] -= 1

        async def together() -> None:
            async with anyio.create_task_group() as tasks:
                for caller in callers:
                    tasks.start_soon(call, caller)

        anyio.run(together)
        return peak

    waited: list[str] = []
    two = InFlight(2, on_wait=lambda c: waited.append(c.name))
    assert peaks(two, [busy] * 6 + [other]) == {"busy": 2, "other": 1}  # all ran
    assert waited == ["busy"] * 4
    assert peaks(InFlight(0), [busy] * 6) == {"busy": 6}  # 0: no cap


def test_a_tokens_burst_waits_for_its_slots_over_rest_and_mcp(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    busy, _ = create_token(conn, "bursting", "read")
    other, _ = create_token(conn, "steady", "read")
    one = dataclasses.replace(settings, concurrent_calls=1, metrics_open=True)
    with serve(one) as url:

        async def burst() -> list[int]:
            codes: list[int] = []
            async with httpx.AsyncClient(base_url=url, timeout=60) as http:

                async def rest(token: str) -> None:
                    r = await http.post("/v1/search", json={"query": "parse config"},
                                        headers={"Authorization": f"Bearer {token}"})
                    codes.append(r.status_code)

                async def mcp(token: str) -> None:
                    r = await http.post("/mcp", json=LIST_TOOLS, headers={
                        "Authorization": f"Bearer {token}", **MCP_HEADERS})
                    codes.append(r.status_code)

                async with anyio.create_task_group() as tasks:
                    for _ in range(6):
                        tasks.start_soon(rest, busy)
                        tasks.start_soon(mcp, busy)
                    tasks.start_soon(rest, other)
            return codes

        codes = anyio.run(burst)
        assert codes == [200] * 13, codes  # none refused: the burst waited its turn
        metrics = httpx.get(f"{url}/metrics").text
        waits = {line.split("{")[1].split("}")[0]: float(line.split()[-1])
                 for line in metrics.splitlines()
                 if line.startswith("codenav_token_waits_total{")}
        assert any("bursting" in k and v > 0 for k, v in waits.items()), waits
        assert not any("steady" in k for k in waits), waits


def test_an_open_mcp_event_stream_holds_no_slot(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """An MCP client may keep a GET /mcp event stream open for as long as it runs; with it
    holding a slot, a token with one slot could make no call at all."""
    token, _ = create_token(conn, "streaming", "read")
    one = dataclasses.replace(settings, concurrent_calls=1)
    headers = {"Authorization": f"Bearer {token}"}
    with serve(one) as url, httpx.Client(base_url=url, timeout=20) as http:
        with http.stream("GET", "/mcp", headers={**headers, "Accept": "text/event-stream"}) \
                as stream, http.stream("GET", "/mcp", headers={
                    **headers, "Accept": "text/event-stream"}) as second:
            assert stream.status_code == second.status_code == 200  # both open
            r = http.post("/mcp", json=LIST_TOOLS, headers={**headers, **MCP_HEADERS})
            assert r.status_code == 200
            assert http.post("/v1/status", json={}, headers=headers).status_code == 200
