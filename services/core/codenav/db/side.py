"""A request's second connection, for statements that do not depend on each other.

``find_files`` reads a dozen statements per query, and several of them need only the query
(the files declaring its names, the corpus's file count) or what one earlier statement gave
(the graph neighbours of the best BM25 files). On a second pooled connection those run in a
thread while the request's own connection runs the rest: two Postgres backends working on two
cores instead of one after the other.

A ``Side`` made with ``spare`` (a callable lending a pooled connection, or None when none is
free right now) runs each statement in a thread on that connection. When none is lent, and
for a ``Side`` without ``spare`` (the CLI, the evaluation harness, a single connection),
each statement runs on the request's connection when its rows are first asked for, in the
caller's thread: the request's connection is only ever used by the request's thread (its
transactions and their settings stay its own). The rows are the same either way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, Generic, TypeVar

import psycopg

T = TypeVar("T")
Rows = list[tuple[Any, ...]]
Lender = Callable[[], AbstractContextManager[psycopg.Connection | None]]
"""Lends a spare pooled connection for a while: yields None when none is free."""

_INLINE = object()
"""What a statement sent ahead returns when no connection was lent: the caller runs it."""
_THREADS = 8
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=_THREADS,
                                           thread_name_prefix="codenav-side")
        return _executor


class Later(Generic[T]):
    """What a function sent ahead returns: ``result()`` waits for it (and raises what the
    function raised)."""

    __slots__ = ("_future", "_conn", "_fn", "_done", "_value")

    def __init__(self, future: Future[Any] | None, conn: psycopg.Connection,
                 fn: Callable[[psycopg.Connection], T]) -> None:
        self._future = future
        self._conn = conn
        self._fn = fn
        self._done = False
        self._value: T | None = None

    def result(self) -> T:
        if not self._done:
            value: Any = self._future.result() if self._future is not None else _INLINE
            self._value = self._fn(self._conn) if value is _INLINE else value
            self._done = True
        return self._value  # type: ignore[return-value]


class Pending(Later[Rows]):
    """The rows of a statement sent ahead."""

    __slots__ = ()

    def rows(self) -> Rows:
        return self.result()


class Side:
    """Statements sent ahead for one request (see the module's docstring). Use it as a
    context manager: leaving it waits for every statement sent, and gives the spare
    connection back."""

    def __init__(self, conn: psycopg.Connection, spare: Lender | None = None) -> None:
        self._conn = conn
        self._spare = spare
        self._stack = ExitStack()
        self._lent: psycopg.Connection | None = None
        self._asked = False
        self._lock = threading.Lock()
        self._sent: list[Future[Any]] = []

    @property
    def concurrent(self) -> bool:
        """Whether statements may run beside the request's own."""
        return self._spare is not None

    def fetch(self, query: Any, params: dict[str, Any], binary: bool = False) -> Pending:
        """Send a statement ahead; its rows come from ``Pending.rows`` (in binary format
        with ``binary``: arrays of numbers or text come back without parsing text)."""
        def rows(conn: psycopg.Connection) -> Rows:
            return conn.execute(query, params, binary=binary).fetchall()
        return Pending(self._send(rows), self._conn, rows)

    def call(self, fn: Callable[[psycopg.Connection], T]) -> Later[T]:
        """Send ``fn`` ahead: it gets the connection to run its statements on (and must not
        keep it)."""
        return Later(self._send(fn), self._conn, fn)

    def _send(self, fn: Callable[[psycopg.Connection], T]) -> Future[Any] | None:
        if self._spare is None:
            return None
        future = _pool().submit(self._run, fn)
        self._sent.append(future)
        return future

    def _run(self, fn: Callable[[psycopg.Connection], T]) -> Any:
        lent = self._connection()
        return _INLINE if lent is None else fn(lent)

    def _connection(self) -> psycopg.Connection | None:
        with self._lock:  # the first statement borrows the spare; the rest reuse it
            if not self._asked:
                self._asked = True
                assert self._spare is not None
                self._lent = self._stack.enter_context(self._spare())
            return self._lent

    def __enter__(self) -> Side:
        return self

    def __exit__(self, *exc: object) -> None:
        for future in self._sent:  # nothing may still use the spare once it is back
            future.exception()
        self._stack.close()


def inline(conn: psycopg.Connection) -> Side:
    """A ``Side`` that runs everything on ``conn``, in the caller's thread."""
    return Side(conn)


class Ahead:
    """The rows of a statement sent ahead on the request's own connection (``ahead``)."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: psycopg.Cursor[Any] | None) -> None:
        self._cursor = cursor

    def rows(self) -> Rows:
        return self._cursor.fetchall() if self._cursor is not None else []


@contextmanager
def ahead(conn: psycopg.Connection, query: Any, params: dict[str, Any],
          skip: bool = False) -> Iterator[Ahead]:
    """Send a statement on ``conn`` and go on while the server runs it: the connection is
    in pipeline mode inside the block, and ``rows()`` waits for the rows (leaving the block
    takes what was not read). With ``skip`` nothing is sent and ``rows()`` is empty.

    For a statement whose rows are needed only after some work of the caller's own (Apache
    Kafka: ``find_files`` reads its candidates' facts while computing their other
    features)."""
    if skip:
        yield Ahead(None)
        return
    with conn.pipeline():
        yield Ahead(conn.execute(query, params))
