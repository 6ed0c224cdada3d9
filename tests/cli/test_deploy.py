"""The install manifests under deploy/ apply cleanly to a Kubernetes API (kubesim), in the
order kustomize would, and say what the agent needs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "deploy" / "agent"


def documents() -> list[dict]:
    order = yaml.safe_load((AGENT / "kustomization.yaml").read_text())["resources"]
    return [d for f in order for d in yaml.safe_load_all((AGENT / f).read_text()) if d]


def test_agent_manifests_apply_to_a_cluster() -> None:
    docs = documents()
    with KubeSim() as sim:
        client = KubeClient(sim.api_client())
        for doc in docs:
            client.apply(doc)
        dep = client.get("apps/v1", "Deployment", "gitfleet-system", "gitfleet-agent")
        assert dep is not None
        assert client.get("v1", "ServiceAccount", "gitfleet-system", "gitfleet-agent")
        assert client.get("v1", "Secret", "gitfleet-system", "gitfleet-git")
    spec = dep["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "gitfleet-agent"
    [container] = spec["containers"]
    assert container["args"][0] == "agent"
    assert "--repo=$(GITFLEET_REPO_URL)" in container["args"]
    assert "--feature-gates=Recovery=true" in container["args"]
    env = {e["name"] for e in container["env"]}
    assert {"CLUSTER_NAME", "GITFLEET_REPO_URL"} <= env


def test_agent_may_do_what_it_must() -> None:
    [role] = [d for d in documents() if d["kind"] == "ClusterRole"]
    verbs = {v for r in role["rules"] if "resources" in r for v in r["verbs"]}
    assert {"get", "list", "watch", "create", "patch", "delete"} <= verbs
    urls = {u for r in role["rules"] for u in r.get("nonResourceURLs", [])}
    assert {"/healthz", "/livez", "/readyz"} <= urls
    [binding] = [d for d in documents() if d["kind"] == "ClusterRoleBinding"]
    assert binding["subjects"][0]["name"] == "gitfleet-agent"


def test_dockerfile_runs_gitfleet() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert text.startswith("#") and "FROM python:3.11-slim" in text
    assert 'ENTRYPOINT ["gitfleet"]' in text and "pip install" in text
    # the hub renders HelmChart feeds with helm: the image carries the pinned binary
    assert "tools/install-k8s-tools" in text and "/usr/local/bin/helm" in text


def test_hub_manifest_applies() -> None:
    hub = ROOT / "deploy" / "hub"
    order = yaml.safe_load((hub / "kustomization.yaml").read_text())["resources"]
    docs = [d for f in order for d in yaml.safe_load_all((hub / f).read_text()) if d]
    assert docs[0]["kind"] == "Namespace" and docs[0]["metadata"]["name"] == "gitfleet-hub"
    with KubeSim() as sim:
        client = KubeClient(sim.api_client())
        for doc in docs:
            client.apply(doc)
        dep = client.get("apps/v1", "Deployment", "gitfleet-hub", "gitfleet-hub")
    assert dep is not None
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[0] == "hub" and "--repo=$(GITFLEET_REPO_URL)" in args


# --- kubectl, as an operator applies them ------------------------------------------------------

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def _rendered(folder: str) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    out = subprocess.run([KUBECTL, "kustomize", folder], capture_output=True, text=True,
                         timeout=60, cwd=ROOT, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@needs_kubectl
@pytest.mark.parametrize("folder, namespace", [("deploy/agent", "gitfleet-system"),
                                               ("deploy/hub", "gitfleet-hub")])
def test_kubectl_applies_the_kustomization(folder: str, namespace: str, tmp_path: Path) -> None:
    with KubeSim() as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        # a server-side dry run checks every object against the API; objects in a namespace
        # the same run would create fail on a real server too, so the Namespace goes first
        ns = _kubectl(kubeconfig, "apply", "-f", f"{folder}/namespace.yaml")
        assert ns.returncode == 0, ns.stderr
        dry = _kubectl(kubeconfig, "apply", "--dry-run=server", "-k", folder)
        assert dry.returncode == 0, dry.stderr
        assert "deployment.apps/" in dry.stdout and "(server dry run)" in dry.stdout
        none = _kubectl(kubeconfig, "get", "deployments", "-n", namespace, "-o", "name")
        assert none.stdout.strip() == ""  # a dry run persists nothing
        done = _kubectl(kubeconfig, "apply", "--server-side", "-k", folder)
        assert done.returncode == 0, done.stderr
        names = _kubectl(kubeconfig, "get", "deployments", "-n", namespace, "-o", "name")
    assert names.stdout.strip().startswith("deployment.apps/gitfleet-")


@needs_kubectl
@pytest.mark.parametrize("folder, kind", [("deploy/agent", "agent"), ("deploy/hub", "hub")])
def test_image_comes_from_kustomize_and_probes_use_the_http_port(folder: str,
                                                                   kind: str) -> None:
    docs = _rendered(folder)
    kinds = [d["kind"] for d in docs]
    assert "Namespace" in kinds
    [dep] = [d for d in docs if d["kind"] == "Deployment"]
    [container] = dep["spec"]["template"]["spec"]["containers"]
    images = yaml.safe_load((ROOT / folder / "kustomization.yaml").read_text())["images"]
    assert container["image"] == f"{images[0]['newName']}:{images[0]['newTag']}"
    assert "--listen=0.0.0.0:8080" in container["args"]
    assert {"name": "http", "containerPort": 8080} in container["ports"]
    live, ready = container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"]
    assert live == {"path": "/healthz", "port": "http"}
    # both are ready on /readyz: the agent once it has synced, the hub once it has rendered
    assert ready == {"path": "/readyz", "port": "http"}
