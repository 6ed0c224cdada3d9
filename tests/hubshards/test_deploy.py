"""deploy/hub-shards applies to a Kubernetes API (kubesim) in kustomize's order: a StatefulSet
of hub shards (pod name = shard name) whose ServiceAccount may hold Leases in its namespace,
and nothing more."""

from __future__ import annotations

from pathlib import Path

import yaml

from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim

SHARDS = Path(__file__).resolve().parents[2] / "deploy" / "hub-shards"


def documents() -> list[dict]:
    order = yaml.safe_load((SHARDS / "kustomization.yaml").read_text())["resources"]
    return [d for f in order for d in yaml.safe_load_all((SHARDS / f).read_text()) if d]


def test_the_shards_apply_as_a_statefulset_of_three_with_their_service_account() -> None:
    with KubeSim() as sim:
        client = KubeClient(sim.api_client())
        for doc in documents():
            client.apply(doc)
        sts = client.get("apps/v1", "StatefulSet", "gitfleet-hub", "gitfleet-hub")
        assert client.get("v1", "ServiceAccount", "gitfleet-hub", "gitfleet-hub-shards")
    assert sts is not None and sts["spec"]["replicas"] == 3
    spec = sts["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "gitfleet-hub-shards"
    [container] = spec["containers"]
    assert container["args"][0] == "hub" and "--shards=auto" in container["args"]
    assert not any(a.startswith("--shard-name") for a in container["args"])  # the pod's name


def test_the_shards_may_hold_leases_in_their_namespace_and_nothing_else() -> None:
    [role] = [d for d in documents() if d["kind"] == "Role"]
    assert role["metadata"]["namespace"] == "gitfleet-hub"
    assert role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "verbs": ["get", "list", "create", "update"]}]
    [binding] = [d for d in documents() if d["kind"] == "RoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gitfleet-hub-shards",
                                    "namespace": "gitfleet-hub"}]
    assert not [d for d in documents() if d["kind"].startswith("Cluster")]
