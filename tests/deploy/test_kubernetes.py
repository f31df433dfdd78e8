"""deploy/kubernetes: schema validation and the security/operability invariants of the manifests."""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the manifests")

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "kubernetes"
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
ROUTER = "shellgate-router"
EXECSERVER = "shellgate-execserver"


def _docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in MANIFESTS:
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


DOCS = _docs()


def _find(kind: str, name: str) -> dict[str, Any]:
    for doc in DOCS:
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise AssertionError(f"no {kind}/{name} in deploy/kubernetes")


def _workloads() -> Iterator[dict[str, Any]]:
    for doc in DOCS:
        if doc["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob", "Pod"):
            yield doc


def _pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"] if doc["kind"] == "Pod" else doc["spec"]["template"]["spec"]
    return spec


def _containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = _pod_spec(doc)
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_manifests_exist() -> None:
    kinds = {(d["kind"], d["metadata"]["name"]) for d in DOCS}
    for expected in (
        ("Deployment", ROUTER), ("Service", ROUTER), ("HorizontalPodAutoscaler", ROUTER),
        ("PodDisruptionBudget", ROUTER), ("DaemonSet", EXECSERVER), ("Service", EXECSERVER),
    ):
        assert expected in kinds, expected
    assert any(d["kind"] == "NetworkPolicy" for d in DOCS)
    assert any(d["kind"] == "Secret" for d in DOCS)


@pytest.mark.parametrize(
    "doc", DOCS, ids=[f"{d['kind']}/{d['metadata']['name']}" for d in DOCS]
)
def test_schema_valid(doc: dict[str, Any]) -> None:
    kv = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is not installed (test extra)"
    )
    # strict: unknown fields (typos such as `readinessprobe`) fail too.
    kv.validate(doc, kv.latest_version(), strict=True)


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in MANIFESTS)
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return
    # `kubectl kustomize` renders offline: the bundle must hold every object exactly once.
    out = subprocess.run(
        [kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    rendered = [d for d in yaml.safe_load_all(out) if d]
    assert len(rendered) == len(DOCS)


# Pods that run commands as another user (`run_as`): their daemon is uid 0 with exactly
# the capabilities that switch users and signal their groups, and nothing else.
RUN_AS_CAPABILITIES = ["SETUID", "SETGID", "KILL"]


def _runs_commands_as_another_user(doc: dict[str, Any]) -> bool:
    return bool(doc["metadata"]["name"] == "shellgate-execserver")


@pytest.mark.parametrize("doc", list(_workloads()), ids=lambda d: d["metadata"]["name"])
def test_pod_security(doc: dict[str, Any]) -> None:
    spec = _pod_spec(doc)
    run_as = _runs_commands_as_another_user(doc)
    if run_as:
        assert spec["securityContext"]["runAsUser"] == 0
        assert 10003 in spec["securityContext"]["supplementalGroups"]
    else:
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"].get("runAsUser", 1) != 0
    assert spec.get("automountServiceAccountToken") is False
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(key), key
    for container in _containers(doc):
        ctx = container["securityContext"]
        assert ctx.get("privileged", False) is False
        assert ctx["allowPrivilegeEscalation"] is False
        assert ctx["capabilities"]["drop"] == ["ALL"]
        assert ctx["capabilities"].get("add", []) == (RUN_AS_CAPABILITIES if run_as else [])
        assert ctx.get("runAsNonRoot", True) is (not run_as)
        assert ctx["readOnlyRootFilesystem"] is True
        assert ctx.get("procMount", "Default") == "Default"
        seccomp = ctx.get("seccompProfile") or spec["securityContext"].get("seccompProfile")
        assert seccomp is not None and seccomp["type"] in ("RuntimeDefault", "Localhost")


@pytest.mark.parametrize("doc", list(_workloads()), ids=lambda d: d["metadata"]["name"])
def test_resources_everywhere(doc: dict[str, Any]) -> None:
    for container in _containers(doc):
        resources = container["resources"]
        for section in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources[section]), (container["name"], section)


@pytest.mark.parametrize("doc", list(_workloads()), ids=lambda d: d["metadata"]["name"])
def test_probes_are_native_grpc_health(doc: dict[str, Any]) -> None:
    for container in _pod_spec(doc)["containers"]:
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        for probe in ("readinessProbe", "livenessProbe"):
            grpc_probe = container[probe]["grpc"]
            assert grpc_probe["port"] == ports["health"], probe
            assert set(container[probe]) & {"httpGet", "tcpSocket", "exec"} == set()


def test_router_scaling_objects_target_the_router() -> None:
    deployment = _find("Deployment", ROUTER)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    hpa = _find("HorizontalPodAutoscaler", ROUTER)
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1", "kind": "Deployment", "name": ROUTER,
    }
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    pdb = _find("PodDisruptionBudget", ROUTER)
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = _find("Service", ROUTER)
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["port"] == 50051


def test_execserver_daemonset_runs_on_build_nodes_only() -> None:
    ds = _find("DaemonSet", EXECSERVER)
    spec = _pod_spec(ds)
    assert spec["nodeSelector"]
    selector_key = next(iter(spec["nodeSelector"]))
    assert any(t["key"] == selector_key for t in spec["tolerations"])
    host_paths = [v for v in spec["volumes"] if "hostPath" in v]
    assert len(host_paths) == 1 and host_paths[0]["hostPath"]["type"] == "Directory"
    mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
    config = _configmap_toml(EXECSERVER + "-config", "execserver.toml")
    assert mounts[host_paths[0]["name"]] == config["root"]
    seccomp = spec["containers"][0]["securityContext"]["seccompProfile"]
    profile = json.loads((K8S / "seccomp" / "shellgate-bwrap.json").read_text())
    assert seccomp["localhostProfile"] == "shellgate/bwrap.json"
    denied = {name for rule in profile["syscalls"] for name in rule["names"]}
    # bubblewrap needs these inside its user namespace; the profile must not block them.
    assert not denied & {"mount", "umount2", "pivot_root", "unshare", "clone", "clone3"}
    assert {"kexec_load", "init_module", "bpf"} <= denied


def test_headless_service_discovers_daemons() -> None:
    service = _find("Service", EXECSERVER)
    assert service["spec"]["clusterIP"] == "None"
    labels = _pod_spec(_find("DaemonSet", EXECSERVER))
    assert service["spec"]["selector"].items() <= _find("DaemonSet", EXECSERVER)["spec"][
        "template"]["metadata"]["labels"].items()
    assert labels["subdomain"] == service["metadata"]["name"]
    assert service["spec"]["ports"][0]["name"] == "grpc"


def test_network_policy_only_router_reaches_daemons() -> None:
    policies = [d for d in DOCS if d["kind"] == "NetworkPolicy"]
    default_deny = [p for p in policies if p["spec"]["podSelector"] == {}]
    assert default_deny and "Ingress" in default_deny[0]["spec"]["policyTypes"]
    assert not default_deny[0]["spec"].get("ingress")
    daemon_labels = _find("DaemonSet", EXECSERVER)["spec"]["template"]["metadata"]["labels"]
    router_labels = _find("Deployment", ROUTER)["spec"]["template"]["metadata"]["labels"]
    for policy in policies:
        selector = policy["spec"]["podSelector"].get("matchLabels", {})
        if not selector or not selector.items() <= daemon_labels.items():
            continue
        for rule in policy["spec"].get("ingress", []):
            assert rule["from"], "an ingress rule without `from` admits everyone"
            for peer in rule["from"]:
                assert "namespaceSelector" not in peer and "ipBlock" not in peer
                assert peer["podSelector"]["matchLabels"].items() <= router_labels.items()


def test_secrets_are_placeholders() -> None:
    for doc in DOCS:
        if doc["kind"] != "Secret":
            continue
        assert "data" not in doc, "real key material must not be committed"
        for key, value in doc["stringData"].items():
            assert "REPLACE" in value, (doc["metadata"]["name"], key)
            assert "BEGIN" not in value


def _configmap_toml(name: str, key: str) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads(_find("ConfigMap", name)["data"][key])
    return data


def _assert_health_port_matches(doc: dict[str, Any], data: dict[str, Any], loaded: Any) -> None:
    """The config's plaintext health listener is the port the kubelet probes."""
    assert loaded.health_listen == data["health_listen"]
    container = _pod_spec(doc)["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(loaded.health_listen.rpartition(":")[2]) == ports["health"]
    assert int(loaded.listen.rpartition(":")[2]) == ports["grpc"]
    # The main port serves TLS; only the health port is plaintext.
    assert loaded.tls_cert_file and loaded.tls_key_file and not loaded.insecure


def test_router_configmap_loads_through_the_router_config(tmp_path: Path) -> None:
    config = pytest.importorskip("shellgate.router.service.config", reason="router config not landed")
    data = _configmap_toml(ROUTER + "-config", "router.toml")
    # Every key, health_listen included, must be known to the config module.
    loaded = config.parse_config(data)
    _assert_health_port_matches(_find("Deployment", ROUTER), data, loaded)
    _assert_paths_mounted(_find("Deployment", ROUTER), data)


def test_execserver_configmap_loads_through_the_execserver_config(tmp_path: Path) -> None:
    config = pytest.importorskip("shellgate.execserver.config", reason="exec-server config absent")
    data = _configmap_toml(EXECSERVER + "-config", "execserver.toml")
    loaded = config.load_config(None, data)
    _assert_health_port_matches(_find("DaemonSet", EXECSERVER), data, loaded)
    _assert_paths_mounted(_find("DaemonSet", EXECSERVER), data)
    # Commands run as the image's shellgate-cmd, not as the daemon (issue 13, run_as).
    assert loaded.run_as == "shellgate-cmd"
    containerfile = (REPO / "deploy" / "container" / "Containerfile").read_text()
    assert "--uid 10002" in containerfile and "shellgate-cmd" in containerfile


def _file_settings(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            if key.endswith("_file") and isinstance(value, str) and value:
                yield value
            elif key == "rules_dirs":
                yield from value
            else:
                yield from _file_settings(value)
    elif isinstance(data, list):
        for item in data:
            yield from _file_settings(item)


def _assert_paths_mounted(doc: dict[str, Any], data: dict[str, Any]) -> None:
    """Every file the config names lives under one of the container's mounts."""
    container = _pod_spec(doc)["containers"][0]
    mounts = [m["mountPath"] for m in container["volumeMounts"]]
    config_arg = container["args"][container["args"].index("--config") + 1]
    for path in [config_arg, *_file_settings(data)]:
        assert any(path.startswith(m.rstrip("/") + "/") or path == m for m in mounts), path
