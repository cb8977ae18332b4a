"""Parsers for the team-mode deployment files, checked without a Docker engine: the compose
files (PyYAML, strict about repeated keys), the Dockerfiles and .dockerignore, and the
entrypoints the images and compose run (looked up in the package its image installs).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cache
from itertools import takewhile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
OVERLAY = ROOT / "deploy" / "compose.production.yml"
ENV_EXAMPLE = ROOT / "deploy" / ".env.example"
DOCKERIGNORE = ROOT / ".dockerignore"
DOCKERFILES = sorted(ROOT.glob("services/*/Dockerfile"))
MCP_EXAMPLES = sorted((ROOT / "deploy").glob("mcp-client*.example.json"))

SERVICES = {"store", "queue", "embedder", "migrate", "api", "worker", "overlay-worker",
            "embed-worker", "watcher"}
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

