"""Room is counted per node and summed (SEMANTICS "Available replicas"), as upstream's
predictors do (clusternet pkg/predictor default_compute.go / default_aggregate.go, commit
19245baa3558): a replica never counts as room on a node it does not fit on. The heartbeat
carries each schedulable node's free room, identical nodes grouped; a heartbeat of an older
agent without that summary is still read, from its sums."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace
from typing import Any

from kubernetes import client

from gitfleet.agent.heartbeat import MAX_NODE_GROUPS, build_heartbeat, node_groups
from gitfleet.hub.capacity import Capacity
from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim
from gitfleet.render.core import render
from gitfleet.render.status import ClusterCapacity, NodeRoom, StatusSnapshot, room_for
from gitfleet.wire.status import ClusterStatus, Heartbeat
from tests.render.conftest import (
    cluster,
    deployment,
    feed,
    fleet_of,
    replicas,
    subscription,
)

HALF_CPU_REQUEST = Fraction(1, 2)


def beat_of(sim: KubeSim) -> Heartbeat:
    api = sim.api_client()
    try:
        facts = KubeClient(api).facts()
    finally:
        api.close()
    return build_heartbeat(time="2026-01-01T00:00:00Z", interval_seconds=60,
                           version=facts.version, healthz=True, livez=True, readyz=True,
                           nodes=facts.nodes, pods=facts.pods, cluster_id=facts.cluster_id,
                           app_pusher=False)


def hub_capacity(beat: Heartbeat) -> ClusterCapacity:
    """What the hub's capacity planner makes of a heartbeat, read back from status.yaml."""
    read = Heartbeat.from_dict(beat.to_dict())
    inputs: Any = SimpleNamespace(status=SimpleNamespace(
        statuses={"c": ClusterStatus(cluster="c", heartbeat=read)}))
    capacity: ClusterCapacity = Capacity().plan(inputs).snapshot["capacity"]["c"]
    return capacity


def test_two_small_nodes_and_a_large_one_hold_one_one_and_four() -> None:
    with KubeSim(nodes=0, pods=True, controller_delay=0.01) as sim:
        sim.add_node("small-a", cpu="750m", memory="4Gi", pods="110")
        sim.add_node("small-b", cpu="750m", memory="4Gi", pods="110")
        sim.add_node("large", cpu="2", memory="4Gi", pods="110")
        # room no replica may count on: a control-plane node, a cordoned one
        sim.add_node("control", cpu="8", memory="16Gi", pods="110")
        sim.add_node("cordoned", cpu="8", memory="16Gi", pods="110")
        api = sim.api_client()
        try:
            core = client.CoreV1Api(api)
            core.patch_node("control", {"spec": {"taints": [
                {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}})
            core.patch_node("cordoned", {"spec": {"unschedulable": True}})
        finally:
            api.close()
        beat = beat_of(sim)
    assert beat.node_groups is not None
    assert sorted((g.nodes, g.free["cpu"]) for g in beat.node_groups) == [(1, "2"), (2, "750m")]
    capacity = hub_capacity(beat)
    assert room_for({"cpu": HALF_CPU_REQUEST}, capacity) == 1 + 1 + 4
    # the sums alone would have said 19.5 cores free: 39 replicas
    assert room_for({"cpu": HALF_CPU_REQUEST},
                    ClusterCapacity(allocatable=beat.allocatable,
                                    requested=beat.requested)) == 39


def test_pods_already_on_a_node_take_its_room_and_its_pod_slots() -> None:
    with KubeSim(nodes=0, pods=True, controller_delay=0.01) as sim:
        sim.add_node("n1", cpu="2", memory="4Gi", pods="3")
        sim.add_node("n2", cpu="2", memory="4Gi", pods="10")
        api = sim.api_client()
        try:
            core = client.CoreV1Api(api)
            core.create_namespace({"metadata": {"name": "apps"}})
            for i in range(2):
                core.create_namespaced_pod("apps", {
                    "metadata": {"name": f"busy-{i}"},
                    "spec": {"nodeName": "n1", "containers": [
                        {"name": "c", "image": "busybox",
                         "resources": {"requests": {"cpu": "600m"}}}]}})
        finally:
            api.close()
        beat = beat_of(sim)
    capacity = hub_capacity(beat)
    # n1: 800m and one pod slot free -> 1; n2: 2 cores -> 4
    assert room_for({"cpu": HALF_CPU_REQUEST}, capacity) == 5
    # a replica that asks for nothing is limited by free pod slots: 1 + 10
    assert room_for({}, capacity) == 11


def test_dynamic_division_places_by_the_room_of_each_node() -> None:
    # cluster "pair": two nodes with 750m free; "big": one node with 2 cores. Counted from
    # sums, pair would have room for 3 and get 3 of 6; counted per node it holds 2.
    status = StatusSnapshot(capacity={
        "pair": ClusterCapacity(allocatable={"cpu": "1500m", "pods": "220"},
                                requested={"cpu": "0", "pods": "0"},
                                nodes=(NodeRoom(2, {"cpu": "750m", "pods": "110"}),)),
        "big": ClusterCapacity(allocatable={"cpu": "2", "pods": "110"},
                               requested={"cpu": "0", "pods": "0"},
                               nodes=(NodeRoom(1, {"cpu": "2", "pods": "110"}),))})
    fleet = fleet_of(cluster("pair", {"env": "prod"}), cluster("big", {"env": "prod"}),
                     ("templates/web.yaml", deployment("web", replicas=6, cpu="500m")),
                     ("policies/s.yaml", subscription(
                         "s", [feed("Deployment", "web")],
                         [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}],
                         schedulingStrategy="Dividing",
                         dividingScheduling={"type": "Dynamic"})))
    result = render(fleet, status=status)
    assert list(result.errors) == []
    assert (replicas(result, "pair", "web"), replicas(result, "big", "web")) == (2, 4)


def test_an_older_heartbeat_without_the_summary_is_read_from_its_sums() -> None:
    old = {"time": "2026-01-01T00:00:00Z", "intervalSeconds": 60,
           "allocatable": {"cpu": "1500m", "pods": "220"},
           "requested": {"cpu": "0", "pods": "0"}}
    beat = Heartbeat.from_dict(old)
    assert beat.node_groups is None and "nodeGroups" not in beat.to_dict()
    capacity = hub_capacity(beat)
    assert capacity.nodes is None
    assert room_for({"cpu": HALF_CPU_REQUEST}, capacity) == 3


def _node(name: str, cpu_millis: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {},
            "status": {"allocatable": {"cpu": f"{cpu_millis}m", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def test_thousands_of_different_nodes_stay_a_few_groups_and_never_gain_room() -> None:
    nodes = [_node(f"n{i}", 1000 + 7 * i) for i in range(3000)]
    groups = node_groups(nodes, [])
    assert len(groups) <= MAX_NODE_GROUPS
    assert sum(g.nodes for g in groups) == 3000
    room = room_for({"cpu": HALF_CPU_REQUEST}, ClusterCapacity(nodes=tuple(
        NodeRoom(g.nodes, g.free) for g in groups)))
    exact = sum((1000 + 7 * i) // 500 for i in range(3000))
    assert room is not None and exact * 0.9 <= room <= exact
