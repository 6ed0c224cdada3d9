"""Which wave each cluster belongs to.

Waves are filled in order: an affinity wave takes the clusters whose labels its selector (a
Kubernetes LabelSelector, as in Subscriptions) matches and no earlier wave took; a percentage
wave takes that share (rounded up, so a non-empty rest always gives at least one) of the
clusters no earlier wave took, in a stable order of name hashes, so that adding a cluster moves
few others and the choice does not follow alphabetical names; the last wave without either
takes every cluster left. Clusters that no wave takes (the last wave
has an affinity or a percentage) go with the last wave: every cluster is released eventually.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

from gitfleet.model.objects import Cluster
from gitfleet.model.rollouts import RolloutPolicy
from gitfleet.render.selection import matches_selector


def hash_order(names: list[str]) -> list[str]:
    """`names` in the order of their SHA-256 (stable across runs and machines)."""
    return sorted(names, key=lambda n: (hashlib.sha256(n.encode()).hexdigest(), n))


def assign_waves(policy: RolloutPolicy, clusters: Mapping[str, Cluster]) -> dict[str, int]:
    """cluster -> index of its wave in `policy.waves`."""
    left = sorted(clusters)
    out: dict[str, int] = {}
    last = len(policy.waves) - 1
    for i, wave in enumerate(policy.waves):
        if wave.affinity is not None:
            taken = [n for n in left if matches_selector(wave.affinity, clusters[n].labels)]
        elif wave.percent is not None:
            taken = hash_order(left)[:math.ceil(len(left) * wave.percent / 100)]
        else:
            taken = list(left)
        for name in taken:
            out[name] = i
        chosen = set(taken)
        left = [n for n in left if n not in chosen]
    for name in left:
        out[name] = last
    return out
