""".env.example, the production overlay and the MCP client examples."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from codenav.config import Settings
from tests.deploy.deploykit import (
    COMPOSE,
    ENV_EXAMPLE,
    MCP_EXAMPLES,
    ONE_SHOT,
    OVERLAY,
    ROOT,
    SERVICES,
    _compose,
    _compose_refs,
    _env_example,
    _scripts,
    _secret,
)


def test_env_example_covers_every_variable_the_compose_files_read() -> None:
    example = _env_example()
    for path in (COMPOSE, OVERLAY):
        for ref in _compose_refs(path):
            assert ref.name in example, f"{path.name} reads {ref.name}; .env.example lacks it"


def test_env_example_secrets_are_placeholders_with_a_way_to_generate_them() -> None:
    text = ENV_EXAMPLE.read_text(encoding="utf-8")
    assert "openssl rand" in text
    secrets = {k: v for k, v in _env_example().items() if _secret(k)}
    assert secrets
    for key, value in secrets.items():
        assert "CHANGE-ME" in value, f"{key} looks like a real secret"
        assert re.fullmatch(r"[A-Za-z0-9._-]+", value), f"{key} would break the URLs"


def test_production_overlay_restarts_limits_and_rotates_logs_of_existing_services() -> None:
    overlay = _compose(OVERLAY)["services"]
    assert SERVICES <= set(overlay) <= set(_compose()["services"])
    for name, service in overlay.items():
        logging = service["logging"]
        assert logging["driver"] == "json-file", name
        assert {"max-size", "max-file"} <= set(logging["options"]), name
        if name in ONE_SHOT:
            assert service["restart"] == "no", name
            continue
        assert service["restart"] in ("unless-stopped", "always"), name
        limits = service["deploy"]["resources"]["limits"]
        assert limits.get("memory") and limits.get("cpus"), name


@pytest.mark.parametrize("example", MCP_EXAMPLES, ids=lambda p: p.name)
def test_mcp_client_example_runs_the_adapter_with_settings_it_reads(example: Path) -> None:
    server = json.loads(example.read_text(encoding="utf-8"))["mcpServers"]["codenav"]
    if server["command"] == "docker":
        args = server["args"]
        assert args[:3] == ["run", "-i", "--rm"]
        adapter_image = args[-1]
        assert adapter_image in (ROOT / "services/adapter/Dockerfile").read_text()
        passed = {args[i + 1] for i, a in enumerate(args) if a == "-e"}
        assert passed == set(server["env"])
    else:
        assert server["command"] in _scripts(ROOT / "services/adapter")
    from codenav_embedder.settings import PREFIX, EmbedderSettings

    known = {"CODENAV_" + f.name.upper() for f in fields(Settings)}
    known |= {PREFIX + f.name.upper() for f in fields(EmbedderSettings)}
    assert {"CODENAV_URL", "CODENAV_TOKEN"} <= set(server["env"]) <= known
