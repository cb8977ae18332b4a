"""The team compose file: services, dependencies, healthchecks, volumes, secrets, settings."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from codenav.config import Settings
from tests.deploy.deploykit import (
    COMPOSE,
    ONE_SHOT,
    OVERLAY,
    ROOT,
    SERVICES,
    _argv,
    _built_here,
    _compose,
    _compose_refs,
    _dockerfile_of,
    _env_example,
    _environment,
    _healthcheck_argv,
    _interpolate,
    _parse_dockerfile,
    _python_c,
    _refs,
    _secret,
    _service,
    _StrictLoader,
    _values,
    _volumes,
)


def test_compose_defines_the_team_services() -> None:
    assert set(_compose()["services"]) >= SERVICES


def test_the_strict_parse_refuses_a_repeated_key_as_compose_does() -> None:
    text = "services:\n  store: {image: a}\nservices:\n  queue: {image: b}\n"
    with pytest.raises(AssertionError, match="duplicate key 'services' at line 3"):
        yaml.load(text, Loader=_StrictLoader)


def test_every_dependency_is_a_defined_service() -> None:
    services = _compose()["services"]
    for name, service in services.items():
        assert set(service.get("depends_on") or {}) <= set(services), name


def test_api_and_worker_reach_the_embedder_service_by_default() -> None:
    embedder = _service("embedder")
    assert _argv(embedder["command"])[-2:] == ["--port", "8766"]
    for name in ("api", "worker", "embed-worker"):
        url = _interpolate(_environment(_service(name))["CODENAV_EMBED_URL"])
        assert url == "http://embedder:8766", name
    assert _dockerfile_of("embedder").service == "embedder"


def test_every_service_but_the_one_shot_migration_has_a_healthcheck() -> None:
    for name, service in _compose()["services"].items():
        if name in ONE_SHOT:
            continue
        assert _healthcheck_argv(service)[0] in ("CMD", "CMD-SHELL"), name
        assert not service["healthcheck"].get("disable"), name


def test_every_dependency_waits_for_health_or_for_migrate_to_succeed() -> None:
    for name, service in _compose()["services"].items():
        depends = service.get("depends_on") or {}
        assert isinstance(depends, dict), f"{name}: depends_on without conditions"
        for dependency, spec in depends.items():
            expected = ("service_completed_successfully" if dependency in ONE_SHOT
                        else "service_healthy")
            assert spec.get("condition") == expected, f"{name} -> {dependency}"
    for name in ("api", "worker", "embed-worker", "watcher"):
        assert set(_service(name)["depends_on"]) == {"store", "queue", "migrate"}, name


def test_migrate_runs_codenav_migrate_once_from_the_api_image_after_the_store() -> None:
    migrate = _service("migrate")
    assert _argv(migrate["command"]) == ["codenav", "migrate"]
    assert migrate.get("image") == _service("api").get("image")
    assert _dockerfile_of("migrate").service == "api"
    assert set(migrate["depends_on"]) == {"store"}
    assert migrate.get("restart", "no") == "no"


def test_api_serves_without_migrating_on_all_interfaces_and_publishes_its_port() -> None:
    api = _service("api")
    argv = _argv(api["command"])
    assert argv[:3] == ["python", "-m", "codenav_api"]
    assert "--no-migrate" in argv
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    port = argv[argv.index("--port") + 1] if "--port" in argv else "8765"
    assert api["ports"] == ["${CODENAV_API_PORT:-8765}:" + port]


def test_named_volumes_are_declared_and_hold_the_store_and_queue_data() -> None:
    declared = set(_compose().get("volumes") or {})
    for name, service in _compose()["services"].items():
        for source, _, _ in _volumes(service):
            if source and not source.startswith(("/", ".", "~", "$")):
                assert source in declared, f"{name}: volume {source} is not declared"
    store_targets = {t: s for s, t, _ in _volumes(_service("store"))}
    queue_targets = {t: s for s, t, _ in _volumes(_service("queue"))}
    assert store_targets["/var/lib/postgresql/data"] in declared
    assert queue_targets["/data"] in declared


def test_secrets_are_required_variables_without_defaults() -> None:
    for path in (COMPOSE, OVERLAY):
        for ref in _compose_refs(path):
            if _secret(ref.name):
                assert ref.required, f"{path.name}: {ref} must be ${{{ref.name}:?message}}"
    for name, service in _compose()["services"].items():
        for key, value in _environment(service).items():
            if _secret(key):
                refs = _refs(value)
                assert len(refs) == 1 and re.fullmatch(r"\$\{[^}]+\}", value), f"{name}.{key}"
                assert refs[0].required and _secret(refs[0].name), f"{name}.{key}"


def test_database_and_redis_urls_carry_the_required_secrets() -> None:
    env = _environment(_service("api"))
    for key, scheme, secret in (("CODENAV_DATABASE_URL", "postgresql", "CODENAV_DB_PASSWORD"),
                                ("CODENAV_REDIS_URL", "redis", "CODENAV_REDIS_PASSWORD")):
        url = env[key]
        match = re.fullmatch(scheme + r"://[^:@/]*:(?P<password>\$\{[^}]+\})@(?P<host>[^:/]+)"
                             r"(?::\d+)?/\w+", url)
        assert match, f"{key}={url}"
        (ref,) = _refs(match["password"])
        assert ref.name == secret and ref.required
        assert match["host"] in _compose()["services"]
    for name in ("migrate", "worker", "embed-worker", "watcher"):
        service_env = _environment(_service(name))
        assert service_env["CODENAV_DATABASE_URL"] == env["CODENAV_DATABASE_URL"], name
        assert service_env["CODENAV_REDIS_URL"] == env["CODENAV_REDIS_URL"], name


def test_worker_and_watcher_mount_the_repository_read_only_at_the_same_path() -> None:
    for name in ("worker", "watcher"):
        mounts = [(s, t, ro) for s, t, ro in _volumes(_service(name)) if s.startswith("${")]
        assert len(mounts) == 1, name
        source, target, read_only = mounts[0]
        (source_ref,), (target_ref,) = _refs(source), _refs(target)
        assert source_ref.name == target_ref.name == "CODENAV_REPO_PATH", name
        assert source_ref.required, name
        assert read_only, f"{name} mounts the repository writable"


def test_no_other_service_sees_the_repository() -> None:
    for name in SERVICES - {"worker", "watcher"}:
        assert not any("CODENAV_REPO_PATH" in s for s, _, _ in _volumes(_service(name))), name


def test_store_runs_a_pgvector_image() -> None:
    assert _service("store")["image"].startswith("pgvector/pgvector:")


def test_queue_never_evicts_and_appends_to_disk() -> None:
    argv = _argv(_service("queue")["command"])
    assert argv[0] == "redis-server"
    options = dict(zip(argv[1::2], argv[2::2], strict=True))
    assert options["--maxmemory-policy"] == "noeviction"
    assert options["--appendonly"] == "yes"
    assert options["--appendfsync"] == "everysec"
    assert options["--requirepass"] == _env_example()["CODENAV_REDIS_PASSWORD"]
    (ref,) = _refs(_service("queue")["command"].partition("--requirepass")[2])
    assert ref.name == "CODENAV_REDIS_PASSWORD" and ref.required


def test_store_and_queue_healthchecks_authenticate_against_the_real_server() -> None:
    store = " ".join(_healthcheck_argv(_service("store")))
    assert "pg_isready" in store and "-h 127.0.0.1" in store and "-U codenav" in store
    queue = _service("queue")
    check = " ".join(_healthcheck_argv(queue))
    assert "redis-cli" in check and "ping" in check and "PONG" in check
    authenticated = "REDISCLI_AUTH" in _environment(queue) or " -a " in check
    assert authenticated, "redis-cli must authenticate, or it only sees NOAUTH"


def test_api_healthcheck_asks_readyz_on_the_port_the_api_serves() -> None:
    code = _python_c(_healthcheck_argv(_service("api")))
    assert code is not None
    urls = re.findall(r"http://[^'\"]+", code)
    assert urls == ["http://127.0.0.1:8765/readyz"]
    routers = importlib.import_module("codenav_api.routes")
    paths = set()
    for module_file in Path(routers.__file__ or "").parent.glob("*.py"):
        module = importlib.import_module(f"codenav_api.routes.{module_file.stem}")
        router = getattr(module, "router", None)
        paths |= {getattr(route, "path", "") for route in getattr(router, "routes", [])}
    assert "/readyz" in paths


def test_healthcheck_code_imports_only_what_the_image_installs() -> None:
    for name, service in _compose()["services"].items():
        if "healthcheck" not in service:
            continue
        code = _python_c(_healthcheck_argv(service))
        if code is None:
            continue
        installed = [folder for folder, _ in _dockerfile_of(name).installed()]
        for node in ast.walk(ast.parse(code)):
            imports: list[tuple[str, str | None]]
            if isinstance(node, ast.Import):
                imports = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                imports = [(node.module or "", alias.name) for alias in node.names]
            else:
                continue
            for module_name, attribute in imports:
                spec = importlib.util.find_spec(module_name)
                assert spec is not None, f"{name}: no module {module_name}"
                if module_name.split(".")[0].startswith("codenav"):
                    origin = Path(spec.origin or "").resolve()
                    assert any(origin.is_relative_to(f) for f in installed), \
                        f"{name}: {module_name} is not installed in its image"
                if attribute:
                    module = importlib.import_module(module_name)
                    assert hasattr(module, attribute), f"{name}: {module_name}.{attribute}"


def test_containers_built_here_get_valid_settings_from_the_env_example() -> None:
    for name in _compose()["services"]:
        if name == "embedder":  # talks to neither store nor queue, so it holds no secrets
            assert not [k for k in _environment(_service(name)) if _secret(k)]
        elif _built_here(name):
            env = {k: _interpolate(v) for k, v in _environment(_service(name)).items()}
            settings = Settings.load(env=env, dotenv=ROOT / "deploy" / "no.env")
            assert settings.database_url.startswith("postgresql://codenav:CHANGE-ME"), name
            assert settings.redis_url.startswith("redis://:CHANGE-ME"), name


def test_compose_refuses_to_start_without_each_required_variable() -> None:
    values = _values(_compose())
    required = {ref.name for ref in _compose_refs(COMPOSE) if ref.required}
    assert {"CODENAV_DB_PASSWORD", "CODENAV_REDIS_PASSWORD", "CODENAV_REPO_PATH"} <= required
    for value in values:
        _interpolate(value)  # the example itself is complete
    for name in required:
        for missing in ({}, {name: ""}):
            env = {k: v for k, v in _env_example().items() if k != name} | missing
            with pytest.raises(AssertionError, match=name):
                for value in values:
                    _interpolate(value, env)


def test_every_variable_of_the_env_example_is_read_by_compose() -> None:
    """A variable `.env.example` offers that compose never passes on would be a knob that
    does nothing (the README once sent CODENAV_LOG_FORMAT there, and no container got it)."""
    read = {ref.name for ref in _compose_refs(COMPOSE)}
    assert set(_env_example()) - read == set()
    settings = {"CODENAV_" + f.name.upper() for f in fields(Settings)}
    for name in ("CODENAV_LOG_LEVEL", "CODENAV_LOG_FORMAT"):
        assert name in settings and name in _env_example()
        for service in ("api", "worker", "embed-worker", "watcher", "embedder"):
            assert name in _environment(_service(service)), (service, name)


def test_codenav_variables_given_to_containers_are_settings_or_read_by_the_healthcheck() -> None:
    from codenav_embedder.settings import PREFIX, EmbedderSettings

    known = {"CODENAV_" + f.name.upper() for f in fields(Settings)}
    known |= {PREFIX + f.name.upper() for f in fields(EmbedderSettings)}
    for name, service in _compose()["services"].items():
        health = " ".join(_healthcheck_argv(service)) if "healthcheck" in service else ""
        for key in _environment(service):
            if key.startswith("CODENAV_"):
                assert key in known or key in health, f"{name}: nothing reads {key}"


# --- the seed profile and its image -----------------------------------------------------------

SEED_DOCKERFILE = ROOT / "deploy" / "Dockerfile.seed"


def test_the_seed_profile_imports_the_seed_images_snapshot_once_after_migrate() -> None:
    from codenav_cli.cli import build_parser, cmd_snapshot

    seed = _service("seed")
    assert seed["profiles"] == ["seed"]  # `docker compose up` alone never runs it
    assert seed.get("restart", "no") == "no" and "healthcheck" not in seed
    assert set(seed["depends_on"]) == {"store", "migrate"}
    assert not seed.get("volumes"), "the import reads the snapshot, never a repository"
    assert _environment(seed) == _environment(_service("migrate"))
    argv = _argv(seed["command"])
    assert argv[:3] == ["codenav", "snapshot", "import"]
    args = build_parser().parse_args(argv[1:])  # the CLI the image ships takes it
    assert args.func is cmd_snapshot and args.skip_existing and args.local_roots
    assert _interpolate(seed["image"]) == "codenav/seed:local"
    assert _env_example()["CODENAV_SEED_IMAGE"] == "codenav/seed:local"
    # the seed image runs the same command on the snapshot it copies, from the api image
    parsed = _parse_dockerfile(SEED_DOCKERFILE)
    assert parsed.command() == argv
    assert args.file in [dest for dest, _ in parsed.copies]
    assert parsed.args("FROM") == ["${API_IMAGE}"]
    assert any(a == f"API_IMAGE={_interpolate(_service('api')['image'])}"
               for a in parsed.args("ARG"))
    users = parsed.args("USER")
    assert users and users[-1] not in ("root", "0")
