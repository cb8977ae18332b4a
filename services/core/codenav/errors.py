"""Every exception codenav raises on purpose, in one tree.

    CodenavError
    ├── ConfigError              a setting is missing or malformed (fail at start-up)
    ├── UserError                the caller can fix it; the API answers 4xx
    │   ├── InvalidRequest       400: malformed query, bad argument, path outside the repo
    │   ├── Unauthorized         401: missing, unknown, revoked or expired token
    │   ├── Forbidden            403: the token's role, team or grants do not allow it; an
    │   │                             origin or a repository root that is not allowed
    │   ├── NotFound             404: unknown repo, path or symbol
    │   ├── Conflict             409: the request needs what the server does not hold yet
    │   │                             (a publish whose contents were not all sent)
    │   ├── Gone                 410: what the caller made is no longer there (an expired
    │   │                             overlay): make it again
    │   └── RateLimited          429: the token made too many calls; retry after the
    │                                 seconds it says (``Retry-After``)
    ├── SchemaMismatch           the database was built by another schema version
    ├── Unavailable              a dependency (database, queue, API, embedder) is unreachable
    │   └── Busy                 it answered too late for the time budget of the request
    └── Interrupted              work stopped before its end because its process is stopping
                                 (a shutdown); it is queued again and resumes

A subclass names its HTTP status and error code in its header:
``class NotFound(UserError, status=404, code="not_found")``.

Each error carries a one-line ``message`` and an optional ``hint`` (what to do next), so the
CLI prints two clear lines and the API a JSON body, never a traceback.
"""

from __future__ import annotations

import math


class CodenavError(Exception):
    status = 500
    code = "internal"

    def __init_subclass__(cls, *, status: int | None = None, code: str | None = None) -> None:
        super().__init_subclass__()
        if status is not None:
            cls.status = status
        if code is not None:
            cls.code = code

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, str]:
        body = {"error": self.code, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        return body

    def headers(self) -> dict[str, str]:
        """HTTP headers the API's answer carries with this error."""
        return {}


class ConfigError(CodenavError, code="config"):
    """A setting is missing or malformed: fail at start-up."""


class UserError(CodenavError, status=400, code="invalid_request"):
    """The caller can fix it; the API answers 4xx."""


class InvalidRequest(UserError, status=400, code="invalid_request"):
    """Malformed query, bad argument, path outside the repository."""


class Unauthorized(UserError, status=401, code="unauthorized"):
    """Missing, unknown, revoked or expired token."""


class Forbidden(UserError, status=403, code="forbidden"):
    """The token's role, team or grants do not allow it; a root that is not allowed."""


class NotFound(UserError, status=404, code="not_found"):
    """Unknown repository, path or symbol."""


class Conflict(UserError, status=409, code="conflict"):
    """The request needs what the server does not hold yet."""


class Gone(UserError, status=410, code="gone"):
    """A thing the caller made that is no longer there (an expired overlay): make it again."""


class RateLimited(UserError, status=429, code="rate_limited"):
    """The token made more calls than its limit allows (``codenav.ratelimit``)."""

    def __init__(self, message: str, *, retry_after_s: float, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retry_after_s = retry_after_s

    def to_dict(self) -> dict[str, str]:
        # the header counts whole seconds; the body says how long exactly
        return {**super().to_dict(), "retry_after_s": f"{self.retry_after_s:.3f}"}

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(max(1, math.ceil(self.retry_after_s)))}


class SchemaMismatch(CodenavError, status=503, code="schema_mismatch"):
    """The database was built by another schema version."""


class Unavailable(CodenavError, status=503, code="unavailable"):
    """A dependency (database, queue, API, embedder) is unreachable."""


class Busy(Unavailable, code="busy"):
    """It answered too late for the time budget of the request."""


class Interrupted(CodenavError, status=503, code="interrupted"):
    """Work stopped because its process is stopping; it is queued again and resumes."""


class ProcessLost(CodenavError, code="process_lost"):
    """A forked process died on the same task again and again (killed each time)."""
