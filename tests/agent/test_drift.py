"""Drift compares only what the Description sets, after normalisation."""

from __future__ import annotations

import copy

from gitfleet.agent.drift import compare
from gitfleet.quantity import decimal_quantity as quantity
from tests.agent.fleetstate import configmap, deployment


def _live_from(desired: dict) -> dict:
    """What a server returns: defaults filled in, status and metadata added, order changed."""
    live = copy.deepcopy(desired)
    live["metadata"].update({"uid": "u1", "resourceVersion": "7", "generation": 1,
                             "labels": {**desired["metadata"]["labels"], "extra": "by-someone"}})
    spec = live["spec"]
    spec["strategy"] = {"type": "RollingUpdate"}
    spec["revisionHistoryLimit"] = 10
    container = spec["template"]["spec"]["containers"][0]
    container["imagePullPolicy"] = "IfNotPresent"
    container["ports"][0]["protocol"] = "TCP"
    container["resources"]["requests"] = {"memory": "67108864", "cpu": "0.1"}
    spec["template"]["spec"]["containers"].insert(0, {"name": "sidecar", "image": "envoy"})
    live["status"] = {"replicas": 1}
    return dict(reversed(list(live.items())))


def test_server_defaults_other_owners_and_notation_are_not_drift() -> None:
    desired = deployment("web", "bar")
    assert compare(desired, _live_from(desired)) == []


def test_scaled_deployment_is_drift_with_both_values() -> None:
    desired = deployment("web", "bar", replicas=3)
    live = _live_from(desired)
    live["spec"]["replicas"] = 1
    drift = compare(desired, live)
    assert [(d.path, d.desired, d.live) for d in drift] == [("spec.replicas", 3, 1)]


def test_changed_container_is_found_by_name_not_position() -> None:
    desired = deployment("web", "bar")
    live = _live_from(desired)
    live["spec"]["template"]["spec"]["containers"][1]["image"] = "nginx:evil"
    drift = compare(desired, live)
    assert [d.path for d in drift] == ["spec.template.spec.containers[name=web].image"]


def test_removed_label_and_data_key_are_drift() -> None:
    desired = configmap("c", "bar", {"a": "1", "b": "2"})
    desired["metadata"]["labels"] = {"app.kubernetes.io/name": "x"}
    live = copy.deepcopy(desired)
    del live["data"]["b"]
    live["metadata"]["labels"] = {}
    paths = sorted(d.path for d in compare(desired, live))
    assert paths == ["data.b", "metadata.labels['app.kubernetes.io/name']"]


def test_int_or_string_and_quantities() -> None:
    desired = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
               "spec": {"ports": [{"port": 80, "targetPort": "8080"}]}}
    live = copy.deepcopy(desired)
    live["spec"]["ports"][0]["targetPort"] = 8080
    assert compare(desired, live) == []
    live["spec"]["ports"][0]["targetPort"] = 8081
    assert [d.path for d in compare(desired, live)] == ["spec.ports[port=80].targetPort"]
    assert quantity("1000m") == quantity("1") == quantity(1)
    assert quantity("1Gi") == quantity("1024Mi")
    assert quantity("nginx") is None


def test_secret_string_data_compares_against_data() -> None:
    desired = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
               "stringData": {"password": "hunter2"}}
    live = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"password": "aHVudGVyMg=="}, "type": "Opaque"}
    assert compare(desired, live) == []
    live["data"]["password"] = "b3RoZXI="
    assert [d.path for d in compare(desired, live)] == ["data.password"]


def test_description_label_values_are_valid() -> None:
    from gitfleet.agent.marks import label_value, ownership_labels

    assert ownership_labels("c1", "_cluster/all-ns")["gitfleet.io/description"] == \
        "cluster.all-ns"
    long = label_value("team-" + "x" * 80 + ".web")
    assert len(long) == 63 and long[0].isalnum() and long[-1].isalnum()
    assert long != label_value("team-" + "x" * 80 + ".api")
