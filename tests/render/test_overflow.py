"""SEMANTICS "Propagation (Karmada)": `clusterAffinities[].overflowAffinities`, ordered overflow
tiers of one affinity term, and static weights (no spread constraints, weight 1 by default)."""

from __future__ import annotations

from typing import Any

from gitfleet.model.loader import Fleet
from gitfleet.render.core import RenderResult, render
from gitfleet.render.division import karmada_overflow
from tests.render.conftest import cluster, deployment, fleet_of, replicas
from tests.render.test_karmada import pp
from tests.render.test_steady_division import cpu_room

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
NAMES = ("a", "b", "c", "d")
ON_PREM = {"affinityName": "on-prem", "clusterNames": ["a"],
           "overflowAffinities": [{"affinityName": "cloud", "clusterNames": ["a", "b", "c"]},
                                  {"affinityName": "far", "clusterNames": ["d"]}]}


def fleet(total: int, *, affinity: dict[str, Any] = ON_PREM,
          rs: dict[str, Any] | None = None, **placement: Any) -> Fleet:
    rs = rs or {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    policy = pp("p", [DEPLOY], {"clusterAffinities": [affinity], "replicaScheduling": rs,
                                **placement})
    return fleet_of(*(cluster(n, {"env": "prod"}, region=f"r-{n}") for n in NAMES),
                    ("templates/d.yaml", deployment("web", replicas=total, cpu="1")),
                    ("policies/p.yaml", policy))


def placed(result: RenderResult) -> dict[str, int]:
    return {c: n for c in NAMES if (n := replicas(result, c, "web")) is not None}


def test_primary_tier_first_up_to_its_room_then_the_next_tiers() -> None:
    result = render(fleet(9), status=cpu_room(a=4, b=2, c=1, d=10))
    # a holds 4; the cloud tier (b, c: a belongs to the primary tier) holds 3; d the rest
    assert placed(result) == {"a": 4, "b": 2, "c": 1, "d": 2}
    assert not result.errors


def test_scale_up_fills_tiers_in_order_and_scale_down_empties_the_last_first() -> None:
    first = render(fleet(5), status=cpu_room(a=4, b=2, c=1, d=10))
    assert placed(first) == {"a": 4, "b": 1}
    up = render(fleet(12), previous_files=first.files, status=cpu_room(a=1, b=1, c=1, d=10))
    assert placed(up) == {"a": 5, "b": 2, "c": 1, "d": 4}
    down = render(fleet(6), previous_files=up.files, status=cpu_room(a=9, b=9, c=9, d=9))
    # 6 to remove: d's 4 first, then 2 from the cloud tier (b 2 : c 1, Webster over holdings)
    assert placed(down) == {"a": 5, "b": 1}


def test_unchanged_total_moves_nothing_even_when_the_primary_tier_gets_room() -> None:
    first = render(fleet(6), status=cpu_room(a=2, b=2, c=2, d=2))
    assert placed(first) == {"a": 2, "b": 2, "c": 2}
    later = render(fleet(6), previous_files=first.files, status=cpu_room(a=50, b=0, c=0, d=0))
    assert later.files == first.files


def test_tiers_that_cannot_hold_the_total_are_unschedulable() -> None:
    result = render(fleet(20), status=cpu_room(a=1, b=1, c=1, d=1))
    assert placed(result) == {}
    assert any("room for 4 of 20 replicas" in e.message for e in result.errors)


def test_overflow_with_static_weights_is_an_error_naming_the_field() -> None:
    result = render(fleet(6, rs={"replicaSchedulingType": "Divided"}),
                    status=cpu_room(a=1, b=1, c=1, d=1))
    [error] = result.errors
    assert "overflowAffinities" in error.message and "not supported" in error.message


def test_overflow_division_arithmetic() -> None:
    tiers = [["a"], ["b", "c"], ["d"]]
    room = {"a": 0, "b": 3, "c": 3, "d": 5}
    current = {"a": 4, "b": 1}
    got = karmada_overflow(9, tiers=tiers, room=room, current=current, tie_key="k",
                           aggregated=False)
    # 4 more: none fit a; the cloud tier's room 3:3 takes them (2 and 2); d is not needed
    assert got == {"a": 4, "b": 3, "c": 2, "d": 0}
    fresh = karmada_overflow(9, tiers=tiers, room=room, current=current, tie_key="k",
                             aggregated=False, fresh=True)
    # afresh: a holds 0 + 4, the cloud tier gets the other 5 by room plus own, 4:3
    assert fresh == {"a": 4, "b": 3, "c": 2, "d": 0}
    assert karmada_overflow(20, tiers=tiers, room=room, current=current, tie_key="k",
                            aggregated=False) is None


# -- static weights -------------------------------------------------------------------------

def test_static_weights_ignore_spread_constraints() -> None:
    rs = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
          "weightPreference": {"staticWeightList": [
              {"targetCluster": {"clusterNames": ["a"]}, "weight": 1},
              {"targetCluster": {"clusterNames": ["b"]}, "weight": 2}]}}
    affinity = {"affinityName": "all", "clusterNames": ["a", "b"]}
    result = render(fleet(6, affinity=affinity, rs=rs, spreadConstraints=[
        {"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]))
    assert placed(result) == {"a": 2, "b": 4}


def test_static_weights_all_zero_mean_weight_one_for_every_candidate() -> None:
    rs = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
          "weightPreference": {"staticWeightList": [
              {"targetCluster": {"clusterNames": ["a", "b"]}, "weight": 0}]}}
    affinity = {"affinityName": "all", "clusterNames": ["a", "b"]}
    assert placed(render(fleet(6, affinity=affinity, rs=rs))) == {"a": 3, "b": 3}
