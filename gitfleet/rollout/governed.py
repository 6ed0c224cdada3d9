"""Which Description folders (`<namespace>/<name>` under a cluster) a RolloutPolicy governs.

A Subscription's Descriptions live in `<namespace>/<name>` (its HelmCharts in
`<namespace>/<name>@helm`), a PropagationPolicy's in `<namespace>/<name>`, a
ClusterPropagationPolicy's in `_cluster/<name>` (`gitfleet.layout`). A policy without a
selector governs every one; a folder two policies would govern belongs to the first by name,
so that one rollout, never two, moves it.
"""

from __future__ import annotations

from gitfleet.layout import CLUSTER_SCOPE_DIR
from gitfleet.model.loader import Fleet
from gitfleet.model.rollouts import RolloutPolicy
from gitfleet.render.plans import HELM_SUFFIX
from gitfleet.render.selection import matches_selector


def governed_folders(fleet: Fleet) -> dict[str, frozenset[str]]:
    """policy name -> the Description folders it governs (each folder in one policy only)."""
    sources: list[tuple[str, dict[str, str]]] = []
    for sub in fleet.subscriptions:
        sources.append((f"{sub.namespace}/{sub.name}", sub.labels))
        sources.append((f"{sub.namespace}/{sub.name}{HELM_SUFFIX}", sub.labels))
    for prop in fleet.propagations:
        sources.append((f"{prop.namespace or CLUSTER_SCOPE_DIR}/{prop.name}", prop.labels))
    taken: set[str] = set()
    out: dict[str, frozenset[str]] = {}
    for policy in fleet.rollouts:
        mine = {folder for folder, labels in sources
                if folder not in taken and _selects(policy, labels)}
        taken |= mine
        out[policy.name] = frozenset(mine)
    return out


def _selects(policy: RolloutPolicy, labels: dict[str, str]) -> bool:
    return matches_selector(policy.selector, labels)
