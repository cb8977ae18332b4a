"""Per-token rate limits on the API. The MCP specification says a server MUST rate limit
tool invocations; a team-shared server also owes every developer an answer while one
agent loops.

A token bucket per token, in each API process: a token may make ``burst`` calls at once,
then ``rate`` a second on average. A call over that is refused (429, with the seconds to
wait) before it reads the store or runs a tool, so a flooding token costs the others the
refusals only. Each API process counts on its own: behind N replicas a token gets N times
the rate. Every authenticated request counts, REST and MCP alike; health checks need no
token and are never limited. Beside the rate, ``InFlight`` bounds how many calls of one
token run at once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Hashable

import anyio

from codenav.access import Caller
from codenav.errors import RateLimited

MAX_BUCKETS = 10_000
"""Past this many tokens seen, the buckets that have filled up again are dropped (a full
bucket is the same as none)."""


def _key(caller: Caller) -> Hashable:
    """Whose bucket and slots: the token (the operator, who has none, by name)."""
    return caller.token_id if caller.token_id is not None else caller.name


class RateLimiter:
    """A token bucket per key: ``burst`` calls at once, then ``rate`` a second."""

    def __init__(self, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic,
                 on_refuse: Callable[[Caller], None] | None = None) -> None:
        self.rate = rate
        """Calls a second, on average; 0 turns the limit off."""
        self.burst = burst
        self._clock = clock
        self._on_refuse = on_refuse
        """Told of every refused call (the API counts them per token for ``/metrics``)."""
        self._buckets: dict[Hashable, tuple[float, float]] = {}
        """Per key: the calls it may still make at once, and when that was counted."""
        self._lock = threading.Lock()

    def wait_s(self, key: Hashable) -> float:
        """0.0 when ``key`` may make a call now (it is counted); otherwise the seconds until
        it may (nothing is counted)."""
        if self.rate <= 0:
            return 0.0
        now = self._clock()
        with self._lock:
            left, at = self._buckets.get(key, (float(self.burst), now))
            left = min(float(self.burst), left + (now - at) * self.rate)
            if left >= 1.0:
                self._buckets[key] = (left - 1.0, now)
                if len(self._buckets) > MAX_BUCKETS:
                    self._drop_full(now)
                return 0.0
            self._buckets[key] = (left, now)
            return (1.0 - left) / self.rate

    def check(self, caller: Caller) -> None:
        """Count a call of ``caller``'s token; ``RateLimited`` when it is over its limit."""
        wait = self.wait_s(_key(caller))
        if wait > 0:
            if self._on_refuse is not None:
                self._on_refuse(caller)
            raise RateLimited(
                f"rate limit: this token made more than {self.burst} calls at once or "
                f"{self.rate:g} a second on average; retry in {wait:.1f} s",
                retry_after_s=wait,
                hint="wait before the next call (Retry-After); the limit is per token "
                     "(CODENAV_RATE_LIMIT_PER_S, CODENAV_RATE_LIMIT_BURST)")

    def _drop_full(self, now: float) -> None:
        refill_s = self.burst / self.rate
        self._buckets = {k: (left, at) for k, (left, at) in self._buckets.items()
                         if now - at < refill_s}


class InFlight:
    """At most ``limit`` calls of one token at a time (in each API process); the others wait
    their turn on the event loop, holding no worker thread and no connection. The rate limit
    bounds how many calls a token makes; this bounds how much of the server one token's
    burst holds at once, so other tokens' calls are served between them."""

    def __init__(self, limit: int, on_wait: Callable[[Caller], None] | None = None) -> None:
        self.limit = limit
        """Calls in flight per token; 0: no cap."""
        self._on_wait = on_wait
        self._slots: dict[Hashable, anyio.Semaphore] = {}

    @contextlib.asynccontextmanager
    async def slot(self, caller: Caller) -> AsyncIterator[None]:
        if self.limit <= 0:
            yield
            return
        key = _key(caller)
        slots = self._slots.get(key)
        if slots is None:
            if len(self._slots) > MAX_BUCKETS:  # those nobody holds are dropped
                self._slots = {k: s for k, s in self._slots.items()
                               if s.value < self.limit}
            slots = self._slots[key] = anyio.Semaphore(self.limit)
        if slots.value == 0 and self._on_wait is not None:
            self._on_wait(caller)
        async with slots:
            yield
