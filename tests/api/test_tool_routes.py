"""The REST tool routes are made from the registry: one ``POST /v1/<tool>`` per tool, its
body the tool's argument model, so OpenAPI keeps a schema per tool; its answer is documented
as a JSON object (the route returns it already written as JSON)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from codenav.tools import TOOLS
from codenav_api.routes.tools import answer_json, router


def test_every_tool_is_a_post_route_whose_openapi_body_is_its_model() -> None:
    app = FastAPI()
    app.include_router(router)
    spec = app.openapi()
    assert set(spec["paths"]) == {f"/v1/{t.name}" for t in TOOLS.values()}
    for tool in TOOLS.values():
        body = spec["paths"][f"/v1/{tool.name}"]["post"]["requestBody"]
        ref = body["content"]["application/json"]["schema"]["$ref"]
        assert ref.rsplit("/", 1)[-1] == tool.args.__name__
        answer = spec["paths"][f"/v1/{tool.name}"]["post"]["responses"]["200"]
        assert answer["content"]["application/json"]["schema"]["type"] == "object"
    search = spec["components"]["schemas"]["SearchArgs"]["properties"]
    assert search["limit"]["default"] == 10 and search["limit"]["maximum"] == 50
    assert spec["components"]["schemas"]["SearchArgs"]["additionalProperties"] is False


def test_an_answer_is_written_as_the_response_model_wrote_it() -> None:
    """Valid JSON whatever floats it holds (NaN and infinities as null, as FastAPI's
    ``dict[str, Any]`` response model wrote them), text as UTF-8, key order kept."""
    import json

    from pydantic import TypeAdapter

    answer: dict[str, Any] = {"results": [{"path": "src/é.py", "score": float("nan")}],
                              "match_confidence": float("inf"), "n": 3, "empty": None,
                              "tags": ("a", "b")}
    response = answer_json(answer)
    assert response.media_type == "application/json"
    assert response.body == TypeAdapter(dict[str, Any]).dump_json(answer)
    assert json.loads(response.body)["results"][0] == {"path": "src/é.py", "score": None}
