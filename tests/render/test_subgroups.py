"""SEMANTICS "Subscriptions (Clusternet)": `schedulingBySubGroup` with
`subscribers[].subGroupStrategy.minClusters`."""

from __future__ import annotations

from typing import Any

from gitfleet.model.objects import Taint
from gitfleet.render.core import RenderResult, render
from gitfleet.render.status import StatusSnapshot
from tests.render.conftest import cluster, deployment, feed, fleet_of, subscription
from tests.render.test_steady_division import cpu_room

A = {"matchLabels": {"group": "a"}}
B = {"matchLabels": {"group": "b"}}
GROUPS = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "b2": "b"}


def run(subscribers: list[dict[str, Any]], status: StatusSnapshot, *,
        taints: dict[str, list[dict[str, str]]] | None = None,
        tolerations: list[dict[str, str]] | None = None,
        previous: RenderResult | None = None) -> RenderResult:
    spec: dict[str, Any] = {"schedulingBySubGroup": True}
    if tolerations:
        spec["clusterTolerations"] = tolerations
    entries = [cluster(n, {"group": g}, taints=(taints or {}).get(n)) for n, g in GROUPS.items()]
    entries += [("templates/d.yaml", deployment("web", replicas=3, cpu="1")),
                ("policies/s.yaml", subscription("s", [feed("Deployment", "web")], subscribers,
                                                 **spec))]
    return render(fleet_of(*entries), status=status,
                  previous_files=previous.files if previous else None)


def bound(result: RenderResult) -> list[str]:
    return sorted(n for n in GROUPS if f"clusters/{n}/apps/s/description.yaml" in result.files)


def sub(selector: dict[str, Any], min_clusters: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"clusterAffinity": selector}
    if min_clusters is not None:
        out["subGroupStrategy"] = {"minClusters": min_clusters}
    return out


ROOM = cpu_room(a1=2, a2=8, a3=5, b1=3, b2=3)


def test_each_subscriber_binds_its_first_min_clusters_by_available_replicas_then_name() -> None:
    result = run([sub(A, 2), sub(B, 1)], ROOM)
    assert bound(result) == ["a2", "a3", "b1"]
    assert not result.errors


def test_untolerated_prefer_no_schedule_taints_rank_a_cluster_last() -> None:
    taint = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    result = run([sub(A, 2), sub(B, 1)], ROOM, taints={"a2": [taint]})
    assert bound(result) == ["a1", "a3", "b1"]
    tolerated = run([sub(A, 2), sub(B, 1)], ROOM, taints={"a2": [taint]},
                    tolerations=[{"key": "spot", "operator": "Exists"}])
    assert bound(tolerated) == ["a2", "a3", "b1"]
    # a taint the hub adds from heartbeats counts the same way
    hub_taint = StatusSnapshot(capacity=ROOM.capacity, taints={
        "a2": (Taint("slow", "yes", "PreferNoSchedule"),)})
    assert bound(run([sub(A, 2), sub(B, 1)], hub_taint)) == ["a1", "a3", "b1"]


def test_missing_min_clusters_is_an_error_naming_the_subscriber() -> None:
    result = run([sub(A, 2), sub(B, None)], ROOM)
    [error] = result.errors
    assert error.obj == "Subscription/apps/s"
    assert "spec.subscribers[1].subGroupStrategy.minClusters" in error.message
    assert bound(result) == []


def test_the_binding_stays_when_the_workload_s_own_pods_use_the_room() -> None:
    first = run([sub(A, 1), sub(B, 1)], cpu_room(a1=5, a2=4, a3=0, b1=3, b2=0))
    assert bound(first) == ["a1", "b1"]
    # a1 now runs its 3 replicas: 2 free against a2's 4, but 5 with its own
    later = run([sub(A, 1), sub(B, 1)], cpu_room(a1=2, a2=4, a3=0, b1=0, b2=0), previous=first)
    assert bound(later) == ["a1", "b1"]
