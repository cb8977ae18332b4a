"""Property-based fuzzing of the REST API from its OpenAPI schema (schemathesis): schema-true
and schema-violating requests to every operation, strings drawn with NUL bytes allowed and
lone surrogates mixed in, give no server error. Bounded: a few dozen examples per operation,
on a real uvicorn server with an indexed repository and an admin token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.core import NOT_SET
from schemathesis.generation import GenerationMode

from codenav import repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.index import reconcile
from tests.polyglot import make_polyglot
from tests.teamkit import serve

EXAMPLES = {GenerationMode.POSITIVE: 25, GenerationMode.NEGATIVE: 10}
SURROGATES = ("\ud800", "\udfff", "a\udc80b")


@pytest.fixture
def api(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> Iterator[tuple[str, str]]:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    token, _ = create_token(conn, "fuzz", "admin")
    with serve(settings) as url:
        yield url, token


def _mix(value: Any, data: st.DataObject) -> Any:
    """``value`` with lone surrogates put into some of its strings."""
    if isinstance(value, str):
        if data.draw(st.booleans(), label="surrogate"):
            return value + data.draw(st.sampled_from(SURROGATES))
        return value
    if isinstance(value, dict):
        return {k: _mix(v, data) for k, v in value.items()}
    if isinstance(value, list):
        return [_mix(v, data) for v in value]
    return value


def _payload(body: Any) -> bytes | None:
    """The request body as sent: JSON with escapes (so a lone surrogate survives), raw
    bytes as they are (schema-violating cases may be no JSON at all)."""
    if body is NOT_SET:
        return None
    if isinstance(body, bytes):
        return body
    return json.dumps(body, default=lambda o: o.decode("latin-1")).encode()


def test_fuzzing_every_operation_with_nul_and_invalid_unicode_finds_no_server_error(
        api: tuple[str, str]) -> None:
    url, token = api
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    assert schema.config.generation.allow_x00  # NUL bytes are in the string alphabet
    headers = {"Authorization": f"Bearer {token}"}
    http = httpx.Client(base_url=url, timeout=30)
    errors: list[str] = []
    calls = {"n": 0, "nul": 0, "surrogate": 0}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20
    for operation in operations:
        for mode, examples in EXAMPLES.items():
            if operation.path == "/v1/repos/{name}" and operation.method.upper() == "DELETE":
                continue  # deleting the one repository would leave later cases nothing

            @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
            def run(case: Any, data: st.DataObject) -> None:
                if isinstance(case.body, dict | list | str):
                    case.body = _mix(case.body, data)
                text = repr((case.body, case.path_parameters, case.query))
                calls["nul"] += "\\x00" in text
                calls["surrogate"] += any(s.encode("unicode_escape").decode() in text
                                          for s in SURROGATES)
                # sent as the JSON text itself: a lone surrogate travels escaped (\\ud800)
                content = _payload(case.body)
                response = http.request(case.method, case.formatted_path, params=case.query,
                                        content=content, headers={
                                            **headers, "content-type": "application/json"})
                calls["n"] += 1
                if response.status_code >= 500:
                    errors.append(f"{case.method} {case.formatted_path} {text[:200]}: "
                                  f"{response.status_code} {response.text[:200]}")

            try:
                run()
            except Unsatisfiable:  # nothing violates a schema without parameters
                assert mode is GenerationMode.NEGATIVE, operation.path
    http.close()
    assert calls["n"] > 400 and calls["nul"] > 20 and calls["surrogate"] > 20, calls
    assert not errors, "\n".join(errors[:10])
