"""Replica division: how N replicas of one template are split over bound clusters.

Both dialects are here because they differ in the details that users notice (which cluster
gets the odd replica). Every function is deterministic: the result depends only on the
values given, never on the order of the input mapping, and ties are broken by cluster name
(Clusternet, where upstream is random) or by a hash-chosen name order (Karmada, as upstream).
All results map every input cluster to a count (0 included); callers drop the zeros they
do not want. Negative totals, weights or room are programming errors: ``ValueError``.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Mapping
from fractions import Fraction

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def _check(total: int, values: Mapping[str, int], what: str) -> None:
    if total < 0:
        raise ValueError(f"replica total must be >= 0, got {total}")
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{what} of cluster {name!r} must be >= 0, got {value}")


def divide_static(total: int, weights: Mapping[str, int]) -> dict[str, int]:
    """Clusternet ``Static`` dividing: split ``total`` in proportion to static weights.

    Each cluster first gets ``floor(w * total / sum(w))``; the replicas left over go one at a
    time to the clusters by descending weight, ties by cluster name ascending (upstream's
    order here is unspecified; ours is stable across renders). The leftovers follow weight,
    not fractional part, so a cluster whose quota is whole can still get one more; no
    cluster ends up more than one replica from its exact quota. Weight-0 clusters are present
    with 0. If every weight is 0 (or there are no clusters) nobody gets anything and the result sums
    to 0 rather than ``total``.
    """
    return _floor_then_remainder(total, weights, by_fraction=False)


def _floor_then_remainder(total: int, weights: Mapping[str, int], *,
                          by_fraction: bool) -> dict[str, int]:
    """Floors of the exact quotas, then the leftover replicas one each to the clusters with a
    positive weight, ordered by weight or by fractional part (descending), ties by name."""
    _check(total, weights, "weight")
    result = dict.fromkeys(weights, 0)
    weight_sum = sum(weights.values())
    if weight_sum == 0:
        return result
    for name, weight in weights.items():
        result[name] = weight * total // weight_sum
    remainder = total - sum(result.values())

    def rank(name: str) -> int:
        return weights[name] * total % weight_sum if by_fraction else weights[name]

    # remainder < number of clusters with a fractional quota, all of them weight > 0
    order = sorted((n for n, w in weights.items() if w > 0), key=lambda n: (-rank(n), n))
    for name in order[:remainder]:
        result[name] += 1
    return result


def divide_dynamic(total: int, available: Mapping[str, int]) -> dict[str, int]:
    """Clusternet ``Dynamic`` dividing (``Spread``): split in proportion to available room.

    When the fleet can hold ``total``, each cluster gets ``floor(a * total / sum(a))`` and
    the rest go to the largest fractional parts, ties by cluster name ascending; no cluster
    is given more than its room. When ``sum(a) < total``, each cluster gets exactly its room
    and the result sums to less than ``total`` (the shortfall is the caller's to report).
    Clusters with no room get 0; a fleet with no room at all gets all zeros.
    """
    _check(total, available, "available replicas")
    room = sum(available.values())
    if room <= total:
        return dict(available)
    result = {name: a * total // room for name, a in available.items()}
    remainder = total - sum(result.values())
    order = sorted(available, key=lambda name: (-(available[name] * total % room), name))
    for name in order[:remainder]:
        result[name] += 1
    return result


def fnv1a_32(text: str) -> int:
    """The 32-bit FNV-1a hash of ``text`` (UTF-8), as Karmada uses to pick a tie order."""
    value = _FNV_OFFSET
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def _name_ranks(names: Iterable[str], tie_key: str) -> dict[str, int]:
    ordered = sorted(names, reverse=fnv1a_32(tie_key) % 2 == 1)
    return {name: rank for rank, name in enumerate(ordered)}


def _seats_above(weight: int, weight_sum: int, scale: int) -> int:
    """How many of a cluster's seats have priority ``w/(2k+1)`` above ``W/(2*scale)``."""
    # w/(2k+1) > W/(2M)  <=>  2k+1 < 2Mw/W; the odd numbers below ceil(2Mw/W) number c//2.
    return (-(-2 * scale * weight // weight_sum)) // 2


def divide_webster(total: int, weights: Mapping[str, int], *, tie_key: str,
                   initial: Mapping[str, int] | None = None) -> dict[str, int]:
    """Karmada ``Divided``/``Weighted`` division by Webster's (Sainte-Laguë) method.

    Replicas are handed out one at a time, each to the cluster with the highest
    ``weight / (2 * assigned + 1)``; ties go to the cluster with fewer assigned, then by
    cluster name, ascending when ``fnv1a_32(tie_key)`` is even and descending when odd, so
    that ties do not always favour the same cluster across templates. ``tie_key`` is the
    template's ``group/kind/namespace/name``.

    ``initial`` is a starting assignment (e.g. replicas kept on scale-up): the result is
    ``initial`` plus ``total - sum(initial)`` replicas handed out as above, continuing from
    it. ``sum(initial) > total`` or a cluster in ``initial`` but not in ``weights`` is a
    ``ValueError``. Weight-0 clusters get nothing (beyond ``initial``); when all weights are
    0 the result is ``initial`` (or all zeros) and may sum to less than ``total``.

    The one-at-a-time order is the merge of every cluster's descending seat priorities, so
    the result is computed by jumping to a priority threshold and handing out only the last
    few replicas through a heap: O(C log N) for C clusters, independent of N's size.
    """
    _check(total, weights, "weight")
    start = dict.fromkeys(weights, 0)
    if initial:
        for name, count in initial.items():
            if name not in weights:
                raise ValueError(f"initial replicas for unknown cluster {name!r}")
            if count < 0:
                raise ValueError(f"initial replicas of cluster {name!r} must be >= 0")
            start[name] = count
    remaining = total - sum(start.values())
    if remaining < 0:
        raise ValueError(f"initial replicas exceed the total {total}")
    live = {name: w for name, w in weights.items() if w > 0}
    if not live or remaining == 0:
        return start
    weight_sum = sum(live.values())

    def handed_out(scale: int) -> dict[str, int]:
        return {name: max(0, _seats_above(w, weight_sum, scale) - start[name])
                for name, w in live.items()}

    # Seats above any threshold come before every seat at or below it in the hand-out
    # order, so taking them all at once is exact. Find the largest threshold scale whose
    # seats fit in `remaining`; at most ~C seats are then left for the heap.
    low = max(0, remaining - (len(live) + 1) // 2)
    if any(start[name] for name in live):
        high = remaining + sum(start[name] for name in live) + len(live) + 1
        while low < high:
            mid = (low + high + 1) // 2
            if sum(handed_out(mid).values()) <= remaining:
                low = mid
            else:
                high = mid - 1
    result = start
    for name, extra in handed_out(low).items():
        result[name] += extra
        remaining -= extra

    ranks = _name_ranks(live, tie_key)
    # Priorities are compared as floats; the exact fraction settles those a float cannot tell
    # apart. With every weight and divisor below 2**25, two distinct priorities w/d differ by
    # more than a float's rounding (their cross products stay below 2**50), so equal floats
    # are equal fractions and the fraction (slow to build and compare) is left out.
    seat = _seat if max(live.values()) < _EXACT and 2 * total + 1 < _EXACT else _exact_seat
    heap = [seat(name, w, result[name], ranks[name]) for name, w in live.items()]
    heapq.heapify(heap)
    for _ in range(remaining):
        _, _, assigned, rank, name = heap[0]
        result[name] = assigned + 1
        heapq.heapreplace(heap, seat(name, live[name], assigned + 1, rank))
    return result


_EXACT = 1 << 25


def _seat(name: str, weight: int, assigned: int, rank: int) -> tuple[float, int, int, int, str]:
    return (-weight / (2 * assigned + 1), 0, assigned, rank, name)


def _exact_seat(name: str, weight: int, assigned: int,
                rank: int) -> tuple[float, Fraction, int, int, str]:
    return (-weight / (2 * assigned + 1), Fraction(-weight, 2 * assigned + 1), assigned,
            rank, name)


def divide_aggregated(total: int, available: Mapping[str, int], *, current: Mapping[str, int],
                      tie_key: str) -> dict[str, int]:
    """Karmada ``Aggregated`` division: as few clusters as can hold ``total``.

    Clusters are taken in order — those already holding replicas (``current > 0``) first,
    then by most available room, ties by name ascending — until their room covers
    ``total``; the chosen clusters then share ``total`` by Webster's method weighted by
    their room. ``available`` is each cluster's room for this template including what it
    already runs. If the whole fleet cannot hold ``total``, every cluster with room is used
    (and some get more than their room; the caller reports the shortfall). Clusters with no
    room are never chosen. The result has every key of ``available``; clusters not chosen
    map to 0.
    """
    _check(total, available, "available replicas")
    result = dict.fromkeys(available, 0)
    chosen = fewest_covering(total, {n: a for n, a in available.items() if a > 0},
                             holding=current)
    result.update(divide_webster(total, chosen, tie_key=tie_key))
    return result


def fewest_covering(target: int, room: Mapping[str, int], *,
                    holding: Mapping[str, int]) -> dict[str, int]:
    """Karmada ``Aggregated``'s choice of clusters: taken in order — those ``holding`` replicas
    first, then most room, ties by name ascending — until their room covers ``target``.
    Returns the chosen clusters' room."""
    chosen: dict[str, int] = {}
    covered = 0
    for name in sorted(room, key=lambda n: (holding.get(n, 0) <= 0, -room[n], n)):
        if covered >= target:
            break
        chosen[name] = room[name]
        covered += room[name]
    return chosen


# -- steady division -----------------------------------------------------------------------
#
# A dynamic division that is recomputed from the room every render moves replicas whenever
# the room changes, and the room changes because of the replicas just placed (a cluster's own
# pods use its room): placement oscillates. Upstream keeps the previous placement and moves
# only the difference; so does gitfleet. `current` below is the previous placement restricted
# to the clusters still bound; a bound cluster missing from it holds nothing.


def largest_remainder(total: int, weights: Mapping[str, int]) -> dict[str, int]:
    """Split ``total`` in proportion to ``weights``: floors first, then one each to the largest
    fractional parts, ties by cluster name ascending. Sums to ``total`` whenever some weight
    is positive (all zeros otherwise)."""
    return _floor_then_remainder(total, weights, by_fraction=True)


def _with_current(room: Mapping[str, int], current: Mapping[str, int]) -> dict[str, int]:
    unknown = set(current) - set(room)
    if unknown:
        raise ValueError(f"current replicas for clusters not bound: {sorted(unknown)}")
    _check(0, current, "current replicas")
    return {name: current.get(name, 0) for name in room}


def clusternet_steady(total: int, *, room: Mapping[str, int], current: Mapping[str, int],
                      drain: Collection[str] = ()) -> dict[str, int]:
    """Clusternet ``Dynamic`` (``Spread``) division, kept steady.

    ``room`` is each bound cluster's free room (available replicas); ``current`` what the
    previous placement gave the clusters still bound. Unchanged total: ``current`` as is.
    Scale up: the extra replicas are split by ``divide_dynamic`` over the room and added, so
    a cluster never gets more than its room; what does not fit stays unplaced (the result sums
    to less than ``total``). Scale down: the replicas to remove are split by
    ``largest_remainder`` over what each cluster holds.

    ``drain``: clusters cordoned by a NoSchedule taint. They keep what they hold, get none of
    the extra replicas of a scale up, and give first in a scale down.
    """
    _check(total, room, "available replicas")
    held = _with_current(room, current)
    kept = sum(held.values())
    if total >= kept:
        extra = divide_dynamic(total - kept, {n: 0 if n in drain else r for n, r in room.items()})
        return {name: held[name] + extra[name] for name in room}
    remove = kept - total
    first = {n: h for n, h in held.items() if n in drain}
    from_drained = largest_remainder(min(remove, sum(first.values())), first) if first else {}
    rest = {n: h for n, h in held.items() if n not in drain}
    left = remove - sum(from_drained.values())
    from_rest = largest_remainder(left, rest) if left and rest else {}
    return {name: held[name] - from_drained.get(name, 0) - from_rest.get(name, 0)
            for name in room}


def karmada_steady(total: int, *, room: Mapping[str, int], current: Mapping[str, int],
                   tie_key: str, aggregated: bool, fresh: bool = False) -> dict[str, int] | None:
    """Karmada ``dynamicWeight: AvailableReplicas`` / ``Aggregated`` division (Steady mode, or
    Fresh with ``fresh=True``); None when it is unschedulable (the room is too small).

    ``room`` is each candidate's free room, ``current`` the previous placement on the clusters
    still candidates. Steady: an unchanged total keeps ``current``; scale up divides only the
    extra over the free room (Webster; Aggregated: the fewest clusters, those holding replicas
    first, then most room, then name, whose room covers the extra) and adds it; scale down
    divides the new total by Webster over the current replicas (Aggregated: among the clusters
    holding most first, as few as cover the total). Fresh: the whole total over free room plus
    each cluster's own replicas, as a first placement. Never more than the room on any cluster.
    """
    _check(total, room, "available replicas")
    held = _with_current(room, current)
    kept = sum(held.values())
    if fresh:
        weights = {name: room[name] + held[name] for name in room}
        prior: Mapping[str, int] = {}
        base: dict[str, int] = {}
        target = total
    elif total == kept:
        return held
    elif total < kept:
        weights, prior, base, target = held, {}, {}, total
    else:
        weights, prior, base, target = dict(room), held, held, total - kept
    if sum(weights.values()) < target:
        return None
    if aggregated:
        weights = fewest_covering(target, weights, holding=prior)
    added = divide_webster(target, weights, tie_key=tie_key)
    return {name: base.get(name, 0) + added.get(name, 0) for name in room}


def karmada_overflow(total: int, *, tiers: list[list[str]], room: Mapping[str, int],
                     current: Mapping[str, int], tie_key: str, aggregated: bool,
                     fresh: bool = False) -> dict[str, int] | None:
    """Karmada ``overflowAffinities``: ordered tiers of clusters (primary first), steadily.

    Scale up: the extra replicas go to the first tier up to its free room, what does not fit
    to the next, and so on; inside a tier they are divided as ``karmada_steady`` divides them.
    Scale down: the last tier holding replicas is emptied first. An unchanged total moves
    nothing. Fresh: tiers are filled in order up to their room plus their own replicas.
    None when the tiers together cannot hold what must be placed.
    """
    _check(total, room, "available replicas")
    held = _with_current(room, current)
    kept = sum(held.values())
    if fresh:
        capacity = [sum(room[c] + held[c] for c in tier) for tier in tiers]
        if sum(capacity) < total:
            return None
        targets, left = [], total
        for cap in capacity:
            targets.append(min(left, cap))
            left -= targets[-1]
    else:
        if total - kept > sum(room.values()):
            return None
        targets = [sum(held[c] for c in tier) for tier in tiers]
        delta = total - kept
        order = range(len(tiers)) if delta >= 0 else reversed(range(len(tiers)))
        for i in order:
            if delta > 0:
                step = min(delta, sum(room[c] for c in tiers[i]))
            else:
                step = -min(-delta, targets[i])
            targets[i] += step
            delta -= step
    result = dict.fromkeys(room, 0)
    for tier, target in zip(tiers, targets, strict=True):
        part = karmada_steady(target, room={c: room[c] for c in tier},
                              current={c: held[c] for c in tier if held[c]}, tie_key=tie_key,
                              aggregated=aggregated, fresh=fresh)
        if part is None:  # cannot happen: each tier's target fits its room
            return None
        result.update(part)
    return result
