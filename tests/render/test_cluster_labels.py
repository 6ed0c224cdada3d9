"""The labels Clusternet puts on every cluster: `clusters.clusternet.io/cluster-id` (its
spec.clusterId) and `clusters.clusternet.io/cluster-name` (its name). Every Clusternet example
selects on them, so a cluster file as registration writes it must be selectable by them."""

from __future__ import annotations

import yaml

from gitfleet.cli import main
from tests.render.conftest import (
    cluster,
    deployment,
    feed,
    fleet_of,
    replicas,
    run,
    subscription,
)

CLUSTER_ID = "clusters.clusternet.io/cluster-id"
CLUSTER_NAME = "clusters.clusternet.io/cluster-name"
UID = "4b1c9e52-6a3c-4d8e-9f0a-1e2d3c4b5a69"


def by_label(key: str, value: str) -> dict:
    return {"clusterAffinity": {"matchLabels": {key: value}}}


def test_every_cluster_carries_its_id_and_name_as_labels() -> None:
    fleet = fleet_of(cluster("edge-1", {"env": "edge"}, clusterId=UID), cluster("lab"))
    assert fleet.errors == ()
    assert fleet.clusters["edge-1"].labels == {"env": "edge", CLUSTER_ID: UID,
                                               CLUSTER_NAME: "edge-1"}
    # a hand-written cluster without a clusterId has its name, and no id to select by
    assert fleet.clusters["lab"].labels == {CLUSTER_NAME: "lab"}


def test_selectors_see_the_built_in_labels() -> None:
    result = run(cluster("edge-1", clusterId=UID), cluster("edge-2", clusterId="other-uid"),
                 cluster("lab"),
                 ("templates/web.yaml", deployment("web", replicas=2)),
                 ("policies/by-id.yaml", subscription(
                     "by-id", [feed("Deployment", "web", namespace="apps")],
                     [by_label(CLUSTER_ID, UID)])),
                 ("policies/by-name.yaml", subscription(
                     "by-name", [feed("Deployment", "web", namespace="apps")],
                     [by_label(CLUSTER_NAME, "lab")], namespace="other")))
    assert list(result.errors) == []
    assert replicas(result, "edge-1", "web") == 2
    assert replicas(result, "edge-2", "web") is None
    assert replicas(result, "lab", "web") == 2
    # the labels reach the cluster's own cluster.yaml, as they are on upstream's ManagedCluster
    written = yaml.safe_load(result.files["clusters/edge-1/cluster.yaml"])
    assert written["labels"][CLUSTER_ID] == UID


def test_a_file_may_repeat_the_built_in_labels_with_their_values() -> None:
    fleet = fleet_of(cluster("edge-1", {CLUSTER_ID: UID, CLUSTER_NAME: "edge-1"}, clusterId=UID))
    assert fleet.errors == ()
    assert fleet.clusters["edge-1"].labels[CLUSTER_ID] == UID


def test_a_file_that_sets_them_otherwise_is_an_error_at_the_label() -> None:
    fleet = fleet_of(cluster("edge-1", {"env": "edge", CLUSTER_NAME: "area1-cluster"}),
                     cluster("edge-2", {CLUSTER_ID: "made-up"}, clusterId=UID),
                     cluster("edge-3", {CLUSTER_ID: UID}))
    errors = {p.path: p for p in fleet.errors}
    assert set(errors) == {"clusters/edge-1.yaml", "clusters/edge-2.yaml",
                           "clusters/edge-3.yaml"}
    name = errors["clusters/edge-1.yaml"]
    assert name.line == 7
    assert f"{CLUSTER_NAME} is set by gitfleet" in name.message
    assert "'edge-1'" in name.message
    assert f"spec.clusterId, '{UID}'" in errors["clusters/edge-2.yaml"].message
    assert "set spec.clusterId instead" in errors["clusters/edge-3.yaml"].message
    # a broken cluster file is no cluster (nothing is placed on a cluster whose labels lie)
    assert fleet.clusters == {}
    assert fleet.broken_clusters == {"edge-1", "edge-2", "edge-3"}


def test_validate_names_the_file_line_and_label(tmp_path, capsys) -> None:
    (tmp_path / "clusters").mkdir()
    path, data = cluster("edge-1", {CLUSTER_NAME: "prod"})
    (tmp_path / path).write_bytes(data)
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"clusters/edge-1.yaml:6: ManagedCluster/edge-1: metadata.labels: {CLUSTER_NAME} " \
        "is set by gitfleet" in out, out
