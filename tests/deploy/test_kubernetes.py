"""deploy/kubernetes: every overlay renders, validates against the Kubernetes OpenAPI schema
of each supported version, and keeps the scaled layout's security and operability invariants.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.k8s_render import (
    EXECSERVER,
    K8S,
    OVERLAYS,
    REDIS,
    REPO,
    ROUTER,
    Doc,
    configmap_toml,
    containers,
    find,
    load_file,
    pod_labels,
    pod_spec,
    redis_conf,
    rendered,
    workloads,
)
from tests.deploy.netpol_model import Endpoint, allowed

# Kubernetes minor versions the manifests are valid for (kubernetes-validate's schemas).
# 1.29 and older reject the exec-server's securityContext.appArmorProfile (added in 1.30).
SUPPORTED_VERSIONS = [f"1.{minor}.0" for minor in range(30, 38)]
SECRETS = K8S / "base" / "secrets.yaml"
OPT_IN_EGRESS = K8S / "opt-in" / "execserver-egress.yaml"
HEALTH_PORT = {ROUTER: 50061, EXECSERVER: 50062}


def _all_workloads() -> list[tuple[str, Doc]]:
    return [(o, d) for o in ("dev", "prod") for d in workloads(rendered(o))]


def _ids(items: list[tuple[str, Doc]]) -> list[str]:
    return [f"{o}-{d['metadata']['name']}" for o, d in items]


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_every_manifest_is_schema_valid(version: str) -> None:
    kv = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is not installed (test extra)"
    )
    unique: dict[str, Doc] = {}
    for doc in [*[d for o in OVERLAYS for d in rendered(o)], *load_file(SECRETS),
                *load_file(OPT_IN_EGRESS)]:  # fmt: skip
        unique[json.dumps(doc, sort_keys=True)] = doc
    for doc in unique.values():
        # strict: unknown fields (typos such as `readinessprobe`) fail too.
        kv.validate(doc, version, strict=True)


def test_base_lists_every_manifest_but_the_secret_placeholders() -> None:
    kustomization = load_file(K8S / "base" / "kustomization.yaml")[0]
    on_disk = {p.name for p in (K8S / "base").glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(on_disk - {SECRETS.name})
    for overlay in OVERLAYS:
        kinds = [(d["kind"], d["metadata"]["name"]) for d in rendered(overlay)]
        assert len(kinds) == len(set(kinds)), overlay
        assert "Secret" not in {k for k, _ in kinds}, "applying would overwrite real Secrets"


def test_replicas_and_disruption_per_overlay() -> None:
    dev, prod = rendered("dev"), rendered("prod")
    assert find(dev, "Deployment", ROUTER)["spec"]["replicas"] == 1
    assert not [d for d in dev if d["kind"] in ("HorizontalPodAutoscaler", "PodDisruptionBudget")]
    deployment = find(prod, "Deployment", ROUTER)
    assert deployment["spec"]["replicas"] == 3
    labels = pod_labels(deployment)
    hpa = find(prod, "HorizontalPodAutoscaler", ROUTER)
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1", "kind": "Deployment", "name": ROUTER,
    }
    assert hpa["spec"]["minReplicas"] == 3 < hpa["spec"]["maxReplicas"]
    pdb = find(prod, "PodDisruptionBudget", ROUTER)
    assert pdb["spec"]["minAvailable"] == 2
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = find(prod, "Service", ROUTER)
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["port"] == 50051


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_redis_runs_with_aof_on_its_data_volume(overlay: str) -> None:
    docs = rendered(overlay)
    conf = redis_conf(docs)
    assert conf["appendonly"] == "yes" and conf["appendfsync"] == "everysec"
    assert conf["maxmemory-policy"] == "noeviction" and "requirepass" not in conf
    sts = find(docs, "StatefulSet", REDIS)
    assert sts["spec"]["replicas"] == 1
    container = pod_spec(sts)["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["data"] == conf["dir"]
    claims = sts["spec"].get("volumeClaimTemplates", [])
    if overlay == "prod":
        assert [c["metadata"]["name"] for c in claims] == ["data"]
        assert claims[0]["spec"]["resources"]["requests"]["storage"] == "10Gi"
    else:
        assert not claims
        assert {"name": "data", "emptyDir": {"sizeLimit": "512Mi"}} in pod_spec(sts)["volumes"]
    command = " ".join(container["command"])
    assert f"redis-server {mounts['config']}/redis.conf" in command
    assert f'--requirepass "$(cat {mounts["auth"]}/password)"' in command
    auth = next(v for v in pod_spec(sts)["volumes"] if v["name"] == "auth")["secret"]
    assert auth["secretName"] == REDIS and auth["items"] == [{"key": "password", "path": "password"}]
    service = find(docs, "Service", REDIS)
    assert service["spec"]["selector"].items() <= pod_labels(sts).items()
    assert service["spec"]["ports"][0]["port"] == 6379


@pytest.mark.parametrize(("overlay", "doc"), _all_workloads(), ids=_ids(_all_workloads()))
def test_pod_security(overlay: str, doc: Doc) -> None:
    spec = pod_spec(doc)
    # The exec-server runs commands as another user (`run_as`): uid 0 with exactly the
    # capabilities that switch users and signal their groups, and nothing else.
    run_as = doc["metadata"]["name"] == EXECSERVER
    if run_as:
        assert spec["securityContext"]["runAsUser"] == 0
        assert 10003 in spec["securityContext"]["supplementalGroups"]
    else:
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"].get("runAsUser", 1) != 0
    assert spec.get("automountServiceAccountToken") is False
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(key), key
    for container in containers(doc):
        ctx = container["securityContext"]
        assert ctx.get("privileged", False) is False
        assert ctx["allowPrivilegeEscalation"] is False
        assert ctx["capabilities"]["drop"] == ["ALL"]
        assert ctx["capabilities"].get("add", []) == (["SETUID", "SETGID", "KILL"] if run_as else [])
        assert ctx.get("runAsNonRoot", True) is (not run_as)
        assert ctx["readOnlyRootFilesystem"] is True
        assert ctx.get("procMount", "Default") == "Default"
        seccomp = ctx.get("seccompProfile") or spec["securityContext"].get("seccompProfile")
        assert seccomp is not None and seccomp["type"] in ("RuntimeDefault", "Localhost")
        resources = container["resources"]
        for section in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources[section]), (container["name"], section)


@pytest.mark.parametrize(("overlay", "doc"), _all_workloads(), ids=_ids(_all_workloads()))
def test_probes(overlay: str, doc: Doc) -> None:
    for container in pod_spec(doc)["containers"]:
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        if doc["metadata"]["name"] == REDIS:
            # Ready only once the AOF is loaded (PING answers LOADING before).
            assert "redis-cli" in " ".join(container["readinessProbe"]["exec"]["command"])
            assert container["livenessProbe"]["tcpSocket"]["port"] == "redis" in ports
            continue
        # Native gRPC probes (grpc.health.v1) on the plaintext health port.
        assert ports["health"] == HEALTH_PORT[doc["metadata"]["name"]]
        for probe in ("readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"]["port"] == ports["health"], probe
            assert set(container[probe]) & {"httpGet", "tcpSocket", "exec"} == set()


def test_execserver_daemonset_runs_on_build_nodes_only() -> None:
    docs = rendered("prod")
    ds = find(docs, "DaemonSet", EXECSERVER)
    spec = pod_spec(ds)
    selector_key = next(iter(spec["nodeSelector"]))
    assert any(t["key"] == selector_key for t in spec["tolerations"])
    host_paths = [v for v in spec["volumes"] if "hostPath" in v]
    assert len(host_paths) == 1 and host_paths[0]["hostPath"]["type"] == "Directory"
    mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
    config = configmap_toml(docs, EXECSERVER + "-config", "execserver.toml")
    assert mounts[host_paths[0]["name"]] == config["root"]
    seccomp = spec["containers"][0]["securityContext"]["seccompProfile"]
    profile = json.loads((K8S / "seccomp" / "shellgate-bwrap.json").read_text())
    assert seccomp["localhostProfile"] == "shellgate/bwrap.json"
    denied = {name for rule in profile["syscalls"] for name in rule["names"]}
    # bubblewrap needs these inside its user namespace; the profile must not block them.
    assert not denied & {"mount", "umount2", "pivot_root", "unshare", "clone", "clone3"}
    assert {"kexec_load", "init_module", "bpf"} <= denied


def test_router_discovers_the_daemons_through_their_headless_service() -> None:
    docs = rendered("prod")
    service = find(docs, "Service", EXECSERVER)
    ds = find(docs, "DaemonSet", EXECSERVER)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"].items() <= pod_labels(ds).items()
    assert pod_spec(ds)["subdomain"] == service["metadata"]["name"]
    grpc_port = service["spec"]["ports"][0]
    assert grpc_port["name"] == "grpc"
    container_ports = {p["name"]: p["containerPort"] for p in pod_spec(ds)["containers"][0]["ports"]}
    data = configmap_toml(docs, ROUTER + "-config", "router.toml")
    [discovery] = data["discovery"]
    namespace = service["metadata"]["namespace"]
    assert discovery["dns_name"] == f"{EXECSERVER}.{namespace}.svc.cluster.local"
    assert discovery["port"] == grpc_port["port"] == container_ports["grpc"]
    # Discovery-only: every environment is a daemon found in DNS.
    assert data["local_environment"] is False and "environments" not in data


def _endpoints(docs: list[Doc]) -> dict[str, Endpoint]:
    namespace = {"namespace": "shellgate", "namespace_labels": {"kubernetes.io/metadata.name": "shellgate"}}
    pods = {
        "router": Endpoint("router", labels=pod_labels(find(docs, "Deployment", ROUTER)), **namespace),
        "execserver": Endpoint("execserver", labels=pod_labels(find(docs, "DaemonSet", EXECSERVER)), **namespace),
        "other-pod": Endpoint("other-pod", labels={"app": "x"}, **namespace),
        "harness": Endpoint("harness", "ci", {"app": "harness"}, {"shellgate.dev/harness": "true"}),
        "stranger": Endpoint("stranger", "web", {"app": "web"}, {"kubernetes.io/metadata.name": "web"}),
        "kube-dns": Endpoint("kube-dns", "kube-system", {"k8s-app": "kube-dns"},
                             {"kubernetes.io/metadata.name": "kube-system"}),
        "internet": Endpoint("internet", ip="198.51.100.7"),
        "external-redis": Endpoint("external-redis", ip="203.0.113.10"),
    }  # fmt: skip
    if any(d["kind"] == "StatefulSet" for d in docs):
        pods["redis"] = Endpoint("redis", labels=pod_labels(find(docs, "StatefulSet", REDIS)), **namespace)
    return pods


PORTS = [(50051, "TCP"), (50052, "TCP"), (6379, "TCP"), (53, "UDP"), (53, "TCP"), (443, "TCP"),
         (50061, "TCP"), (50062, "TCP")]  # fmt: skip
EXPECTED_FLOWS = {
    ("harness", "router", 50051, "TCP"),
    ("router", "execserver", 50052, "TCP"),
    ("router", "redis", 6379, "TCP"),
    ("router", "kube-dns", 53, "UDP"),
    ("router", "kube-dns", 53, "TCP"),
}


def _flows(policies: list[Doc], endpoints: dict[str, Endpoint]) -> set[tuple[str, str, int, str]]:
    """Allowed flows that start or end at a shellgate pod (the only ones policies govern)."""
    ours = {n for n, e in endpoints.items() if e.namespace == "shellgate"}
    return {
        (s, d, port, proto)
        for s in endpoints for d in endpoints if s != d and (s in ours or d in ours)
        for port, proto in PORTS
        if allowed(policies, endpoints[s], endpoints[d], port, proto)
    }  # fmt: skip


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_allow_exactly_the_scaled_layouts_flows(overlay: str) -> None:
    docs = rendered(overlay)
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    expected = set(EXPECTED_FLOWS)
    if overlay == "external-redis":
        expected = (expected - {("router", "redis", 6379, "TCP")}) | {
            ("router", "external-redis", 6379, "TCP")
        }
    assert _flows(policies, _endpoints(docs)) == expected


def test_the_opt_in_policy_gives_the_daemons_dns_and_the_named_addresses_only() -> None:
    docs = rendered("prod")
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"] + load_file(OPT_IN_EGRESS)
    endpoints = _endpoints(docs)
    endpoints["registry"] = Endpoint("registry", ip="203.0.113.20")
    added = _flows(policies, endpoints) - EXPECTED_FLOWS
    assert added == {
        ("execserver", "kube-dns", 53, "UDP"), ("execserver", "kube-dns", 53, "TCP"),
        ("execserver", "registry", 443, "TCP"), ("execserver", "external-redis", 443, "TCP"),
    }  # fmt: skip


def test_secrets_are_placeholders_and_agree() -> None:
    secrets = {d["metadata"]["name"]: d for d in load_file(SECRETS)}
    for name, doc in secrets.items():
        assert "data" not in doc, "real key material must not be committed"
        for key, value in doc["stringData"].items():
            assert "REPLACE" in value and "BEGIN" not in value, (name, key)
    redis = secrets[REDIS]["stringData"]
    # The router's URL carries the very password Redis requires, for the in-cluster Service.
    assert redis["url"] == f"redis://:{redis['password']}@{REDIS}:6379/0"


_SECRET_LOOKING = re.compile(r"REPLACE|BEGIN [A-Z ]*KEY|redis://[^\s\"]*@|password\s*=|requirepass", re.I)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_secret_values_in_config_maps(overlay: str) -> None:
    for doc in rendered(overlay):
        if doc["kind"] == "ConfigMap":
            for key, value in doc["data"].items():
                assert not _SECRET_LOOKING.search(value), (doc["metadata"]["name"], key)
    data = configmap_toml(rendered(overlay), ROUTER + "-config", "router.toml")
    assert "redis_url" not in data and data["redis_url_file"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_router_config_loads_and_names_mounted_files(overlay: str) -> None:
    config = pytest.importorskip("shellgate.router.service.config", reason="router config absent")
    docs = rendered(overlay)
    data = configmap_toml(docs, ROUTER + "-config", "router.toml")
    loaded = config.parse_config(data)
    deployment = find(docs, "Deployment", ROUTER)
    _assert_health_port_matches(deployment, data, loaded)
    _assert_paths_mounted(deployment, data)
    assert loaded.discovery and not loaded.environments and not loaded.local_environment
    # The URL file is the `url` key of the shellgate-redis Secret.
    container = pod_spec(deployment)["containers"][0]
    mount = next(m for m in container["volumeMounts"] if loaded.redis_url_file.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod_spec(deployment)["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == REDIS
    item = next(i for i in volume["secret"]["items"] if i["key"] == "url")
    assert f"{mount['mountPath']}/{item['path']}" == loaded.redis_url_file
    assert loaded.redis_url_file in loaded.secret_files()


def test_every_mounted_secret_has_a_placeholder_and_an_install_step() -> None:
    # A Secret a pod mounts but the README never creates leaves the pod unschedulable.
    readme = (K8S / "README.md").read_text()
    placeholders = {d["metadata"]["name"] for d in load_file(SECRETS)}
    mounted = {
        volume["secret"]["secretName"]
        for overlay in OVERLAYS
        for doc in rendered(overlay)
        if doc["kind"] in ("Deployment", "DaemonSet", "StatefulSet")
        for volume in pod_spec(doc).get("volumes", [])
        if "secret" in volume
    }
    assert mounted <= placeholders, mounted - placeholders
    for name in mounted:
        assert f"create secret generic {name}" in readme, name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_router_signs_its_audit_log_with_a_mounted_key(overlay: str) -> None:
    config = pytest.importorskip("shellgate.router.service.config", reason="router config absent")
    docs = rendered(overlay)
    loaded = config.parse_config(configmap_toml(docs, ROUTER + "-config", "router.toml"))
    assert loaded.audit_log and loaded.audit_key_file and loaded.audit_checkpoint_file
    deployment = find(docs, "Deployment", ROUTER)
    container = pod_spec(deployment)["containers"][0]
    mount = next(
        m for m in container["volumeMounts"]
        if loaded.audit_key_file.startswith(m["mountPath"] + "/")
    )  # fmt: skip
    assert mount.get("readOnly") is True
    volume = next(v for v in pod_spec(deployment)["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == "shellgate-audit-key"
    # The key is masked in every sandbox like the router's other secret files.
    assert loaded.audit_key_file in loaded.secret_files()


def test_execserver_configmap_loads_through_the_execserver_config() -> None:
    config = pytest.importorskip("shellgate.execserver.config", reason="exec-server config absent")
    docs = rendered("prod")
    data = configmap_toml(docs, EXECSERVER + "-config", "execserver.toml")
    loaded = config.load_config(None, data)
    ds = find(docs, "DaemonSet", EXECSERVER)
    _assert_health_port_matches(ds, data, loaded)
    _assert_paths_mounted(ds, data)
    # Commands run as the image's shellgate-cmd, not as the daemon (issue 13, run_as).
    assert loaded.run_as == "shellgate-cmd"
    containerfile = (REPO / "deploy" / "container" / "Containerfile").read_text()
    assert "--uid 10002" in containerfile and "shellgate-cmd" in containerfile


def _assert_health_port_matches(doc: Doc, data: dict[str, Any], loaded: Any) -> None:
    """The config's plaintext health listener is the port the kubelet probes."""
    assert loaded.health_listen == data["health_listen"]
    container = pod_spec(doc)["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(loaded.health_listen.rpartition(":")[2]) == ports["health"]
    assert int(loaded.listen.rpartition(":")[2]) == ports["grpc"]
    # The main port serves TLS; only the health port is plaintext.
    assert loaded.tls_cert_file and loaded.tls_key_file and not loaded.insecure


def _file_settings(data: Any) -> list[str]:
    found: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key.endswith("_file") and isinstance(value, str) and value:
                found.append(value)
            elif key == "rules_dirs":
                found.extend(value)
            else:
                found.extend(_file_settings(value))
    elif isinstance(data, list):
        for item in data:
            found.extend(_file_settings(item))
    return found


def _assert_paths_mounted(doc: Doc, data: dict[str, Any]) -> None:
    """Every file the config names lives under one of the container's mounts."""
    container = pod_spec(doc)["containers"][0]
    mounts = [m["mountPath"] for m in container["volumeMounts"]]
    config_arg = container["args"][container["args"].index("--config") + 1]
    for path in [config_arg, *_file_settings(data)]:
        assert any(path.startswith(m.rstrip("/") + "/") or path == m for m in mounts), path


def test_no_stale_not_landed_comments() -> None:
    for path in [*K8S.rglob("*.yaml"), K8S / "README.md"]:
        text = Path(path).read_text()
        assert not re.search(r"until the shared store lands|until DNS discovery|has not landed", text), path
