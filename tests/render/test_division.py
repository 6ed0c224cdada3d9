"""Replica division: Clusternet static/dynamic and Karmada Webster/aggregated."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitfleet.render.division import (
    divide_aggregated,
    divide_dynamic,
    divide_static,
    divide_webster,
    fnv1a_32,
)

names = st.text(alphabet="abcdefghij-0123", min_size=1, max_size=6)
weight_maps = st.dictionaries(names, st.integers(min_value=0, max_value=50), max_size=12)
totals = st.integers(min_value=0, max_value=300)


def shuffled(mapping: dict[str, int], seed: int) -> dict[str, int]:
    items = list(mapping.items())
    random.Random(seed).shuffle(items)
    return dict(items)


def webster_one_by_one(total: int, weights: dict[str, int], tie_key: str,
                       start: dict[str, int] | None = None) -> dict[str, int]:
    """The rule as written, one replica at a time, with exact fractions: the test oracle."""
    result = {name: (start or {}).get(name, 0) for name in weights}
    descending = fnv1a_32(tie_key) % 2 == 1
    rank = {name: i for i, name in enumerate(sorted(weights, reverse=descending))}
    live = [n for n in weights if weights[n] > 0]
    for _ in range(total - sum(result.values())):
        if not live:
            break
        best = min(live, key=lambda n: (-Fraction(weights[n], 2 * result[n] + 1), result[n],
                                        rank[n]))
        result[best] += 1
    return result


# --- Clusternet Static -------------------------------------------------------------------

def test_static_clusternet_example_weights_1_and_2_of_6() -> None:
    assert divide_static(6, {"cluster-a": 1, "cluster-b": 2}) == {"cluster-a": 2, "cluster-b": 4}


def test_static_remainder_goes_by_descending_weight_then_name() -> None:
    # quotas 0.5, 0.5, 1 -> floors 0, 0, 1; the one left goes to the heaviest, not the largest
    # fraction (SEMANTICS: by descending weight)
    assert divide_static(2, {"a": 1, "b": 1, "c": 2}) == {"a": 0, "b": 0, "c": 2}
    # quotas 10*3/7=4.29, 10*2/7=2.86, 10*2/7=2.86 -> floors 4,2,2; 2 left: c (w3), then a (name)
    assert divide_static(10, {"b": 2, "a": 2, "c": 3}) == {"a": 3, "b": 2, "c": 5}
    # equal weights: the leftover replica goes to the first name
    assert divide_static(4, {"y": 1, "x": 1, "z": 1}) == {"x": 2, "y": 1, "z": 1}


def test_static_weight_zero_clusters_stay_with_zero() -> None:
    assert divide_static(5, {"a": 0, "b": 1}) == {"a": 0, "b": 5}
    assert divide_static(5, {"a": 0, "b": 0}) == {"a": 0, "b": 0}
    assert divide_static(5, {}) == {}
    assert divide_static(0, {"a": 3, "b": 1}) == {"a": 0, "b": 0}


def test_static_rejects_negative_input() -> None:
    with pytest.raises(ValueError, match="weight of cluster 'a'"):
        divide_static(3, {"a": -1})
    with pytest.raises(ValueError, match="total"):
        divide_static(-1, {"a": 1})


@given(totals, weight_maps, st.integers())
def test_static_properties(total: int, weights: dict[str, int], seed: int) -> None:
    result = divide_static(total, weights)
    assert result.keys() == weights.keys()
    weight_sum = sum(weights.values())
    if weight_sum == 0:
        assert set(result.values()) <= {0}
        return
    assert sum(result.values()) == total
    for name, weight in weights.items():
        # the remainder goes by weight, not by fraction: a cluster with a whole quota can
        # get one more, so the bound is inclusive
        quota = Fraction(weight * total, weight_sum)
        assert abs(result[name] - quota) <= 1
        assert result[name] >= weight * total // weight_sum
        if weight == 0:
            assert result[name] == 0
    assert divide_static(total, shuffled(weights, seed)) == result


# --- Clusternet Dynamic ------------------------------------------------------------------

def test_dynamic_proportional_with_largest_fractions() -> None:
    # quotas 5*3/10=1.5, 5*3/10=1.5, 5*4/10=2.0 -> floors 1,1,2; one left: a (.5, name first)
    assert divide_dynamic(5, {"b": 3, "a": 3, "c": 4}) == {"a": 2, "b": 1, "c": 2}
    # fractional parts decide, not room: quotas 7*5/9=3.89, 7*4/9=3.11 -> 4 and 3
    assert divide_dynamic(7, {"big": 5, "small": 4}) == {"big": 4, "small": 3}


def test_dynamic_fleet_short_of_room_gives_each_its_room() -> None:
    assert divide_dynamic(10, {"a": 3, "b": 4}) == {"a": 3, "b": 4}
    assert divide_dynamic(7, {"a": 3, "b": 4}) == {"a": 3, "b": 4}
    assert divide_dynamic(3, {"a": 0, "b": 0}) == {"a": 0, "b": 0}
    assert divide_dynamic(3, {}) == {}


@given(totals, weight_maps, st.integers())
def test_dynamic_properties(total: int, available: dict[str, int], seed: int) -> None:
    result = divide_dynamic(total, available)
    assert result.keys() == available.keys()
    assert sum(result.values()) == min(total, sum(available.values()))
    for name, room in available.items():
        assert 0 <= result[name] <= room
        if sum(available.values()) > total:
            assert abs(result[name] - Fraction(room * total, sum(available.values()))) < 1
    assert divide_dynamic(total, shuffled(available, seed)) == result


# --- Karmada Webster ---------------------------------------------------------------------

def test_fnv1a_32_known_vectors() -> None:
    assert fnv1a_32("") == 0x811C9DC5
    assert fnv1a_32("a") == 0xE40C292C
    assert fnv1a_32("foobar") == 0xBF9CF968


def test_webster_textbook_example_differs_from_dhondt() -> None:
    # Sainte-Laguë's classic: 100k/80k/30k/20k votes, 8 seats -> 3/3/1/1 (D'Hondt: 4/3/1/0)
    weights = {"a": 100_000, "b": 80_000, "c": 30_000, "d": 20_000}
    assert divide_webster(8, weights, tie_key="apps/Deployment/default/web") == {
        "a": 3, "b": 3, "c": 1, "d": 1}
    # 53/24/23 of 7 -> 3/2/2 (D'Hondt would give 4/2/1)
    assert divide_webster(7, {"x": 53, "y": 24, "z": 23}, tie_key="k") == {
        "x": 3, "y": 2, "z": 2}


def tie_keys(parity: int) -> str:
    return next(k for k in (f"apps/Deployment/default/app-{i}" for i in range(100))
                if fnv1a_32(k) % 2 == parity)


def test_webster_ties_follow_the_hash_parity_of_the_template() -> None:
    even, odd = tie_keys(0), tie_keys(1)
    assert divide_webster(3, {"member1": 1, "member2": 1}, tie_key=even) == {
        "member1": 2, "member2": 1}
    assert divide_webster(3, {"member1": 1, "member2": 1}, tie_key=odd) == {
        "member1": 1, "member2": 2}


def test_webster_tie_goes_to_fewer_assigned_before_name() -> None:
    # after a:1 the priorities are a 3/3=1 and b 1/1=1: a tie; b has fewer, so b wins in
    # either name order
    for parity in (0, 1):
        assert divide_webster(2, {"a": 3, "b": 1}, tie_key=tie_keys(parity)) == {"a": 1, "b": 1}


def test_webster_edge_cases() -> None:
    assert divide_webster(4, {"a": 0, "b": 2}, tie_key="k") == {"a": 0, "b": 4}
    assert divide_webster(4, {"a": 0, "b": 0}, tie_key="k") == {"a": 0, "b": 0}
    assert divide_webster(4, {}, tie_key="k") == {}
    assert divide_webster(0, {"a": 1}, tie_key="k") == {"a": 0}


def test_webster_tells_apart_priorities_a_float_cannot() -> None:
    # 2**60 + 1 and 2**60 are the same float: the exact priority gives the seat to the
    # heavier whatever the name order; below 2**25 floats alone decide, and agree with the rule
    for parity in (0, 1):
        assert divide_webster(1, {"a": 2**60 + 1, "b": 2**60}, tie_key=tie_keys(parity)) == {
            "a": 1, "b": 0}
        assert divide_webster(1, {"b": 2**60 + 1, "a": 2**60}, tie_key=tie_keys(parity)) == {
            "a": 0, "b": 1}
    rng = random.Random(11)
    for _ in range(200):
        weights = {f"c{i}": rng.choice([1, 2, 3, 2**24 - 1, 2**24 - 3, 2**25 - 1])
                   for i in range(rng.randint(1, 6))}
        total = rng.randint(0, 40)
        assert divide_webster(total, weights, tie_key="k") == \
            webster_one_by_one(total, weights, "k")


def test_webster_continues_from_an_initial_assignment() -> None:
    # b already holds 3: the 2 new replicas both go to a (1/1, then 1/3 vs b's 1/7)
    assert divide_webster(5, {"a": 1, "b": 1}, tie_key="k", initial={"b": 3}) == {
        "a": 2, "b": 3}
    with pytest.raises(ValueError, match="exceed"):
        divide_webster(2, {"a": 1}, tie_key="k", initial={"a": 3})
    with pytest.raises(ValueError, match="unknown cluster"):
        divide_webster(2, {"a": 1}, tie_key="k", initial={"zz": 1})


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=400), weight_maps, st.text(max_size=8), st.integers())
def test_webster_matches_the_one_at_a_time_rule(total: int, weights: dict[str, int],
                                                tie_key: str, seed: int) -> None:
    result = divide_webster(total, weights, tie_key=tie_key)
    assert result == webster_one_by_one(total, weights, tie_key)
    assert result.keys() == weights.keys()
    if any(weights.values()):
        assert sum(result.values()) == total
    assert all(result[n] == 0 for n, w in weights.items() if w == 0)
    assert divide_webster(total, shuffled(weights, seed), tie_key=tie_key) == result


@settings(deadline=None)
@given(st.integers(min_value=0, max_value=200), weight_maps, st.text(max_size=4), st.data())
def test_webster_with_initial_matches_the_one_at_a_time_rule(
        total: int, weights: dict[str, int], tie_key: str, data: st.DataObject) -> None:
    start: dict[str, int] = {}
    budget = total
    for name in weights:
        count = data.draw(st.integers(min_value=0, max_value=budget))
        start[name] = count
        budget -= count
    result = divide_webster(total, weights, tie_key=tie_key, initial=start)
    assert result == webster_one_by_one(total, weights, tie_key, start)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1000, max_value=10**6),
       st.dictionaries(names, st.integers(min_value=1, max_value=10**6), min_size=1,
                       max_size=8))
def test_webster_large_totals_stay_within_quota_bounds(total: int,
                                                       weights: dict[str, int]) -> None:
    result = divide_webster(total, weights, tie_key="k")
    assert sum(result.values()) == total
    # Webster with few clusters stays close to the exact quota
    weight_sum = sum(weights.values())
    for name, weight in weights.items():
        assert abs(result[name] - Fraction(weight * total, weight_sum)) < len(weights)


def test_webster_many_clusters_agrees_with_the_rule() -> None:
    rng = random.Random(7)
    weights = {f"cluster-{i:05d}": rng.randint(0, 20) for i in range(200)}
    tie_key = "apps/Deployment/default/web"
    assert divide_webster(1_500, weights, tie_key=tie_key) == webster_one_by_one(
        1_500, weights, tie_key)


# --- Karmada Aggregated ------------------------------------------------------------------

def test_aggregated_uses_fewest_clusters_with_most_room() -> None:
    available = {"a": 4, "b": 10, "c": 6}
    assert divide_aggregated(8, available, current={}, tie_key="k") == {"a": 0, "b": 8, "c": 0}
    # 12 needs two clusters: b (10) then c (6); divided by Webster 10:6
    result = divide_aggregated(12, available, current={}, tie_key="k")
    assert result["a"] == 0
    assert result == {"a": 0, **divide_webster(12, {"b": 10, "c": 6}, tie_key="k")}


def test_aggregated_prefers_clusters_already_holding_replicas() -> None:
    available = {"a": 4, "b": 10, "c": 6}
    assert divide_aggregated(4, available, current={"a": 2}, tie_key="k") == {
        "a": 4, "b": 0, "c": 0}
    # ties in room go by name
    assert divide_aggregated(3, {"y": 5, "x": 5}, current={}, tie_key="k") == {"x": 3, "y": 0}


def test_aggregated_short_fleet_uses_every_cluster_with_room() -> None:
    result = divide_aggregated(20, {"a": 4, "b": 6, "z": 0}, current={"z": 3}, tie_key="k")
    assert result["z"] == 0
    assert sum(result.values()) == 20
    assert result == {"z": 0, **divide_webster(20, {"a": 4, "b": 6}, tie_key="k")}
    assert divide_aggregated(0, {"a": 4}, current={}, tie_key="k") == {"a": 0}
    assert divide_aggregated(3, {}, current={}, tie_key="k") == {}


@given(totals, weight_maps, st.integers())
def test_aggregated_properties(total: int, available: dict[str, int], seed: int) -> None:
    result = divide_aggregated(total, available, current={}, tie_key="k")
    assert result.keys() == available.keys()
    room = sum(available.values())
    assert sum(result.values()) == (total if room > 0 else 0)
    by_room = sorted((n for n in available if available[n] > 0),
                     key=lambda n: (-available[n], n))
    fewest = next((k for k in range(len(by_room) + 1)
                   if sum(available[n] for n in by_room[:k]) >= total), len(by_room))
    used = {n for n, count in result.items() if count > 0}
    assert used <= set(by_room[:fewest])
    assert divide_aggregated(total, shuffled(available, seed), current={},
                             tie_key="k") == result


@given(totals, weight_maps, st.sets(names, max_size=4))
def test_aggregated_holders_come_first(total: int, available: dict[str, int],
                                       holding: set[str]) -> None:
    current = {name: 2 for name in holding}
    result = divide_aggregated(total, available, current=current, tie_key="k")
    used = {n for n, count in result.items() if count > 0}
    holders_room = sum(available.get(n, 0) for n in holding)
    if used - holding:
        # a cluster holding nothing is only brought in when the holders cannot cover it all
        assert holders_room < total
