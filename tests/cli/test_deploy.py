"""The install manifests under deploy/ apply cleanly to a Kubernetes API (kubesim), in the
order kustomize would, and say what the agent needs."""

from __future__ import annotations

from pathlib import Path

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


def test_hub_manifest_applies() -> None:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy/hub/hub.yaml").read_text()) if d]
    with KubeSim() as sim:
        client = KubeClient(sim.api_client())
        client.ensure_namespace("gitfleet-hub")
        for doc in docs:
            client.apply(doc)
        dep = client.get("apps/v1", "Deployment", "gitfleet-hub", "gitfleet-hub")
    assert dep is not None
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[0] == "hub" and "--repo=$(GITFLEET_REPO_URL)" in args
