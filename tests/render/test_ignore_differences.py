"""fleet.yaml `ignoreDifferences` and FederatedHPA targets reach every cluster's `cluster.yaml`,
where the agent reads them (gitfleet.agent.ignore); bad entries are errors naming fleet.yaml."""

from __future__ import annotations

from typing import Any

from gitfleet.agent.desired import parse_cluster_tree
from gitfleet.agent.ignore import Ignores
from gitfleet.wire.objectref import ObjectRef
from tests.render.conftest import cluster, deployment, feed, load, run, subscription

FLEET = b"""apiVersion: gitfleet.io/v1alpha1
kind: FleetSettings
ignoreDifferences:
- group: apps
  kind: Deployment
  jsonPointers: [/spec/template/spec/containers/0/image]
- kind: ConfigMap
  name: tuning
  managedFieldsManagers: [tuner]
"""

FHPA: dict[str, Any] = {
    "apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "FederatedHPA",
    "metadata": {"name": "web", "namespace": "apps"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
             "minReplicas": 1, "maxReplicas": 10}}


def _fleet(*extra: Any) -> list[Any]:
    return [cluster("c1", {"env": "prod"}), ("templates/web.yaml", deployment("web")),
            ("subscriptions/web.yaml", subscription("web", [feed("Deployment", "web")],
                                                    [{"clusterAffinity": {}}])), *extra]


def test_without_entries_cluster_yaml_has_no_ignore_differences() -> None:
    result = run(*_fleet())
    assert "ignoreDifferences" not in load(result, "clusters/c1/cluster.yaml")


def test_entries_and_federated_hpa_targets_reach_the_agent() -> None:
    result = run(*_fleet(("fleet.yaml", FLEET), ("policies/fhpa.yaml", FHPA)))
    assert result.errors == []
    assert load(result, "clusters/c1/cluster.yaml")["ignoreDifferences"] == [
        {"group": "apps", "kind": "Deployment",
         "jsonPointers": ["/spec/template/spec/containers/0/image"]},
        {"group": "", "kind": "ConfigMap", "name": "tuning", "managedFieldsManagers": ["tuner"]},
        {"group": "apps", "kind": "Deployment", "namespace": "apps", "name": "web",
         "jsonPointers": ["/spec/replicas"], "owner": "hub"},
    ]
    tree = {p.removeprefix("clusters/c1/"): d for p, d in result.files.items()
            if p.startswith("clusters/c1/")}
    desired = parse_cluster_tree(tree, cluster_commit="x")
    ignores = Ignores.of(desired.objects, desired.ignore_differences)
    pointers, _ = ignores.paths(ObjectRef("apps/v1", "Deployment", "apps", "web"), None)
    assert pointers == [("spec", "template", "spec", "containers", "0", "image"),
                        ("spec", "replicas")]
    assert ignores.paths(ObjectRef("apps/v1", "Deployment", "other", "web"), None)[0] == [
        ("spec", "template", "spec", "containers", "0", "image")]


def test_a_bad_entry_is_an_error_of_fleet_yaml() -> None:
    bad = b"""apiVersion: gitfleet.io/v1alpha1
kind: FleetSettings
ignoreDifferences:
- group: apps
  kind: Deployment
  jqPathExpressions: [.spec.replicas]
"""
    result = run(*_fleet(("fleet.yaml", bad)))
    assert result.errors
    assert all(p.path == "fleet.yaml" for p in result.errors)
    assert any("jqPathExpressions" in p.message for p in result.errors)
