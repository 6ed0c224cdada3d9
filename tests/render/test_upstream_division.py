"""gitfleet's division against the upstream schedulers' own unit-test tables.

The cases are those of Karmada's scheduler (pkg/scheduler/core: the division algorithm, its
dynamic scale up / scale down / aggregated assignment and static weight tests) and of
Clusternet's dynamic assigner (pkg/scheduler/framework/plugins/defaultassigner), restated here
as data: cluster room, previous placement, new total, and the result upstream expects. Where
gitfleet deliberately gives another result the case says so and why (SEMANTICS "differs from
upstream"); the test then checks both that gitfleet gives its own answer and that the answer
really differs, so the note cannot go stale.

Karmada names its clusters member1..member4, Clusternet c1..c4; the names are kept, because
ties between equal shares are settled by name in gitfleet (upstream: slice order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gitfleet.render.division import (
    clusternet_steady,
    divide_dynamic,
    divide_webster,
    karmada_overflow,
    karmada_steady,
)

TIE_KEY = "apps/Deployment/default/nginx"


@dataclass(frozen=True)
class Case:
    total: int
    room: dict[str, int]
    current: dict[str, int] = field(default_factory=dict)
    want: dict[str, int] | None = None  # None: upstream reports it unschedulable
    aggregated: bool = False
    fresh: bool = False


def nonzero(result: dict[str, int] | None) -> dict[str, int] | None:
    return None if result is None else {c: n for c, n in result.items() if n}


# -- Karmada: the division algorithm (first placement over available replicas) --------------

KARMADA_DIVIDE = {
    "12 over dynamic weight 18:12:6": Case(12, {"member1": 18, "member2": 12, "member3": 6},
                                           want={"member1": 6, "member2": 4, "member3": 2}),
    "12 over dynamic weight 20:12:6": Case(12, {"member1": 20, "member2": 12, "member3": 6},
                                           want={"member1": 6, "member2": 4, "member3": 2}),
    "12 over dynamic weight 6:12:6": Case(12, {"member1": 6, "member2": 12, "member3": 6},
                                          want={"member1": 3, "member2": 6, "member3": 3}),
    "12 aggregated over 12:6:6": Case(12, {"member2": 12, "member1": 6, "member3": 6},
                                      aggregated=True, want={"member2": 12}),
    "12 aggregated over 6:6:6": Case(12, {"member1": 6, "member2": 6, "member3": 6},
                                     aggregated=True, want={"member1": 6, "member2": 6}),
}

# -- Karmada: steady assignment (scale down, scale up, clusters coming and going) -----------

KARMADA_SCALE = {
    "12 -> 6, dynamic, room 1:1:1": Case(
        6, {"member1": 1, "member2": 1, "member3": 1},
        {"member1": 2, "member2": 4, "member3": 6},
        want={"member1": 1, "member2": 2, "member3": 3}),
    "12 -> 24, dynamic, room 10:10:10": Case(
        24, {"member1": 10, "member2": 10, "member3": 10},
        {"member1": 2, "member2": 4, "member3": 6},
        want={"member1": 6, "member2": 8, "member3": 10}),
    "12 -> 24, dynamic, room 1:1:1 is unschedulable": Case(
        24, {"member1": 1, "member2": 1, "member3": 1},
        {"member1": 2, "member2": 4, "member3": 6}, want=None),
    "12 -> 6, aggregated, room 1:1:1": Case(
        6, {"member1": 1, "member2": 1, "member3": 1}, {"member1": 4, "member2": 8},
        aggregated=True, want={"member2": 6}),
    "12 -> 8, aggregated, room 100:100": Case(
        8, {"member1": 100, "member2": 100}, {"member1": 4, "member2": 8},
        aggregated=True, want={"member2": 8}),
    "12 -> 24, aggregated, room 4:6:8": Case(
        24, {"member1": 4, "member2": 6, "member3": 8}, {"member1": 4, "member2": 8},
        aggregated=True, want={"member1": 7, "member2": 12, "member3": 5}),
    "12 -> 24, aggregated, room 6:6:20": Case(
        24, {"member1": 6, "member2": 6, "member3": 20}, {"member1": 4, "member2": 8},
        aggregated=True, want={"member1": 10, "member2": 14}),
    "12 -> 24, aggregated, room 1:1:1 is unschedulable": Case(
        24, {"member1": 1, "member2": 1, "member3": 1}, {"member1": 4, "member2": 8},
        aggregated=True, want=None),
    "12 -> 24, aggregated, member2 gone and member4 new": Case(
        24, {"member1": 4, "member3": 8, "member4": 12}, {"member1": 4},
        aggregated=True, want={"member1": 7, "member3": 7, "member4": 10}),
    # scale up from nothing
    "0 -> 12, dynamic, room 6:8:10": Case(
        12, {"member1": 6, "member2": 8, "member3": 10},
        want={"member1": 3, "member2": 4, "member3": 5}),
    "0 -> 12, dynamic, room 8:8:10": Case(
        12, {"member1": 8, "member2": 8, "member3": 10},
        want={"member1": 4, "member2": 4, "member3": 4}),
    "0 -> 12, dynamic, room 3:3:3 is unschedulable": Case(
        12, {"member1": 3, "member2": 3, "member3": 3}, want=None),
    "0 -> 12, aggregated, room 6:8:10": Case(
        12, {"member1": 6, "member2": 8, "member3": 10}, aggregated=True,
        want={"member2": 5, "member3": 7}),
    "0 -> 12, aggregated, room 12:8:10": Case(
        12, {"member1": 12, "member2": 8, "member3": 10}, aggregated=True,
        want={"member1": 12}),
    "0 -> 12, aggregated, room 3:3:3 is unschedulable": Case(
        12, {"member1": 3, "member2": 3, "member3": 3}, aggregated=True, want=None),
    "12 -> 12, dynamic, member3 gone and member2 new": Case(
        12, {"member1": 3, "member2": 3}, {"member1": 6},
        want={"member1": 9, "member2": 3}),
    "unschedulable: room 3 for 10": Case(10, {"member1": 3}, want=None),
}

# -- Karmada: static weights (Webster) ------------------------------------------------------

KARMADA_STATIC = {
    "12 over weights 3:2:1": (12, {"member1": 3, "member2": 2, "member3": 1},
                              {"member1": 6, "member2": 4, "member3": 2}),
    "12 over default weights": (12, {"member1": 1, "member2": 1, "member3": 1},
                                {"member1": 4, "member2": 4, "member3": 4}),
    "13 over weights 3:2:1": (13, {"member1": 3, "member2": 2, "member3": 1},
                              {"member1": 7, "member2": 4, "member3": 2}),
    "14 over weights 3:2:1": (14, {"member1": 3, "member2": 2, "member3": 1},
                              {"member1": 7, "member2": 5, "member3": 2}),
    "0 replicas give every cluster 0": (0, {"member1": 1, "member2": 1},
                                        {"member1": 0, "member2": 0}),
    # Too few replicas for the targets: every target is listed, with 0 where none fell
    # (karmada-io/karmada pkg/scheduler/core/assignment_test.go "insufficient replica
    # assignment should get 0 replica", pkg/util/helper/webstermethod_test.go "newSeats is 0",
    # commit f8fdd02df376). Ties go by name, ascending for this template (even FNV-1a hash).
    "1 over equal weights lists every target": (1, {"member1": 1, "member2": 1, "member3": 1},
                                                {"member1": 1, "member2": 0, "member3": 0}),
    "2 over equal weights lists every target": (2, {"member1": 1, "member2": 1, "member3": 1},
                                                {"member1": 1, "member2": 1, "member3": 0}),
}
# In a render, a cluster left with 0 replicas gets no Description (SEMANTICS "Clusters left with
# 0 replicas are dropped"): Karmada's scheduler drops them too after the assignment
# (removeZeroReplicasCluster, pkg/scheduler/core/common.go) unless it runs with
# --enable-empty-workload-propagation; tests/render/test_karmada.py holds that row.


@pytest.mark.parametrize("case", KARMADA_DIVIDE.values(), ids=KARMADA_DIVIDE.keys())
def test_karmada_division_algorithm(case: Case) -> None:
    got = karmada_steady(case.total, room=case.room, current=case.current, tie_key=TIE_KEY,
                         aggregated=case.aggregated)
    assert nonzero(got) == case.want


@pytest.mark.parametrize("case", KARMADA_SCALE.values(), ids=KARMADA_SCALE.keys())
def test_karmada_steady_assignment(case: Case) -> None:
    got = karmada_steady(case.total, room=case.room, current=case.current, tie_key=TIE_KEY,
                         aggregated=case.aggregated)
    assert nonzero(got) == case.want


@pytest.mark.parametrize(("total", "weights", "want"), KARMADA_STATIC.values(),
                         ids=KARMADA_STATIC.keys())
def test_karmada_static_weights(total: int, weights: dict[str, int],
                                want: dict[str, int]) -> None:
    assert divide_webster(total, weights, tie_key=TIE_KEY) == want


def test_karmada_fresh_division_counts_own_replicas_as_room() -> None:
    # Karmada's fresh scale (rescheduleTriggeredAt): room 2:2:2 free plus 4:4:4 running
    got = karmada_steady(12, room={"member1": 2, "member2": 2, "member3": 2},
                         current={"member1": 8, "member2": 2, "member3": 2},
                         tie_key=TIE_KEY, aggregated=False, fresh=True)
    assert got == {"member1": 6, "member2": 3, "member3": 3}


# -- Clusternet: the dynamic assigner (Spread) ----------------------------------------------
# One Subscription feeding two Deployments, f1 placed 1/3/0 and f3 placed 1/1/1 on c1..c3.

CLUSTERNET = {
    "f1 4 -> 8 over room 10:10:10": Case(
        8, {"c1": 10, "c2": 10, "c3": 10}, {"c1": 1, "c2": 3, "c3": 0},
        want={"c1": 3, "c2": 4, "c3": 1}),
    "f3 3 -> 9 over room 10:20:30": Case(
        9, {"c1": 10, "c2": 20, "c3": 30}, {"c1": 1, "c2": 1, "c3": 1},
        want={"c1": 2, "c2": 3, "c3": 4}),
    "f1 4 -> 2": Case(2, {"c1": 10, "c2": 10, "c3": 10}, {"c1": 1, "c2": 3, "c3": 0},
                      want={"c2": 2}),
    "f3 3 -> 1": Case(1, {"c1": 10, "c2": 10, "c3": 10}, {"c1": 1, "c2": 1, "c3": 1},
                      want={"c3": 1}),
    "f1 4 -> 8, bound c1 c2 c4 (c3 held 0)": Case(
        8, {"c1": 10, "c2": 10, "c4": 10}, {"c1": 1, "c2": 3},
        want={"c1": 3, "c2": 4, "c4": 1}),
    "f1 unchanged at 4": Case(4, {"c1": 10, "c2": 10, "c4": 10}, {"c1": 1, "c2": 3},
                              want={"c1": 1, "c2": 3}),
}

CLUSTERNET_SPLIT = {  # the assigner's arithmetic: desired over maximum available replicas
    "6 over 3:6:9": (6, {"c1": 3, "c2": 6, "c3": 9}, {"c1": 1, "c2": 2, "c3": 3}),
    "2 over 3:6:9": (2, {"c1": 3, "c2": 6, "c3": 9}, {"c1": 0, "c2": 1, "c3": 1}),
    "3 over 3:6:9": (3, {"c1": 3, "c2": 6, "c3": 9}, {"c1": 1, "c2": 1, "c3": 1}),
    "3 over no room": (3, {"c1": 0, "c2": 0, "c3": 0}, {"c1": 0, "c2": 0, "c3": 0}),
    "6 over 1:2:2 (more than the room)": (6, {"c1": 1, "c2": 2, "c3": 2},
                                         {"c1": 1, "c2": 2, "c3": 2}),
}


@dataclass(frozen=True)
class Differs:
    case: Case
    upstream: dict[str, int]
    why: str


# A cluster that stops being bound keeps its replicas upstream (the Subscription's status still
# lists it); gitfleet unbinds it (its Description is removed, its agent prunes) and places those
# replicas on the clusters still bound (SEMANTICS: "Replicas of a cluster that stopped being
# bound count as extra to place").
UNBOUND = "replicas of a cluster no longer bound are placed again, not left behind"
CLUSTERNET_DIFFERS = {
    "f3 3 -> 9, bound c1 c2 c4 (c3 held 1)": Differs(
        Case(9, {"c1": 10, "c2": 20, "c4": 30}, {"c1": 1, "c2": 1},
             want={"c1": 2, "c2": 3, "c4": 4}),
        upstream={"c1": 2, "c2": 3, "c3": 1, "c4": 3}, why=UNBOUND),
    "f3 3 -> 1, bound c1 c2 c4 (c3 held 1)": Differs(
        Case(1, {"c1": 10, "c2": 20, "c4": 30}, {"c1": 1, "c2": 1}, want={"c2": 1}),
        upstream={"c3": 1}, why=UNBOUND),
    "f3 unchanged at 3, bound c1 c2 c4 (c3 held 1)": Differs(
        Case(3, {"c1": 10, "c2": 20, "c4": 30}, {"c1": 1, "c2": 1},
             want={"c1": 1, "c2": 1, "c4": 1}),
        upstream={"c1": 1, "c2": 1, "c3": 1}, why=UNBOUND),
}


@pytest.mark.parametrize("case", CLUSTERNET.values(), ids=CLUSTERNET.keys())
def test_clusternet_dynamic_assigner(case: Case) -> None:
    assert nonzero(clusternet_steady(case.total, room=case.room, current=case.current)) == \
        case.want


@pytest.mark.parametrize(("total", "room", "want"), CLUSTERNET_SPLIT.values(),
                         ids=CLUSTERNET_SPLIT.keys())
def test_clusternet_dynamic_split(total: int, room: dict[str, int],
                                  want: dict[str, int]) -> None:
    assert divide_dynamic(total, room) == want


@pytest.mark.parametrize("differs", CLUSTERNET_DIFFERS.values(), ids=CLUSTERNET_DIFFERS.keys())
def test_clusternet_where_gitfleet_differs(differs: Differs) -> None:
    case = differs.case
    got = nonzero(clusternet_steady(case.total, room=case.room, current=case.current))
    assert got == case.want, differs.why
    assert got != differs.upstream


# -- properties -----------------------------------------------------------------------------

names = st.sampled_from(["a", "b", "c", "d", "e", "f"])
rooms = st.dictionaries(names, st.integers(min_value=0, max_value=40), min_size=1, max_size=6)


@st.composite
def placements(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, int]]:
    room = draw(rooms)
    current = {c: draw(st.integers(min_value=0, max_value=30)) for c in room
               if draw(st.booleans())}
    return room, current


@settings(max_examples=300, deadline=None)
@given(placements(), rooms, st.booleans())
def test_unchanged_total_and_bindings_move_nothing(placement: tuple[dict[str, int],
                                                                    dict[str, int]],
                                                   new_room: dict[str, int],
                                                   aggregated: bool) -> None:
    room, current = placement
    total = sum(current.values())
    later_room = {c: new_room.get(c, 0) for c in room}  # same bindings, any room
    expected = {c: current.get(c, 0) for c in room}
    assert clusternet_steady(total, room=later_room, current=current) == expected
    assert karmada_steady(total, room=later_room, current=current, tie_key=TIE_KEY,
                          aggregated=aggregated) == expected


@settings(max_examples=400, deadline=None)
@given(placements(), st.integers(min_value=0, max_value=200))
def test_clusternet_sums_and_room(placement: tuple[dict[str, int], dict[str, int]],
                                  total: int) -> None:
    room, current = placement
    held = {c: current.get(c, 0) for c in room}
    got = clusternet_steady(total, room=room, current=current)
    kept = sum(held.values())
    if total >= kept:
        assert sum(got.values()) == min(total, kept + sum(room.values()))
        assert all(held[c] <= got[c] <= held[c] + room[c] for c in room)
    else:
        assert sum(got.values()) == total
        assert all(0 <= got[c] <= held[c] for c in room)


@settings(max_examples=400, deadline=None)
@given(placements(), st.integers(min_value=0, max_value=200), st.booleans(), st.booleans())
def test_karmada_sums_and_room(placement: tuple[dict[str, int], dict[str, int]], total: int,
                               aggregated: bool, fresh: bool) -> None:
    room, current = placement
    held = {c: current.get(c, 0) for c in room}
    assume(total > 0)
    got = karmada_steady(total, room=room, current=current, tie_key=TIE_KEY,
                         aggregated=aggregated, fresh=fresh)
    kept = sum(held.values())
    capacity = sum(room.values()) + kept
    if capacity < total or (not fresh and total > kept and sum(room.values()) < total - kept):
        assert got is None
        return
    assert got is not None
    assert sum(got.values()) == total
    if fresh:
        assert all(got[c] <= room[c] + held[c] for c in room)
    elif total > kept:
        assert all(held[c] <= got[c] <= held[c] + room[c] for c in room)
    else:
        assert all(got[c] <= held[c] for c in room)


@settings(max_examples=300, deadline=None)
@given(placements(), st.integers(min_value=0, max_value=150), st.booleans(), st.booleans(),
       st.integers(min_value=1, max_value=3), st.randoms(use_true_random=False))
def test_overflow_tiers_sums_room_and_order(placement: tuple[dict[str, int], dict[str, int]],
                                            total: int, aggregated: bool, fresh: bool,
                                            n_tiers: int, rnd: Any) -> None:
    room, current = placement
    names = sorted(room)
    rnd.shuffle(names)
    tiers: list[list[str]] = [[] for _ in range(n_tiers)]
    for i, name in enumerate(names):
        tiers[i % n_tiers].append(name)
    held = {c: current.get(c, 0) for c in room}
    kept = sum(held.values())
    got = karmada_overflow(total, tiers=tiers, room=room, current=current, tie_key=TIE_KEY,
                           aggregated=aggregated, fresh=fresh)
    fits = sum(room.values()) + kept >= total if fresh else total - kept <= sum(room.values())
    if not fits:
        assert got is None
        return
    assert got is not None and sum(got.values()) == total
    if fresh:
        assert all(got[c] <= room[c] + held[c] for c in room)
        return
    if total == kept:
        assert got == held
    elif total > kept:
        assert all(held[c] <= got[c] <= held[c] + room[c] for c in room)
        # a later tier gains only when every earlier tier's room is used up
        for i, tier in enumerate(tiers):
            if any(got[c] > held[c] for c in tier):
                assert all(got[c] == held[c] + room[c] for t in tiers[:i] for c in t)
    else:
        assert all(got[c] <= held[c] for c in room)
        # an earlier tier loses only when every later tier is empty
        for i, tier in enumerate(tiers):
            if any(got[c] < held[c] for c in tier):
                assert all(got[c] == 0 for t in tiers[i + 1:] for c in t)
