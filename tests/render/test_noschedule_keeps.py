"""Peer-table row (SEMANTICS "Subscriptions (Clusternet)"): a NoSchedule taint on a cluster that
holds a Dynamic Subscription's replicas moves nothing — NoSchedule keeps new work off a cluster
(as a cordoned node keeps its pods); only an untolerated NoExecute taint takes the cluster's
share away. As upstream: Clusternet's TaintToleration filter runs when a Subscription is
scheduled, and its dynamic assigner keeps existing bindings while the replicas are unchanged;
Karmada's taint manager evicts on NoExecute only."""

from __future__ import annotations

from gitfleet.model.loader import Fleet
from gitfleet.render.core import RenderResult, render
from gitfleet.render.division import clusternet_steady
from tests.render.conftest import cluster, deployment, feed, fleet_of, replicas, subscription
from tests.render.test_steady_division import cpu_room

PROD = {"matchLabels": {"env": "prod"}}


def fleet(total: int, taints: dict[str, str] | None = None) -> Fleet:
    taints = taints or {}
    sub = subscription("s", [feed("Deployment", "web")], [{"clusterAffinity": PROD}],
                       schedulingStrategy="Dividing", dividingScheduling={"type": "Dynamic"})
    return fleet_of(*(cluster(n, {"env": "prod"}, taints=[
        {"key": "maintenance", "value": "", "effect": taints[n]}] if n in taints else None)
        for n in ("a", "b", "c")),
        ("templates/d.yaml", deployment("web", replicas=total, cpu="1")),
        ("policies/s.yaml", sub))


def placed(result: RenderResult) -> dict[str, int]:
    return {c: n for c in ("a", "b", "c") if (n := replicas(result, c, "web")) is not None}


def test_noschedule_keeps_the_running_share_and_noexecute_moves_it() -> None:
    room = cpu_room(a=10, b=10, c=10)
    first = render(fleet(6), status=room)
    assert placed(first) == {"a": 2, "b": 2, "c": 2}
    cordoned = render(fleet(6, {"c": "NoSchedule"}), previous_files=first.files, status=room)
    assert placed(cordoned) == {"a": 2, "b": 2, "c": 2}       # nothing moves
    # a scale up gives the cordoned cluster nothing more; a scale down takes from it first
    up = render(fleet(10, {"c": "NoSchedule"}), previous_files=cordoned.files, status=room)
    assert placed(up) == {"a": 4, "b": 4, "c": 2}
    down = render(fleet(9, {"c": "NoSchedule"}), previous_files=up.files, status=room)
    assert placed(down) == {"a": 4, "b": 4, "c": 1}
    # a cluster that never held the unit is not newly bound while cordoned
    fresh = render(fleet(6, {"c": "NoSchedule"}), status=room)
    assert placed(fresh) == {"a": 3, "b": 3}
    # NoExecute evicts: the share moves to the others
    evicted = render(fleet(6, {"c": "NoExecute"}), previous_files=first.files, status=room)
    assert placed(evicted) == {"a": 3, "b": 3}


def test_steady_division_drains_cordoned_clusters_first() -> None:
    room = {"a": 10, "b": 10, "c": 10}
    held = {"a": 2, "b": 2, "c": 2}
    assert clusternet_steady(6, room=room, current=held, drain={"c"}) == held
    assert clusternet_steady(4, room=room, current=held, drain={"c"}) == {"a": 2, "b": 2, "c": 0}
    assert clusternet_steady(3, room=room, current=held, drain={"c"}) == {"a": 1, "b": 2, "c": 0}
    assert clusternet_steady(8, room=room, current=held, drain={"c"}) == {"a": 3, "b": 3, "c": 2}
