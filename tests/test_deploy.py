"""The team-mode deployment files, checked without a Docker engine.

docker-compose.yml and deploy/compose.production.yml are parsed with PyYAML, the Dockerfiles
and .dockerignore with the small parsers below; every entrypoint the images and compose run
is looked up in the package its image installs and started natively with ``--help``; the
worker's and watcher's healthchecks run against a real Redis (and Postgres).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field, fields
from functools import cache
from itertools import takewhile
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from rq import Worker

from codenav.config import Settings

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
OVERLAY = ROOT / "deploy" / "compose.production.yml"
ENV_EXAMPLE = ROOT / "deploy" / ".env.example"
DOCKERIGNORE = ROOT / ".dockerignore"
DOCKERFILES = sorted(ROOT.glob("services/*/Dockerfile"))
MCP_EXAMPLES = sorted((ROOT / "deploy").glob("mcp-client*.example.json"))

SERVICES = {"store", "queue", "embedder", "migrate", "api", "worker", "embed-worker", "watcher"}
ONE_SHOT = {"migrate", "seed"}
OPTIONAL = {"seed"}
"""Services of a compose profile: started only when asked for (`--profile seed`)."""
SECRET_WORDS = ("PASSWORD", "SECRET", "TOKEN", "AUTH", "KEY")
PYTHONS = ("python", "python3")

_INTERPOLATION = re.compile(
    r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")


# --- compose -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ref:
    """One ``${NAME...}`` in a compose file."""

    name: str
    op: str | None
    arg: str

    @property
    def required(self) -> bool:
        return self.op == ":?" and bool(self.arg.strip())


def _refs(text: str) -> list[Ref]:
    text = text.replace("$$", "")  # an escaped dollar is no interpolation
    return [Ref(m["name"] or m["bare"], m["op"], m["arg"] or "")
            for m in _INTERPOLATION.finditer(text)]


def _secret(name: str) -> bool:
    return any(word in name.upper() for word in SECRET_WORDS)


class _StrictLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys without a word; docker compose refuses the
    file. This loader refuses it too."""


def _no_duplicate_keys(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)  # resolve `<<:` merges first: they may repeat keys
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        assert key not in seen, f"duplicate key {key!r} at line {key_node.start_mark.line + 1}"
        seen.add(key)
    return dict(loader.construct_pairs(node, deep=True))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _no_duplicate_keys)


@cache
def _compose(path: Path = COMPOSE) -> dict[str, Any]:
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_StrictLoader)
    assert isinstance(data, dict), f"{path.name} is not a mapping"
    return data


def _values(node: Any) -> list[str]:
    """Every string value in a parsed compose file: what compose interpolates (not comments)."""
    if isinstance(node, dict):
        return [v for child in node.values() for v in _values(child)]
    if isinstance(node, list):
        return [v for child in node for v in _values(child)]
    return [node] if isinstance(node, str) else []


def _compose_refs(path: Path) -> list[Ref]:
    return [ref for value in _values(_compose(path)) for ref in _refs(value)]


def _service(name: str) -> dict[str, Any]:
    service: dict[str, Any] = _compose()["services"][name]
    return service


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def _env_example() -> dict[str, str]:
    values = {}
    for raw in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def _interpolate(text: str, env: dict[str, str] | None = None) -> str:
    """What compose makes of a value, with ``.env.example`` as the environment by default."""
    env = _env_example() if env is None else env

    def one(match: re.Match[str]) -> str:
        name = match["name"] or match["bare"]
        op, arg, value = match["op"] or "", match["arg"] or "", env.get(name)
        present = value is not None and (value != "" or not op.startswith(":"))
        if op.endswith("?") and not present:
            raise AssertionError(f"compose would refuse to start: {name}: {arg}")
        if op.endswith("-") and not present:
            return arg
        if op.endswith("+"):
            return arg if present else ""
        return value or ""

    return "$".join(_INTERPOLATION.sub(one, part) for part in text.split("$$"))


def _argv(command: str | list[str]) -> list[str]:
    """A compose command as the process's argv: interpolated, then split like sh does."""
    if isinstance(command, str):
        return shlex.split(_interpolate(command))
    return [_interpolate(str(a)) for a in command]


def _split_volume(spec: str) -> list[str]:
    """``src:dst[:mode]``, not splitting on the colons inside ``${...}``."""
    parts, depth, current = [], 0, ""
    for i, char in enumerate(spec):
        if char == "{" and spec[i - 1:i] == "$":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        if char == ":" and not depth:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _volumes(service: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(source, target, read_only) for each volume, short or long syntax."""
    result = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            result.append((str(volume.get("source", "")), str(volume["target"]),
                           bool(volume.get("read_only"))))
        else:
            source, target, *mode = _split_volume(volume)
            result.append((source, target, "ro" in ",".join(mode).split(",")))
    return result


def _healthcheck_argv(service: dict[str, Any]) -> list[str]:
    test = service["healthcheck"]["test"]
    if isinstance(test, str):
        return ["CMD-SHELL", test]
    return [str(part) for part in test]


def _python_c(argv: list[str]) -> str | None:
    """The code of a ``python -c CODE`` healthcheck, if it is one."""
    if len(argv) == 4 and argv[0] == "CMD" and argv[1] in PYTHONS and argv[2] == "-c":
        return argv[3]
    return None


# --- Dockerfiles ---------------------------------------------------------------------------

@dataclass
class Dockerfile:
    path: Path
    instructions: list[tuple[str, str]]
    copies: list[tuple[str, str]] = field(default_factory=list)
    """(image path, repository path) for each COPY or ADD source."""

    @property
    def service(self) -> str:
        return self.path.parent.name

    def args(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]

    def command(self) -> list[str]:
        entrypoint = [_exec_form(a) for a in self.args("ENTRYPOINT")]
        cmd = [_exec_form(a) for a in self.args("CMD")]
        return (entrypoint[-1] if entrypoint else []) + (cmd[-1] if cmd else [])

    def installed(self) -> list[tuple[Path, str]]:
        """(repository folder, extras) for every local path ``pip install`` installs."""
        found = []
        for run in self.args("RUN"):
            if "pip install" not in run:
                continue
            for token in shlex.split(run):
                match = re.fullmatch(r"(/[^\[\s]+?)/?(\[[^\]]*\])?", token)
                if not match:
                    continue
                for image_path, repo_path in self.copies:
                    if match[1] == image_path or match[1].startswith(image_path + "/"):
                        local = repo_path + match[1][len(image_path):]
                        found.append((ROOT / local, (match[2] or "").strip("[]")))
        return found


def _exec_form(args: str) -> list[str]:
    if args.lstrip().startswith("["):
        return [str(a) for a in json.loads(args)]
    return ["/bin/sh", "-c", args]


def _parse_dockerfile(path: Path) -> Dockerfile:
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue  # comments may sit between continuation lines too
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        pending = ""
    assert not pending, f"{path}: the last instruction ends with a backslash"
    dockerfile = Dockerfile(path, instructions)
    for args in dockerfile.args("COPY") + dockerfile.args("ADD"):
        parts = [p for p in _copy_args(args) if not p.startswith("--")]
        *sources, dest = parts
        for source in sources:
            dockerfile.copies.append((dest.rstrip("/"), source.rstrip("/")))
    return dockerfile


def _copy_args(args: str) -> list[str]:
    if args.lstrip().startswith("["):
        return [str(a) for a in json.loads(args)]
    return shlex.split(args)


@cache
def _dockerfiles() -> dict[str, Dockerfile]:
    return {path.parent.name: _parse_dockerfile(path) for path in DOCKERFILES}


def _built_here(service_name: str) -> bool:
    """Whether the service runs an image built from this repository (not store or queue)."""
    services = _compose()["services"]
    image = services[service_name].get("image")
    return any(s.get("build") and (s is services[service_name] or s.get("image") == image)
               for s in services.values())


def _dockerfile_of(service_name: str) -> Dockerfile:
    """The Dockerfile a compose service builds, or the one that builds the image it runs."""
    services = _compose()["services"]
    service = services[service_name]
    build = service.get("build")
    if build is None:
        builders = [s for s in services.values() if s.get("build") and
                    s.get("image") == service.get("image")]
        assert builders, f"{service_name}: no build and no service builds its image"
        build = builders[0]["build"]
    if isinstance(build, str):
        build = {"context": build}
    path = (COMPOSE.parent / build["context"] / build.get("dockerfile", "Dockerfile")).resolve()
    return _dockerfiles()[path.parent.name]


def _ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                regex, i = regex + pattern[i:end + 1], end + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        rules.append((negate, re.compile(regex + "(?:/.*)?")))  # a match excludes its subtree
    return rules


def _ignored(relative: str) -> bool:
    excluded = False
    for negate, rule in _ignore_rules():
        if rule.fullmatch(relative):
            excluded = not negate
    return excluded


# --- packages and entrypoints ---------------------------------------------------------------

def _scripts(folder: Path) -> dict[str, str]:
    project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(project.get("project", {}).get("scripts", {}))


@dataclass(frozen=True)
class Entrypoint:
    """What a command runs: ``python -m module`` or a console script, and its arguments."""

    module: str | None
    script: str | None
    rest: tuple[str, ...]

    @classmethod
    def of(cls, argv: list[str]) -> Entrypoint:
        if argv[0] in PYTHONS:
            assert argv[1] == "-m", f"{argv}: python without -m runs no package entrypoint"
            return cls(argv[2], None, tuple(argv[3:]))
        return cls(None, argv[0], tuple(argv[1:]))

    def resolve(self, folders: list[Path]) -> str:
        """Where it lives among the installed folders; fails when it is in none."""
        if self.module:
            path = Path(*self.module.split("."))
            for folder in folders:
                if (folder / path / "__main__.py").is_file() or \
                        (folder / path.with_suffix(".py")).is_file():
                    return f"{folder.relative_to(ROOT)}/{path}"
            raise AssertionError(f"no module {self.module} in {folders}")
        for folder in folders:
            if self.script in _scripts(folder):
                return _scripts(folder)[str(self.script)]
        raise AssertionError(f"no console script {self.script} declared in {folders}")

    def help_argv(self, folders: list[Path]) -> list[str]:
        """This entrypoint run natively with --help after its leading subcommands."""
        subcommands = list(takewhile(lambda a: not a.startswith("-"), self.rest))
        if self.module:
            return [sys.executable, "-m", self.module, *subcommands, "--help"]
        module, _, func = self.resolve(folders).partition(":")
        code = f"import sys; from {module} import {func}; sys.exit({func}())"
        return [sys.executable, "-c", code, *subcommands, "--help"]

    def flags(self) -> list[str]:
        return [a.split("=", 1)[0] for a in self.rest if a.startswith("--")]


def _commands() -> dict[str, tuple[Entrypoint, Dockerfile]]:
    """Every Python entrypoint the images and the compose file start, by where it is set."""
    found = {}
    for name, dockerfile in _dockerfiles().items():
        found[f"{name}/Dockerfile CMD"] = (Entrypoint.of(dockerfile.command()), dockerfile)
    for name, service in _compose()["services"].items():
        if "command" in service and _built_here(name):
            dockerfile = _dockerfile_of(name)
            found[f"compose {name}"] = (Entrypoint.of(_argv(service["command"])), dockerfile)
    return found


COMMANDS = _commands()


def _native_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}


# --- the compose file ----------------------------------------------------------------------

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


def test_codenav_variables_given_to_containers_are_settings_or_read_by_the_healthcheck() -> None:
    from codenav_embedder.settings import PREFIX, EmbedderSettings

    known = {"CODENAV_" + f.name.upper() for f in fields(Settings)}
    known |= {PREFIX + f.name.upper() for f in fields(EmbedderSettings)}
    for name, service in _compose()["services"].items():
        health = " ".join(_healthcheck_argv(service)) if "healthcheck" in service else ""
        for key in _environment(service):
            if key.startswith("CODENAV_"):
                assert key in known or key in health, f"{name}: nothing reads {key}"


# --- worker and watcher healthchecks against real services ---------------------------------

def _run_healthcheck(service: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = _python_c(_healthcheck_argv(_service(service)))
    assert code is not None
    return subprocess.run([sys.executable, "-c", code], env={**_native_env(), **env},
                          capture_output=True, text=True, timeout=60, check=False,
                          cwd=ROOT / "tests")


def test_worker_healthcheck_passes_only_while_a_worker_of_this_host_is_registered(
        redis_url: str) -> None:
    env = {"CODENAV_REDIS_URL": redis_url}
    assert _run_healthcheck("worker", env).returncode != 0
    conn = redis.Redis.from_url(redis_url)
    other = Worker(["codenav-index"], connection=conn, name="elsewhere")
    other.register_birth()
    conn.hset(other.key, "hostname", "another-container")
    assert _run_healthcheck("worker", env).returncode != 0
    mine = Worker(["codenav-index"], connection=conn, name="here")
    assert mine.hostname == socket.gethostname()
    mine.register_birth()
    try:
        result = _run_healthcheck("worker", env)
        assert result.returncode == 0, result.stderr
        conn.delete(mine.key)  # what the key's expiry does once the heartbeat stops
        assert _run_healthcheck("worker", env).returncode != 0
    finally:
        mine.register_death()
        other.register_death()


@pytest.mark.slow
def test_watcher_healthcheck_follows_the_sidecar_heartbeat(settings: Settings,
                                                          service_env: dict[str, str]) -> None:
    argv = _healthcheck_argv(_service("watcher"))
    assert argv[-3:] == ["-m", "codenav_watcher", "--check"]
    check = [sys.executable, "-m", "codenav_watcher", "--check"]
    assert subprocess.run(check, env=service_env, timeout=60).returncode == 1  # none running
    watcher = subprocess.Popen([sys.executable, "-m", "codenav_watcher"], env=service_env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(check, env=service_env, timeout=60).returncode != 0:
            assert time.monotonic() < deadline, "no heartbeat from a running watcher"
            assert watcher.poll() is None
    finally:
        watcher.terminate()
        watcher.wait(30)


# --- Dockerfiles ---------------------------------------------------------------------------

def test_every_service_with_an_entrypoint_has_a_dockerfile() -> None:
    assert set(_dockerfiles()) >= {"api", "worker", "watcher", "adapter"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_dockerfile_copies_sources_that_exist_and_the_build_context_keeps(
        dockerfile: Path) -> None:
    parsed = _parse_dockerfile(dockerfile)
    assert parsed.copies, "copies nothing"
    for _, source in parsed.copies:
        local = ROOT / source
        assert local.exists(), f"COPY {source}: not in the repository"
        files = [local] if local.is_file() else [
            p for p in local.rglob("*") if p.is_file() and p.suffix in (".py", ".sql", ".toml")
            and "__pycache__" not in p.parts and ".egg-info" not in str(p)]
        assert files, f"COPY {source}: nothing to build"
        for path in files:
            relative = path.relative_to(ROOT).as_posix()
            assert not _ignored(relative), f"{relative} is excluded by .dockerignore"


def test_dockerignore_keeps_the_virtualenv_git_caches_and_secrets_out_of_the_context() -> None:
    for path in (".venv/bin/python", ".git/HEAD", ".env", "bench/out/run.json",
                 "services/core/codenav/__pycache__/cli.cpython-311.pyc",
                 "services/api/codenav_api.egg-info/PKG-INFO", ".pytest_cache/v/x"):
        assert _ignored(path), f"{path} is sent to the build"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_images_are_python_slim_unbuffered_and_run_as_a_non_root_user(dockerfile: Path) -> None:
    parsed = _parse_dockerfile(dockerfile)
    assert parsed.args("FROM") == ["python:3.11-slim"]
    assert any("PYTHONUNBUFFERED=1" in env for env in parsed.args("ENV"))
    keywords = [kw for kw, _ in parsed.instructions]
    users = parsed.args("USER")
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert max(i for i, kw in enumerate(keywords) if kw == "USER") < keywords.index("CMD")


@pytest.mark.parametrize(("service", "core_extras"), [
    ("api", "server"), ("worker", "server"), ("watcher", "server"), ("adapter", "")])
def test_images_install_the_core_and_their_own_service_only(service: str,
                                                            core_extras: str) -> None:
    parsed = _dockerfiles()[service]
    installed = {folder.relative_to(ROOT).as_posix(): extras
                 for folder, extras in parsed.installed()}
    assert installed == {"services/core": core_extras, f"services/{service}": ""}
    assert all("--no-cache-dir" in run for run in parsed.args("RUN") if "pip install" in run)


@pytest.mark.parametrize("service", ["worker", "watcher"])
def test_worker_and_watcher_images_have_git(service: str) -> None:
    runs = " ".join(_dockerfiles()[service].args("RUN"))
    assert re.search(r"apt-get install [^&]*\bgit\b", runs)


def test_only_the_api_image_exposes_a_port_and_it_is_the_one_compose_publishes() -> None:
    assert _dockerfiles()["api"].args("EXPOSE") == ["8765"]
    for name in ("worker", "watcher", "adapter"):
        assert not _dockerfiles()[name].args("EXPOSE"), name


# --- entrypoints ---------------------------------------------------------------------------

@pytest.mark.parametrize("where", sorted(COMMANDS))
def test_entrypoint_names_a_module_or_script_that_its_image_installs(where: str) -> None:
    entrypoint, dockerfile = COMMANDS[where]
    entrypoint.resolve([folder for folder, _ in dockerfile.installed()])


@pytest.mark.parametrize("where", sorted(COMMANDS))
def test_entrypoint_starts_natively_and_prints_its_usage(where: str, tmp_path: Path) -> None:
    entrypoint, dockerfile = COMMANDS[where]
    argv = entrypoint.help_argv([folder for folder, _ in dockerfile.installed()])
    result = subprocess.run(argv, env=_native_env(), cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "usage:" in output.lower() or f"-m {entrypoint.module}" in output, output
    for flag in entrypoint.flags():
        assert flag in output, f"{where}: {flag} is not an option of {argv}"


# --- .env.example, the production overlay, MCP client examples ------------------------------


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


# --- the seed profile and its image -----------------------------------------------------------

SEED_DOCKERFILE = ROOT / "deploy" / "Dockerfile.seed"


def test_the_seed_profile_imports_the_seed_images_snapshot_once_after_migrate() -> None:
    from codenav.cli import build_parser, cmd_snapshot

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
