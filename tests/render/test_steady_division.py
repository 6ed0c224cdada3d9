"""SEMANTICS "Subscriptions (Clusternet)" Dynamic, "Propagation (Karmada)" dynamicWeight /
Aggregated and "Rebalance": division is steady across renders, through the previous state."""

from __future__ import annotations

from typing import Any

import yaml

from gitfleet.model.loader import Fleet
from gitfleet.render.core import RenderResult, render
from gitfleet.render.status import ClusterCapacity, StatusSnapshot
from tests.render.conftest import (
    cluster,
    deployment,
    feed,
    fleet_of,
    merge,
    override_set,
    replicas,
    subscription,
)
from tests.render.test_karmada import pp

PROD = {"matchLabels": {"env": "prod"}}
DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
NAMES = ("a", "b", "c")


def cpu_room(**free: int) -> StatusSnapshot:
    """Clusters with this many free cpus (the workloads below ask one cpu per replica)."""
    return StatusSnapshot(capacity={n: ClusterCapacity(allocatable={"cpu": str(f)},
                                                       requested={"cpu": "0"})
                                    for n, f in free.items()})


def clusternet(total: int, *, clusters: tuple[str, ...] = NAMES, rebalance: str = "") -> Fleet:
    sub = subscription("s", [feed("Deployment", "web")], [{"clusterAffinity": PROD}],
                       schedulingStrategy="Dividing", dividingScheduling={"type": "Dynamic"})
    if rebalance:
        sub["metadata"]["annotations"] = {"gitfleet.io/rebalance": rebalance}
    return fleet_of(*(cluster(n, {"env": "prod"}) for n in clusters),
                    ("templates/d.yaml", deployment("web", replicas=total, cpu="1")),
                    ("policies/s.yaml", sub))


def karmada(total: int, *, aggregated: bool = False, clusters: tuple[str, ...] = NAMES,
            rebalance: str = "") -> Fleet:
    rs: dict[str, Any] = {"replicaSchedulingType": "Divided"}
    if aggregated:
        rs["replicaDivisionPreference"] = "Aggregated"
    else:
        rs["replicaDivisionPreference"] = "Weighted"
        rs["weightPreference"] = {"dynamicWeight": "AvailableReplicas"}
    policy = pp("p", [DEPLOY], {"clusterAffinity": {"labelSelector": PROD},
                                "replicaScheduling": rs})
    if rebalance:
        policy["metadata"]["annotations"] = {"gitfleet.io/rebalance": rebalance}
    return fleet_of(*(cluster(n, {"env": "prod"}) for n in clusters),
                    ("templates/d.yaml", deployment("web", replicas=total, cpu="1")),
                    ("policies/p.yaml", policy))


def placed(result: RenderResult, clusters: tuple[str, ...] = NAMES) -> dict[str, int]:
    return {c: n for c in clusters if (n := replicas(result, c, "web")) is not None}


def again(fleet: Fleet, before: RenderResult, status: StatusSnapshot) -> RenderResult:
    return render(fleet, previous_files=before.files, status=status)


# -- Clusternet Dynamic ---------------------------------------------------------------------

def test_clusternet_unchanged_total_moves_nothing_when_room_changes() -> None:
    first = render(clusternet(6), status=cpu_room(a=10, b=10, c=10))
    assert placed(first) == {"a": 2, "b": 2, "c": 2}
    later = again(clusternet(6), first, cpu_room(a=1, b=30, c=5))
    assert placed(later) == {"a": 2, "b": 2, "c": 2}
    assert later.files == first.files


def test_clusternet_scale_up_divides_only_the_extra_by_free_room() -> None:
    first = render(clusternet(6), status=cpu_room(a=10, b=10, c=10))
    # 6 more over free room 1:2:3 -> 1, 2, 3 added to the 2, 2, 2 already there
    up = again(clusternet(12), first, cpu_room(a=1, b=2, c=3))
    assert placed(up) == {"a": 3, "b": 4, "c": 5}


def test_clusternet_scale_down_takes_in_proportion_to_what_each_holds() -> None:
    first = render(clusternet(12), status=cpu_room(a=2, b=4, c=6))
    assert placed(first) == {"a": 2, "b": 4, "c": 6}
    down = again(clusternet(6), first, cpu_room(a=100, b=0, c=0))
    assert placed(down) == {"a": 1, "b": 2, "c": 3}


def test_clusternet_extra_beyond_room_stays_unplaced_with_a_warning() -> None:
    first = render(clusternet(3), status=cpu_room(a=10, b=10, c=10))
    up = again(clusternet(10), first, cpu_room(a=1, b=1, c=0))
    assert placed(up) == {"a": 2, "b": 2, "c": 1}
    assert any("room for 5 of 10 replicas; 5 left unplaced" in w.message for w in up.warnings)
    # room appears later: the unplaced replicas are placed, nothing else moves
    later = again(clusternet(10), up, cpu_room(a=0, b=0, c=5))
    assert placed(later) == {"a": 2, "b": 2, "c": 6}
    assert not any("unplaced" in w.message for w in later.warnings)


def test_clusternet_replicas_of_an_unbound_cluster_are_placed_on_the_others() -> None:
    first = render(clusternet(6), status=cpu_room(a=10, b=10, c=10))
    gone = again(clusternet(6, clusters=("a", "b")), first, cpu_room(a=1, b=3))
    # c's 2 replicas are extra: over free room 1:3 -> 0.5, 1.5: floors 0, 1, and the one
    # left to the largest fraction (a tie, .5 and .5: by name, a)
    assert placed(gone, ("a", "b")) == {"a": 3, "b": 3}


def test_clusternet_rebalance_token_divides_afresh_counting_own_replicas() -> None:
    first = render(clusternet(6), status=cpu_room(a=10, b=10, c=10))
    busy = cpu_room(a=8, b=0, c=0)  # each cluster also runs its own 2 replicas
    assert placed(again(clusternet(6), first, busy)) == {"a": 2, "b": 2, "c": 2}
    fresh = again(clusternet(6, rebalance="r1"), first, busy)
    # room with own replicas added back: 10, 2, 2 -> 6 * 10/14, 6 * 2/14, 6 * 2/14
    assert placed(fresh) == {"a": 4, "b": 1, "c": 1}
    description = yaml.safe_load(fresh.files["clusters/a/apps/s/description.yaml"])
    assert description["spec"]["rebalance"] == "r1"
    # the same token again is not a new request: steady from here on
    settled = again(clusternet(6, rebalance="r1"), fresh, cpu_room(a=0, b=9, c=9))
    assert placed(settled) == {"a": 4, "b": 1, "c": 1}
    assert settled.files == fresh.files


# -- Karmada dynamicWeight / Aggregated ----------------------------------------------------

def test_karmada_dynamic_weight_is_steady_when_the_total_is_unchanged() -> None:
    first = render(karmada(12), status=cpu_room(a=6, b=8, c=10))
    assert placed(first) == {"a": 3, "b": 4, "c": 5}
    later = again(karmada(12), first, cpu_room(a=30, b=0, c=1))
    assert placed(later) == {"a": 3, "b": 4, "c": 5}
    assert not later.errors


def test_karmada_dynamic_weight_scale_up_and_down() -> None:
    first = render(karmada(12), status=cpu_room(a=6, b=8, c=10))
    up = again(karmada(24), first, cpu_room(a=10, b=10, c=10))
    assert placed(up) == {"a": 7, "b": 8, "c": 9}
    down = again(karmada(12), up, cpu_room(a=0, b=0, c=0))
    # Webster over the current replicas 7:8:9 for 12 (room plays no part)
    assert placed(down) == {"a": 4, "b": 4, "c": 4}


def test_karmada_unschedulable_keeps_the_previous_placement_with_an_error() -> None:
    first = render(karmada(6), status=cpu_room(a=2, b=2, c=2))
    assert placed(first) == {"a": 2, "b": 2, "c": 2}
    up = again(karmada(10), first, cpu_room(a=1, b=0, c=0))
    assert placed(up) == {"a": 2, "b": 2, "c": 2}
    [error] = [e for e in up.errors if "unschedulable" in e.message]
    assert error.obj == "PropagationPolicy/apps/p"
    assert "Deployment apps/web" in error.message
    assert "room for 7 of 10 replicas" in error.message


def test_karmada_unschedulable_first_placement_places_nothing() -> None:
    result = render(karmada(10), status=cpu_room(a=1, b=1, c=1))
    assert placed(result) == {}
    assert any("room for 3 of 10 replicas; nothing is placed" in e.message
               for e in result.errors)


def test_karmada_aggregated_scale_up_fills_clusters_already_holding_first() -> None:
    first = render(karmada(4, aggregated=True), status=cpu_room(a=4, b=6, c=8))
    assert placed(first) == {"c": 4}
    up = again(karmada(10, aggregated=True), first, cpu_room(a=9, b=9, c=6))
    assert placed(up) == {"c": 10}


def test_karmada_rebalance_token_divides_afresh_and_is_remembered() -> None:
    first = render(karmada(6), status=cpu_room(a=2, b=2, c=2))
    busy = cpu_room(a=20, b=0, c=0)
    fresh = again(karmada(6, rebalance="2024-05-01"), first, busy)
    # room plus own replicas: 22, 2, 2 -> Webster for 6
    # (the tie for the last seat, 22/11 against 2/1 and 2/1, goes to fewer assigned, then
    # by the hash-chosen name order: c here)
    assert placed(fresh) == {"a": 5, "c": 1}
    settled = again(karmada(6, rebalance="2024-05-01"), fresh, cpu_room(a=0, b=9, c=9))
    assert placed(settled) == placed(fresh)


def test_a_token_that_needs_quoting_is_remembered_exactly() -> None:
    token = 'run "7": 2024-05-01T00:00:00Z'
    first = render(clusternet(6), status=cpu_room(a=10, b=10, c=10))
    fresh = again(clusternet(6, rebalance=token), first, cpu_room(a=8, b=0, c=0))
    assert placed(fresh) == {"a": 4, "b": 1, "c": 1}
    settled = again(clusternet(6, rebalance=token), fresh, cpu_room(a=0, b=9, c=9))
    assert settled.files == fresh.files


def test_a_localization_of_replicas_sits_below_the_split() -> None:
    # Division is a Localization of priority 1000 that comes after every user override (as
    # upstream's): a Localization setting cluster a's replicas changes nothing, and the next
    # render keeps the placement.
    local = override_set("Localization", "more-on-a", {**DEPLOY, "namespace": "apps"},
                         [merge("replicas", {"spec": {"replicas": 10}})],
                         namespace="gitfleet-a", priority=1000)
    sub = subscription("s", [feed("Deployment", "web")], [{"clusterAffinity": PROD}],
                       schedulingStrategy="Dividing", dividingScheduling={"type": "Dynamic"})
    fleet = fleet_of(*(cluster(n, {"env": "prod"}) for n in NAMES),
                     ("templates/d.yaml", deployment("web", replicas=6, cpu="1")),
                     ("policies/s.yaml", sub), ("policies/l.yaml", local))
    first = render(fleet, status=cpu_room(a=10, b=10, c=10))
    assert placed(first) == {"a": 2, "b": 2, "c": 2}
    description = yaml.safe_load(first.files["clusters/a/apps/s/description.yaml"])
    assert description["spec"]["resources"][0]["divided"] == 2
    later = again(fleet, first, cpu_room(a=0, b=0, c=0))
    assert later.files == first.files


def test_a_karmada_override_of_replicas_is_not_read_back_either() -> None:
    override = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
                "metadata": {"name": "o", "namespace": "apps"},
                "spec": {"resourceSelectors": [DEPLOY], "overrideRules": [{
                    "targetCluster": {"clusterNames": ["a"]},
                    "overriders": {"plaintext": [{"path": "/spec/replicas",
                                                  "operator": "replace", "value": 9}]}}]}}
    policy = pp("p", [DEPLOY], {"clusterAffinity": {"labelSelector": PROD},
                                "replicaScheduling": {
                                    "replicaSchedulingType": "Divided",
                                    "replicaDivisionPreference": "Weighted",
                                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}}})
    fleet = fleet_of(*(cluster(n, {"env": "prod"}) for n in NAMES),
                     ("templates/d.yaml", deployment("web", replicas=6, cpu="1")),
                     ("policies/p.yaml", policy), ("policies/o.yaml", override))
    first = render(fleet, status=cpu_room(a=2, b=2, c=2))
    assert placed(first) == {"a": 9, "b": 2, "c": 2}
    later = again(fleet, first, cpu_room(a=0, b=0, c=0))
    assert later.files == first.files
    assert not later.errors
