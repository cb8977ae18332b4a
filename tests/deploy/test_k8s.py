"""The Kubernetes manifests (deploy/k8s), checked without a cluster.

Every kustomization is rendered with ``kubectl kustomize`` as ``kubectl apply -k`` would send
it, every object is validated against the Kubernetes JSON schemas (``kubernetes-validate``,
strict: an unknown field fails), and each workload is compared with the compose service it
runs: image, command, environment, probes, ports, volumes. The last tests mutate a copy and
show that the checks catch the drift.
"""

from __future__ import annotations

import json
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.manifests import (
    COMPOSE_PRODUCTION,
    K8S,
    LANES,
    REPOSITORIES_CLAIM,
    ROOT,
    SECRETS_EXAMPLE,
    SECRETS_FILE,
    by_kind,
    compose_mismatches,
    copy_tree,
    cpu,
    env_mismatches,
    image_and_command_mismatches,
    iter_committed_yaml,
    kubectl,
    kustomizations,
    load_compose,
    probe_mismatches,
    quantity,
    reference_mismatches,
    render,
    resource_mismatches,
    volume_mismatches,
    workloads,
)

KUSTOMIZATIONS = kustomizations()
SCHEMA_VERSIONS = ("1.28.0", kubernetes_validate.utils.latest_version())
"""The oldest Kubernetes release the manifests target, and the newest the validator knows."""
NAMESPACE = "codenav"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_tree(tmp_path_factory.mktemp("k8s"))


_RENDERED: dict[tuple[Path, str], list[dict[str, Any]]] = {}


def rendered(tree: Path, kustomization: str) -> list[dict[str, Any]]:
    key = (tree, kustomization)
    if key not in _RENDERED:
        _RENDERED[key] = render(tree, kustomization)
    return _RENDERED[key]


@cache
def _compose() -> dict[str, Any]:
    return load_compose()


# --- rendering and schemas ------------------------------------------------------------------

def test_the_base_the_small_and_production_overlays_and_the_external_variant_exist() -> None:
    assert {".", "base", "overlays/small", "overlays/production",
            "overlays/external"} <= set(KUSTOMIZATIONS)
    assert (K8S / "components" / "external-services" / "kustomization.yaml").is_file()


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_kustomization_renders_offline_into_the_codenav_namespace(
        tree: Path, kustomization: str) -> None:
    objects = rendered(tree, kustomization)
    assert {o["kind"] for o in objects} >= {"Deployment", "Job", "Service", "Secret",
                                            "ConfigMap", "PodDisruptionBudget"}
    for obj in objects:
        if obj["kind"] == "Namespace":
            assert obj["metadata"]["name"] == NAMESPACE
        else:
            assert obj["metadata"].get("namespace") == NAMESPACE, obj["metadata"]["name"]


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_rendered_object_validates_against_the_kubernetes_schemas(
        tree: Path, kustomization: str, version: str) -> None:
    for obj in rendered(tree, kustomization):
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            raise AssertionError(f"{obj['kind']}/{obj['metadata']['name']}: {path}: "
                                 f"{exc.message}") from None


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_references_inside_the_manifests_resolve(tree: Path, kustomization: str) -> None:
    assert reference_mismatches(rendered(tree, kustomization)) == []


# --- agreement with compose -----------------------------------------------------------------

@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_workload_runs_what_its_compose_service_runs(tree: Path,
                                                           kustomization: str) -> None:
    """Images, commands, environment, probes, ports, volumes and shutdown grace."""
    assert compose_mismatches(rendered(tree, kustomization), _compose()) == []


def test_index_and_embed_workers_are_separate_deployments_of_one_image_on_their_own_lanes(
        tree: Path) -> None:
    found = workloads(rendered(tree, "."))
    for name, lane in LANES.items():
        worker = found[name]
        assert worker.kind == "Deployment"
        assert worker.argv[:3] == ["python", "-m", "codenav_worker"]
        assert worker.argv[worker.argv.index("--lane") + 1] == lane
    assert found["worker"].container["image"] == found["embed-worker"].container["image"]
    assert not found["embed-worker"].mounts(REPOSITORIES_CLAIM), \
        "embedding reads the database only"


def test_the_api_serves_from_replicas_behind_a_service_with_a_disruption_budget(
        tree: Path) -> None:
    for kustomization in KUSTOMIZATIONS:
        objects = rendered(tree, kustomization)
        api = workloads(objects)["api"]
        assert _api_replicas(objects) >= 2, kustomization
        assert api.obj["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
        budget = by_kind(objects, "PodDisruptionBudget")["api"]["spec"]
        assert budget["maxUnavailable"] == 1, kustomization
        assert budget["selector"]["matchLabels"] == api.obj["spec"]["selector"]["matchLabels"]
        probes = api.container
        assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert probes["livenessProbe"]["httpGet"]["path"] == "/healthz"


def _api_replicas(objects: list[dict[str, Any]]) -> int:
    """The api's replica count, or its autoscaler's minimum, which then owns the count (a
    Deployment that sets one too is reset by every apply)."""
    api = workloads(objects)["api"].obj["spec"]
    autoscaler = by_kind(objects, "HorizontalPodAutoscaler").get("api")
    if autoscaler is not None:
        assert "replicas" not in api, "the autoscaler and the Deployment both set replicas"
        return int(autoscaler["spec"]["minReplicas"])
    return int(api["replicas"])


def test_the_probed_paths_are_routes_of_the_api_and_the_embedder() -> None:
    from codenav_api.routes.health import router
    from codenav_embedder.app import create_app
    from codenav_embedder.settings import EmbedderSettings

    assert {"/healthz", "/readyz"} <= {getattr(r, "path", "") for r in router.routes}
    embedder = create_app(EmbedderSettings())
    assert {"/healthz", "/readyz"} <= {getattr(r, "path", "") for r in embedder.routes}


def test_one_watcher_runs_in_every_size(tree: Path) -> None:
    for kustomization in KUSTOMIZATIONS:
        objects = rendered(tree, kustomization)
        watcher = workloads(objects)["watcher"]
        assert watcher.obj["spec"]["replicas"] == 1, kustomization
        assert watcher.obj["spec"]["strategy"]["type"] == "Recreate", kustomization


def test_production_runs_more_of_what_scales_than_small(tree: Path) -> None:
    small_objects, production_objects = (rendered(tree, k) for k in
                                         ("overlays/small", "overlays/production"))
    small, production = workloads(small_objects), workloads(production_objects)
    for name in ("worker", "embed-worker", "embedder"):
        assert production[name].obj["spec"]["replicas"] > small[name].obj["spec"]["replicas"]
    assert _api_replicas(production_objects) > _api_replicas(small_objects)
    autoscaler = by_kind(production_objects, "HorizontalPodAutoscaler")["api"]["spec"]
    assert autoscaler["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                            "name": "api"}
    assert autoscaler["maxReplicas"] > autoscaler["minReplicas"]


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_container_has_requests_and_limits(tree: Path, kustomization: str) -> None:
    assert resource_mismatches(rendered(tree, kustomization)) == []


def test_the_base_limits_are_those_of_the_production_compose_overlay(tree: Path) -> None:
    overlay = load_compose(COMPOSE_PRODUCTION)["services"]
    found = workloads(rendered(tree, "base"))
    compared = 0
    for name, service in overlay.items():
        limits = (service.get("deploy") or {}).get("resources", {}).get("limits")
        if not limits or name not in found:
            continue
        pod_limits = found[name].container["resources"]["limits"]
        assert cpu(pod_limits["cpu"]) == float(limits["cpus"]), name
        assert quantity(pod_limits["memory"]) == quantity(limits["memory"]), name
        compared += 1
    assert compared >= 6


def test_the_store_and_queue_keep_their_data_on_claimed_volumes(tree: Path) -> None:
    found = workloads(rendered(tree, "."))
    for name in ("store", "queue"):
        statefulset = found[name].obj
        assert statefulset["kind"] == "StatefulSet"
        templates = statefulset["spec"]["volumeClaimTemplates"]
        assert [t["spec"]["accessModes"] for t in templates] == [["ReadWriteOnce"]]
    assert found["store"].container["image"].startswith("pgvector/pgvector:")


def test_external_services_drop_the_store_and_queue_and_read_both_urls_from_the_secret(
        tree: Path) -> None:
    objects = rendered(tree, "overlays/external")
    assert {"store", "queue"}.isdisjoint(workloads(objects))
    assert {"store", "queue"}.isdisjoint(by_kind(objects, "Service"))
    (secret,) = by_kind(objects, "Secret").values()
    assert {"CODENAV_DATABASE_URL", "CODENAV_REDIS_URL"} <= set(secret["data"])
    for name, workload in workloads(objects).items():
        env = {e["name"]: e for e in workload.env}
        if "CODENAV_DATABASE_URL" not in env:
            continue
        for key in ("CODENAV_DATABASE_URL", "CODENAV_REDIS_URL"):
            assert env[key]["valueFrom"]["secretKeyRef"]["key"] == key, name
        assert {"CODENAV_DB_PASSWORD", "CODENAV_REDIS_PASSWORD"}.isdisjoint(env), name
    text = yaml.safe_dump_all(objects)
    assert "@store:" not in text and "@queue:" not in text


# --- secrets --------------------------------------------------------------------------------

def test_no_secret_value_is_committed_only_an_example_of_the_ignored_env_file() -> None:
    for path, doc in iter_committed_yaml():
        assert doc.get("kind") != "Secret", f"{path}: a literal Secret"
        for generator in doc.get("secretGenerator", []):
            assert not generator.get("literals"), f"{path}: literal secrets"
            assert not generator.get("files"), f"{path}: secret files"
            for env_file in generator.get("envs", []):
                relative = (path.parent / env_file).relative_to(ROOT).as_posix()
                ignored = subprocess.run(["git", "check-ignore", "-q", relative], cwd=ROOT,
                                         check=False)
                assert ignored.returncode == 0, f"{relative} is not git-ignored"
                assert (path.parent / (env_file + ".example")).is_file(), relative
    example = (K8S / SECRETS_EXAMPLE).read_text(encoding="utf-8")
    assert "openssl rand" in example
    values = dict(line.lstrip("#").split("=", 1) for line in example.splitlines()
                  if re.match(r"#?CODENAV_\w+=", line))
    assert {"CODENAV_DB_PASSWORD", "CODENAV_REDIS_PASSWORD", "CODENAV_DATABASE_URL",
            "CODENAV_REDIS_URL"} <= set(values)
    assert all("CHANGE-ME" in value for value in values.values())


def test_rendering_without_the_secrets_file_fails_and_names_it(tmp_path: Path) -> None:
    tree = copy_tree(tmp_path)
    (tree / SECRETS_FILE).unlink()
    result = subprocess.run([kubectl(), "kustomize", str(tree)], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode != 0
    assert SECRETS_FILE.name in result.stderr


def test_pods_read_passwords_from_the_secret_and_never_see_them_in_their_spec(
        tree: Path) -> None:
    objects = rendered(tree, ".")
    (secret,) = by_kind(objects, "Secret").values()
    spec_text = yaml.safe_dump_all([o for o in objects if o["kind"] != "Secret"])
    assert "CHANGE-ME" not in spec_text
    for workload in workloads(objects).values():
        for entry in workload.env:
            if entry["name"] in ("CODENAV_DB_PASSWORD", "CODENAV_REDIS_PASSWORD"):
                ref = entry["valueFrom"]["secretKeyRef"]
                assert (ref["name"], ref["key"]) == (secret["metadata"]["name"], entry["name"])


# --- the checks catch drift -----------------------------------------------------------------

def _mutated(tmp_path: Path, file: str, old: str, new: str) -> list[dict[str, Any]]:
    tree = copy_tree(tmp_path)
    path = tree / "base" / file
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {file}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return render(tree, ".")


def test_a_drifted_copy_fails_the_compose_checks(tmp_path: Path) -> None:
    compose = _compose()
    command = _mutated(tmp_path / "a", "worker.yaml", '"--lane", "index"', '"--burst"')
    assert any("worker: runs" in m for m in image_and_command_mismatches(command, compose))
    image = _mutated(tmp_path / "b", "watcher.yaml", "codenav/watcher:local",
                     "codenav/watcher:latest")
    assert any("watcher: image codenav/watcher:latest" in m
               for m in image_and_command_mismatches(image, compose))
    env = _mutated(tmp_path / "c", "api.yaml", "- name: CODENAV_ALLOWED_ORIGINS",
                   "- name: CODENAV_ALLOWED_ORIGIN")
    assert "api: lacks CODENAV_ALLOWED_ORIGINS, which compose sets" in \
        env_mismatches(env, compose)
    assert "api: sets CODENAV_ALLOWED_ORIGIN, which compose does not" in \
        env_mismatches(env, compose)
    url = _mutated(tmp_path / "d", "api.yaml", "@store:5432/codenav", "@store:5433/codenav")
    assert any("CODENAV_DATABASE_URL" in m for m in env_mismatches(url, compose))
    probe = _mutated(tmp_path / "e", "api.yaml", "path: /readyz", "path: /healthz")
    assert any("api: readinessProbe asks http/healthz" in m
               for m in probe_mismatches(probe, compose))
    timing = _mutated(tmp_path / "f", "watcher.yaml", "failureThreshold: 3",
                      "failureThreshold: 30")
    assert any("watcher: readinessProbe" in m for m in probe_mismatches(timing, compose))
    mount = _mutated(tmp_path / "g", "watcher.yaml", "readOnly: true\n",
                     "readOnly: false\n")
    assert "watcher mounts the repositories writable" in volume_mismatches(mount, compose)


def test_a_malformed_copy_fails_schema_validation(tmp_path: Path) -> None:
    objects = _mutated(tmp_path, "api.yaml", "timeoutSeconds: 5", "timeoutSecond: 5")
    api = workloads(objects)["api"].obj
    with pytest.raises(kubernetes_validate.ValidationError, match="timeoutSecond"):
        kubernetes_validate.validate(api, SCHEMA_VERSIONS[-1], strict=True)


def test_a_broken_reference_fails_the_consistency_check(tmp_path: Path) -> None:
    objects = _mutated(tmp_path, "api.yaml", "key: CODENAV_LOG_LEVEL", "key: CODENAV_LOGLEVEL")
    assert any("reads CODENAV_LOGLEVEL, missing from ConfigMap" in m
               for m in reference_mismatches(objects))


def test_the_seeded_overlay_adds_the_seed_job_that_compose_runs_in_its_profile(
        tree: Path) -> None:
    """Only overlays/seeded runs the seed (a Job, like compose's one-shot profile service,
    compared with it by test_every_workload_runs_what_its_compose_service_runs); it reads
    the database only, and its command is the seed image's own."""
    seeded = workloads(rendered(tree, "overlays/seeded"))
    for other in ("base", "overlays/small", "overlays/production"):
        assert "seed" not in workloads(rendered(tree, other)), other
    job = seeded["seed"]
    assert job.kind == "Job"
    assert job.obj["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert not job.mounts(REPOSITORIES_CLAIM)
    assert job.argv == ["codenav", "snapshot", "import", "/seed/snapshot.tar",
                        "--skip-existing", "--local-roots"]
    small = workloads(rendered(tree, "overlays/small"))
    assert set(seeded) - {"seed"} == set(small)  # the small overlay, plus the Job
    cmd = [line for line in (ROOT / "deploy" / "Dockerfile.seed").read_text().splitlines()
           if line.startswith("CMD ")]
    assert cmd and json.loads(cmd[0][4:]) == job.argv
