"""deploy/kubernetes rendered as the cluster sees it: `kubectl kustomize` of each overlay.

kubectl embeds the real kustomize (v5) and renders offline, so the tests check exactly what
`kubectl apply -k` would send; without kubectl the rendering tests skip with that reason.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the manifests")

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "kubernetes"
OVERLAYS = ("dev", "prod", "external-redis")
ROUTER = "shellgate-router"
EXECSERVER = "shellgate-execserver"
REDIS = "shellgate-redis"
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob", "Pod")

Doc = dict[str, Any]


@functools.cache
def _render(overlay: str) -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (which embeds kustomize) is not installed: cannot render overlays")
    result = subprocess.run(
        [kubectl, "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def rendered(overlay: str) -> list[Doc]:
    """Every object `kubectl apply -k overlays/<overlay>` would apply (fresh copies)."""
    return [d for d in yaml.safe_load_all(_render(overlay)) if d]


def load_file(path: Path) -> list[Doc]:
    """The objects of one manifest file that no overlay applies (secrets, opt-in)."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def find(docs: list[Doc], kind: str, name: str) -> Doc:
    """The one object of that kind and name."""
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} x {kind}/{name}"
    return found[0]


def workloads(docs: list[Doc]) -> list[Doc]:
    """Objects that run pods."""
    return [d for d in docs if d["kind"] in WORKLOAD_KINDS]


def pod_spec(doc: Doc) -> Doc:
    """The pod spec of a workload."""
    spec: Doc = doc["spec"] if doc["kind"] == "Pod" else doc["spec"]["template"]["spec"]
    return spec


def pod_labels(doc: Doc) -> dict[str, str]:
    """The labels a workload's pods carry."""
    labels: dict[str, str] = doc["spec"]["template"]["metadata"]["labels"]
    return labels


def containers(doc: Doc) -> list[Doc]:
    """Init and regular containers of a workload."""
    spec = pod_spec(doc)
    return [*spec.get("initContainers", []), *spec["containers"]]


def configmap_text(docs: list[Doc], name: str, key: str) -> str:
    """One data key of a ConfigMap."""
    text: str = find(docs, "ConfigMap", name)["data"][key]
    return text


def configmap_toml(docs: list[Doc], name: str, key: str) -> dict[str, Any]:
    """One TOML data key of a ConfigMap, parsed."""
    return tomllib.loads(configmap_text(docs, name, key))


def redis_conf(docs: list[Doc]) -> dict[str, str]:
    """The rendered redis.conf as directive -> arguments."""
    conf: dict[str, str] = {}
    for line in configmap_text(docs, REDIS + "-config", "redis.conf").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition(" ")
            conf[name] = value.strip()
    return conf
