"""The Kubernetes manifests (deploy/k8s), rendered offline and compared with compose.

``render`` runs ``kubectl kustomize`` (kustomize is built into kubectl; no cluster is
needed) on a copy of deploy/k8s whose git-ignored ``base/secrets.env`` is made from the
committed example, as a user does. The ``*_mismatches`` functions each return what disagrees,
one sentence per disagreement, so a test asserts an empty list and a mutated copy shows the
sentences it produces.
"""

from __future__ import annotations

import math
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
COMPOSE = ROOT / "docker-compose.yml"
COMPOSE_PRODUCTION = ROOT / "deploy" / "compose.production.yml"
SECRETS_EXAMPLE = Path("base") / "secrets.env.example"
SECRETS_FILE = Path("base") / "secrets.env"
REPOSITORIES_CLAIM = "repositories"
SECRET_WORDS = ("PASSWORD", "SECRET", "TOKEN", "AUTH", "KEY")
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job")

LANES = {"worker": "index", "overlay-worker": "overlay", "embed-worker": "embed"}
"""The worker Deployments and the ``--lane`` each runs (compose has a service of the same
name for each lane)."""

K8S_ONLY_ENV = {
    ("store", "PGDATA"): "a volume's root holds lost+found, which initdb refuses",
    ("worker", "CODENAV_PARSE_PROCESSES"): "parser processes follow the pod's CPU limit",
}
"""Variables a pod needs and a compose container does not, with the reason."""

K8S_VALUES = {
    ("embedder", "CODENAV_EMBED_THREADS"): "resource:limits.cpu",
    ("worker", "CODENAV_PARSE_PROCESSES"): "resource:limits.cpu",
}
"""Values that differ from compose on purpose: os.cpu_count() in a pod counts the node's
CPUs, so the thread and process counts follow the pod's CPU limit instead."""
REPOSITORY_PATH_ENV = "CODENAV_ALLOWED_ROOTS"
"""Compose sets it to the checkout it mounts (``${CODENAV_REPO_PATH}``, no default); in a pod
it must be where the repositories volume is mounted."""

_INTERPOLATION = re.compile(
    r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")
_K8S_REF = re.compile(r"\$\((?P<name>[A-Za-z_][A-Za-z0-9_]*)\)")


def secret_name(name: str) -> bool:
    return any(word in name.upper() for word in SECRET_WORDS)


# --- rendering ------------------------------------------------------------------------------

def kustomizations(tree: Path = K8S) -> list[str]:
    """Every kustomization under ``tree`` that renders on its own (not the components),
    relative to ``tree``: ``.``, ``base``, ``overlays/...``."""
    found = []
    for path in sorted(tree.rglob("kustomization.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if doc.get("kind", "Kustomization") == "Kustomization":
            found.append(path.parent.relative_to(tree).as_posix())
    return found


def copy_tree(dest: Path, *, external_urls: bool = True) -> Path:
    """deploy/k8s copied to ``dest`` with ``base/secrets.env`` made from the example as the
    README says (with ``external_urls`` the two commented URLs are uncommented too)."""
    tree = dest / "k8s"
    shutil.copytree(K8S, tree, ignore=shutil.ignore_patterns(SECRETS_FILE.name))
    lines = (tree / SECRETS_EXAMPLE).read_text(encoding="utf-8").splitlines()
    if external_urls:
        lines = [re.sub(r"^#(CODENAV_\w+_URL=)", r"\1", line) for line in lines]
    (tree / SECRETS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tree


def kubectl() -> str:
    found = shutil.which("kubectl")
    assert found, "kubectl is needed to render the manifests (kustomize is built into it): " \
        "install the kubectl package"
    return found


def render(tree: Path, kustomization: str) -> list[dict[str, Any]]:
    """``kubectl kustomize`` of one kustomization: the objects ``kubectl apply -k`` sends."""
    result = subprocess.run([kubectl(), "kustomize", str(tree / kustomization)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"{kustomization}: {result.stderr.strip()[-2000:]}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


# --- rendered objects -----------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """One Deployment, StatefulSet or Job and its single container."""

    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def pod(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.obj["spec"]["template"]["spec"]
        return spec

    @property
    def container(self) -> dict[str, Any]:
        (container,) = self.pod["containers"]
        return dict(container)

    @property
    def argv(self) -> list[str]:
        return [str(a) for a in self.container.get("command", []) + self.container.get("args", [])]

    @property
    def env(self) -> list[dict[str, Any]]:
        return list(self.container.get("env", []))

    def env_names(self) -> list[str]:
        return [str(e["name"]) for e in self.env]

    def mounts(self, claim: str) -> list[dict[str, Any]]:
        """The container's mounts of the pod volume backed by PersistentVolumeClaim ``claim``."""
        volumes = {v["name"]: v for v in self.pod.get("volumes", [])
                   if v.get("persistentVolumeClaim", {}).get("claimName") == claim}
        return [{**m, "claim": volumes[m["name"]]["persistentVolumeClaim"]}
                for m in self.container.get("volumeMounts", []) if m["name"] in volumes]


def workloads(objects: list[dict[str, Any]]) -> dict[str, Workload]:
    return {o["metadata"]["name"]: Workload(o) for o in objects if o["kind"] in WORKLOAD_KINDS}


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def _generated(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    """A generated ConfigMap or Secret by its name in the manifests (kustomize adds a hash)."""
    for candidate, obj in by_kind(objects, kind).items():
        if candidate == name or re.fullmatch(re.escape(name) + r"-[a-z0-9]{10}", candidate):
            return obj
    return None


def resolved_env(objects: list[dict[str, Any]], workload: Workload) -> dict[str, str]:
    """Each variable's value as the pod sees it before ``$(VAR)`` expansion: literal, read
    from its ConfigMap, ``secret:KEY`` or ``resource:RESOURCE``."""
    out = {}
    for entry in workload.env:
        source = entry.get("valueFrom") or {}
        if "value" in entry:
            out[entry["name"]] = str(entry["value"])
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            config = {cm["metadata"]["name"]: cm for cm in by_kind(objects, "ConfigMap").values()}
            out[entry["name"]] = str(config[ref["name"]].get("data", {}).get(ref["key"]))
        elif "secretKeyRef" in source:
            out[entry["name"]] = "secret:" + source["secretKeyRef"]["key"]
        elif "resourceFieldRef" in source:
            out[entry["name"]] = "resource:" + source["resourceFieldRef"]["resource"]
    return out


# --- compose --------------------------------------------------------------------------------

def load_compose(path: Path = COMPOSE) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def compose_to_k8s(text: str) -> str:
    """What a compose value becomes in a pod: a secret ``${S:?...}`` is ``$(S)`` (the pod
    reads S from the Secret, then Kubernetes expands it), any other variable its default."""
    def one(match: re.Match[str]) -> str:
        name = match["name"] or match["bare"]
        if secret_name(name):
            return f"$({name})"
        op, arg = match["op"] or "", match["arg"] or ""
        return arg if op.endswith("-") else ""

    return "$".join(_INTERPOLATION.sub(one, part) for part in text.split("$$"))


def compose_secret_refs(text: str) -> set[str]:
    return {m["name"] or m["bare"] for m in _INTERPOLATION.finditer(text)
            if secret_name(m["name"] or m["bare"])}


def compose_argv(service: dict[str, Any]) -> list[str]:
    command = service.get("command")
    if command is None:
        return []
    if isinstance(command, str):
        return shlex.split(compose_to_k8s(command))  # compose interpolates, then splits
    return [compose_to_k8s(str(a)) for a in command]


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def compose_repo_mounts(service: dict[str, Any]) -> bool:
    return any("CODENAV_REPO_PATH" in str(v) for v in service.get("volumes") or [])


def duration_s(text: str | int) -> float:
    """A compose duration (``5s``, ``1m30s``, ``500ms``) in seconds."""
    if isinstance(text, int):
        return float(text)
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    assert parts and "".join(a + u for a, u in parts) == text, f"duration {text!r}"
    return sum(float(amount) * units[unit] for amount, unit in parts)


def quantity(text: str | int | float) -> float:
    """A Kubernetes or compose CPU or memory amount as a number (cores, bytes)."""
    value = str(text)
    binary = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
              "k": 2**10, "m": 2**20, "g": 2**30, "b": 1}  # compose's units are binary
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", value)
    assert match, f"quantity {text!r}"
    number, unit = float(match[1]), match[2]
    return number * binary[unit] if unit else number


def cpu(text: str | int | float) -> float:
    value = str(text)
    return float(value[:-1]) / 1000 if value.endswith("m") else float(value)


@dataclass(frozen=True)
class Counterparts:
    """Which compose service each Kubernetes workload runs, given the compose file."""

    compose: dict[str, Any]

    def service_name(self, workload: str) -> str | None:
        services = self.compose["services"]
        if workload in services:
            return workload
        if workload in LANES and "worker" in services:
            return "worker"  # compose without lanes yet: its one worker serves both
        return None

    def expected_argv(self, workload: str) -> list[str]:
        name = self.service_name(workload)
        assert name is not None
        argv = compose_argv(self.compose["services"][name])
        if workload in LANES and "--lane" not in argv:
            argv += ["--lane", LANES[workload]]
        return argv


# --- agreement with compose -----------------------------------------------------------------

def coverage_mismatches(objects: list[dict[str, Any]], compose: dict[str, Any]) -> list[str]:
    """Every compose service runs in the cluster (store and queue may be external; a
    service of a compose profile, such as ``seed``, is optional, and when a kustomization
    runs it, it is compared like the others)."""
    found = workloads(objects)
    external = "store" not in found
    out = []
    for service, spec in compose["services"].items():
        optional = bool(spec.get("profiles"))
        if service not in found and not optional and \
                not (external and service in ("store", "queue")):
            out.append(f"compose service {service} has no Deployment, StatefulSet or Job")
    for name in found:
        if Counterparts(compose).service_name(name) is None:
            out.append(f"workload {name} matches no compose service")
    return out


def image_and_command_mismatches(objects: list[dict[str, Any]],
                                 compose: dict[str, Any]) -> list[str]:
    pairs = Counterparts(compose)
    out = []
    for name, workload in workloads(objects).items():
        service_name = pairs.service_name(name)
        if service_name is None:
            continue
        service = compose["services"][service_name]
        image = compose_to_k8s(str(service.get("image", "")))
        if workload.container.get("image") != image:
            out.append(f"{name}: image {workload.container.get('image')}, compose has {image}")
        expected = pairs.expected_argv(name)
        if expected and workload.argv != expected:
            out.append(f"{name}: runs {workload.argv}, compose runs {expected}")
        if not expected and workload.argv:
            out.append(f"{name}: runs {workload.argv}, compose runs the image's own command")
    return out


def env_mismatches(objects: list[dict[str, Any]], compose: dict[str, Any]) -> list[str]:
    """The same variable names as compose, plus only the secrets compose interpolates (a pod
    reads them from the Secret to expand ``$(S)``) and the listed pod-only ones; the same
    values as compose's defaults, except the listed ones and, with external services, the
    URLs, which then come whole from the Secret."""
    pairs = Counterparts(compose)
    found = workloads(objects)
    external = "store" not in found
    out = []
    for name, workload in found.items():
        service_name = pairs.service_name(name)
        if service_name is None:
            continue
        service = compose["services"][service_name]
        env = compose_env(service)
        names = workload.env_names()
        if len(names) != len(set(names)):
            out.append(f"{name}: a variable is set twice: {names}")
        secrets = set().union(*(compose_secret_refs(v) for v in env.values()),
                              compose_secret_refs(str(service.get("command", ""))))
        allowed = set(env) | secrets | {v for (w, v) in K8S_ONLY_ENV if w == name}
        for missing in sorted(set(env) - set(names)):
            out.append(f"{name}: lacks {missing}, which compose sets")
        for extra in sorted(set(names) - allowed):
            out.append(f"{name}: sets {extra}, which compose does not")
        values = resolved_env(objects, workload)
        for key, compose_value in env.items():
            if key not in values:
                continue
            expected = K8S_VALUES.get((name, key), compose_to_k8s(compose_value))
            if key == REPOSITORY_PATH_ENV:
                expected = ",".join(sorted(repository_paths(objects))) or "(not mounted)"
            if external and key in ("CODENAV_DATABASE_URL", "CODENAV_REDIS_URL"):
                expected = f"secret:{key}"
            if values[key] != expected:
                out.append(f"{name}: {key}={values[key]!r}, compose gives {expected!r}")
        for key in secrets & set(values):
            if values[key] != f"secret:{key}":
                out.append(f"{name}: {key} does not come from the Secret")
    return out


def _http_check(argv: list[str]) -> tuple[int, str] | None:
    """(port, path) of a ``python -c "urllib...urlopen('http://127.0.0.1:PORT/PATH')"``."""
    match = re.search(r"urlopen\('http://127\.0\.0\.1:(\d+)(/[^']*)'", " ".join(argv))
    return (int(match[1]), match[2]) if match else None


def _port_number(workload: Workload, port: int | str) -> int | None:
    if isinstance(port, int):
        return port
    for declared in workload.container.get("ports", []):
        if declared.get("name") == port:
            return int(declared["containerPort"])
    return None


def probe_mismatches(objects: list[dict[str, Any]], compose: dict[str, Any]) -> list[str]:
    """Probes run compose's healthcheck on its schedule: each probe's period and timeout are
    the check's interval and timeout; readiness and liveness fail after its retries; the
    startup probe allows its start period, then the retries. An HTTP check becomes an
    httpGet readiness probe on the same port and path, with liveness (and start-up) on
    /healthz, so a database outage makes pods unready, never restarts them."""
    pairs = Counterparts(compose)
    out = []
    for name, workload in workloads(objects).items():
        service_name = pairs.service_name(name)
        if service_name is None:
            continue
        check = compose["services"][service_name].get("healthcheck")
        container = workload.container
        probes = {k: container.get(k) for k in ("startupProbe", "readinessProbe", "livenessProbe")}
        if check is None:
            if any(probes.values()):
                out.append(f"{name}: has probes, compose has no healthcheck")
            continue
        test = check["test"]
        argv = ["CMD-SHELL", test] if isinstance(test, str) else [str(t) for t in test]
        interval, timeout = duration_s(check["interval"]), duration_s(check["timeout"])
        retries = int(check["retries"])
        start = duration_s(check.get("start_period", "0s"))
        thresholds = {"startupProbe": math.ceil(start / interval) + retries,
                      "readinessProbe": retries, "livenessProbe": retries}
        http = _http_check(argv)
        for kind, probe in probes.items():
            if probe is None:
                out.append(f"{name}: no {kind}")
                continue
            if (probe.get("periodSeconds"), probe.get("timeoutSeconds"),
                    probe.get("failureThreshold")) != (interval, timeout, thresholds[kind]):
                out.append(f"{name}: {kind} every {probe.get('periodSeconds')}s, timeout "
                           f"{probe.get('timeoutSeconds')}s, {probe.get('failureThreshold')} "
                           f"failures; compose's check gives {interval:g}s, {timeout:g}s, "
                           f"{thresholds[kind]}")
            if http is not None:
                get = probe.get("httpGet") or {}
                path = http[1] if kind == "readinessProbe" else "/healthz"
                if (_port_number(workload, get.get("port", "")), get.get("path")) != \
                        (http[0], path):
                    out.append(f"{name}: {kind} asks {get.get('port')}{get.get('path')}, "
                               f"expected port {http[0]} {path}")
                continue
            expected = argv[1:] if argv[0] == "CMD" else ["sh", "-c", argv[1]]
            command = (probe.get("exec") or {}).get("command")
            if command != expected:
                out.append(f"{name}: {kind} runs {command}, compose checks {expected}")
    return out


def _url_port(url: str, default: int) -> tuple[str, int]:
    match = re.fullmatch(r"\w+://(?:[^@/]*@)?([^:/]+)(?::(\d+))?(?:/.*)?", url)
    assert match, url
    return match[1], int(match[2] or default)


def port_mismatches(objects: list[dict[str, Any]], compose: dict[str, Any]) -> list[str]:
    """Services reach the ports the processes listen on, and the ones compose uses: the api
    port compose publishes, the embedder's in CODENAV_EMBED_URL, the store's and queue's in
    the URLs."""
    found = workloads(objects)
    services = by_kind(objects, "Service")
    api_env = compose_env(compose["services"]["api"])
    expected = {"api": int(str(compose["services"]["api"]["ports"][0]).rsplit(":", 1)[1]),
                "embedder": _url_port(compose_to_k8s(api_env["CODENAV_EMBED_URL"]), 80)[1],
                "store": _url_port(api_env["CODENAV_DATABASE_URL"], 5432)[1],
                "queue": _url_port(api_env["CODENAV_REDIS_URL"], 6379)[1]}
    hosts = {"embedder": _url_port(compose_to_k8s(api_env["CODENAV_EMBED_URL"]), 80)[0],
             "store": _url_port(api_env["CODENAV_DATABASE_URL"], 5432)[0],
             "queue": _url_port(api_env["CODENAV_REDIS_URL"], 6379)[0]}
    out = []
    for name, port in expected.items():
        if name not in found:
            continue  # an external store or queue
        service = services.get(hosts.get(name, name))
        if service is None:
            out.append(f"no Service {hosts.get(name, name)} in front of {name}")
            continue
        labels = found[name].obj["spec"]["template"]["metadata"]["labels"]
        if not service["spec"].get("selector") or \
                any(labels.get(k) != v for k, v in service["spec"]["selector"].items()):
            out.append(f"Service {service['metadata']['name']} does not select the {name} pods")
        ports = service["spec"].get("ports", [])
        if [p["port"] for p in ports] != [port]:
            out.append(f"Service {service['metadata']['name']} serves {[p['port'] for p in ports]}"
                       f", compose uses {port}")
        for p in ports:
            if _port_number(found[name], p.get("targetPort", p["port"])) != port:
                out.append(f"Service {service['metadata']['name']}: targetPort "
                           f"{p.get('targetPort')} is not the container's port {port}")
        argv = found[name].argv
        if "--port" in argv and int(argv[argv.index("--port") + 1]) != port:
            out.append(f"{name} listens on {argv[argv.index('--port') + 1]}, not {port}")
    return out


def repository_paths(objects: list[dict[str, Any]]) -> set[str]:
    """Where the workloads mount the repositories volume."""
    return {m["mountPath"] for w in workloads(objects).values()
            for m in w.mounts(REPOSITORIES_CLAIM)}


def volume_mismatches(objects: list[dict[str, Any]], compose: dict[str, Any]) -> list[str]:
    """The repositories are mounted read-only by exactly the workloads compose gives the
    repository to, at one path; the store and queue keep their data on their own volumes
    where compose keeps it."""
    found = workloads(objects)
    out = []
    readers = {name for name, s in compose["services"].items() if compose_repo_mounts(s)}
    mounting = {name for name, w in found.items() if w.mounts(REPOSITORIES_CLAIM)}
    if mounting != readers:
        out.append(f"the repositories are mounted in {sorted(mounting)}; compose mounts the "
                   f"repository in {sorted(readers)}")
    paths = set()
    for name in mounting:
        for mount in found[name].mounts(REPOSITORIES_CLAIM):
            paths.add(mount["mountPath"])
            if not mount.get("readOnly") or not mount["claim"].get("readOnly"):
                out.append(f"{name} mounts the repositories writable")
    if len(paths) > 1:
        out.append(f"the repositories are mounted at several paths: {sorted(paths)}")
    for name in ("store", "queue"):
        if name not in found:
            continue
        targets = {str(v).split(":")[1] for v in compose["services"][name].get("volumes", [])}
        claims = {t["metadata"]["name"] for t in found[name].obj["spec"].get(
            "volumeClaimTemplates", [])}
        mounted = {m["mountPath"] for m in found[name].container.get("volumeMounts", [])
                   if m["name"] in claims}
        if not targets <= mounted:
            out.append(f"{name} keeps {sorted(mounted)} on its volumes; compose keeps "
                       f"{sorted(targets)}")
    return out


def lifecycle_mismatches(objects: list[dict[str, Any]], compose: dict[str, Any]) -> list[str]:
    """Shutdown grace as compose's stop_grace_period; migrate runs once, never restarted."""
    pairs = Counterparts(compose)
    out = []
    for name, workload in workloads(objects).items():
        service_name = pairs.service_name(name)
        if service_name is None:
            continue
        grace = compose["services"][service_name].get("stop_grace_period")
        if grace is not None and \
                workload.pod.get("terminationGracePeriodSeconds") != duration_s(grace):
            out.append(f"{name}: terminationGracePeriodSeconds "
                       f"{workload.pod.get('terminationGracePeriodSeconds')}, compose waits "
                       f"{grace}")
    migrate = workloads(objects).get("migrate")
    if migrate is None or migrate.kind != "Job" or migrate.pod.get("restartPolicy") != "Never":
        out.append("migrate is not a Job that runs to completion without restarts")
    return out


def compose_mismatches(objects: list[dict[str, Any]],
                       compose: dict[str, Any] | None = None) -> list[str]:
    """Everything above, for one rendered kustomization."""
    compose = load_compose() if compose is None else compose
    return [*coverage_mismatches(objects, compose), *image_and_command_mismatches(objects, compose),
            *env_mismatches(objects, compose), *probe_mismatches(objects, compose),
            *port_mismatches(objects, compose), *volume_mismatches(objects, compose),
            *lifecycle_mismatches(objects, compose)]


# --- consistency inside the manifests -------------------------------------------------------

def reference_mismatches(objects: list[dict[str, Any]]) -> list[str]:
    """What the API server would accept but the pods would trip on: a value and a valueFrom
    together, a key missing from its ConfigMap or Secret, a ``$(VAR)`` not defined before
    it, selectors that miss their own pods."""
    out = []
    for name, workload in workloads(objects).items():
        defined: set[str] = set()
        for entry in workload.env:
            if ("value" in entry) == ("valueFrom" in entry):
                out.append(f"{name}: {entry['name']} needs exactly one of value and valueFrom")
            source = entry.get("valueFrom") or {}
            for kind, ref_key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                ref = source.get(ref_key)
                if ref is None:
                    continue
                target = by_kind(objects, kind).get(ref["name"])
                if target is None:
                    out.append(f"{name}: {entry['name']} reads {kind} {ref['name']}, not rendered")
                elif ref["key"] not in (target.get("data") or {}):
                    out.append(f"{name}: {entry['name']} reads {ref['key']}, missing from "
                               f"{kind} {ref['name']}")
            for used in _K8S_REF.findall(str(entry.get("value", ""))):
                if used not in defined:
                    out.append(f"{name}: {entry['name']} uses $({used}) before it is defined")
            defined.add(entry["name"])
        for arg in workload.argv:
            for used in _K8S_REF.findall(arg):
                if used not in defined:
                    out.append(f"{name}: the command uses $({used}), not in its environment")
        if workload.kind != "Job":
            selector = workload.obj["spec"]["selector"]["matchLabels"]
            labels = workload.obj["spec"]["template"]["metadata"]["labels"]
            if any(labels.get(k) != v for k, v in selector.items()):
                out.append(f"{name}: its selector {selector} misses its pods {labels}")
    for pdb in by_kind(objects, "PodDisruptionBudget").values():
        selector = pdb["spec"]["selector"]["matchLabels"]
        if not any(all(w.obj["spec"]["template"]["metadata"]["labels"].get(k) == v
                       for k, v in selector.items()) for w in workloads(objects).values()):
            out.append(f"PodDisruptionBudget {pdb['metadata']['name']} selects no pods")
    return out


def resource_mismatches(objects: list[dict[str, Any]]) -> list[str]:
    """Every container requests CPU and memory and is limited, requests within limits."""
    out = []
    for name, workload in workloads(objects).items():
        for container in workload.pod["containers"] + workload.pod.get("initContainers", []):
            resources = container.get("resources") or {}
            for what, parse in (("cpu", cpu), ("memory", quantity)):
                request = (resources.get("requests") or {}).get(what)
                limit = (resources.get("limits") or {}).get(what)
                if request is None or limit is None:
                    out.append(f"{name}: no {what} request or limit")
                elif parse(request) > parse(limit):
                    out.append(f"{name}: requests {request} {what}, above its limit {limit}")
    return out


def iter_committed_yaml() -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(K8S.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                yield path, doc
