"""`gitfleet diff` of a cluster-file change on a fleet with steady division shows what a full
render shows: HEAD's division depends on BASE's placement, so the cluster-only shortcut (which
schedules HEAD without it) must not be taken."""

from __future__ import annotations

from typing import Any

import pytest

from gitfleet.diff.engine import Snapshot, diff_snapshots
from tests.render.conftest import cluster, deployment, doc, feed, subscription
from tests.render.test_karmada import pp

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def files(policy: dict[str, Any], *, labels_d: dict[str, str]) -> dict[str, bytes]:
    entries = [cluster("a", {"env": "prod"}), cluster("b", {"env": "prod"}),
               cluster("c", {"env": "prod"}), cluster("d", labels_d),
               ("templates/d.yaml", doc(deployment("web", replicas=10, cpu="1"))),
               ("policies/p.yaml", doc(policy))]
    return {path: body for path, body in entries}


POLICIES = {
    "clusternet dynamic": subscription(
        "s", [feed("Deployment", "web")], [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}],
        schedulingStrategy="Dividing", dividingScheduling={"type": "Dynamic"}),
    "karmada dynamic weight": pp("p", [DEPLOY], {
        "clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}},
        "replicaScheduling": {"replicaSchedulingType": "Divided",
                              "replicaDivisionPreference": "Weighted",
                              "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_cluster_change_diff_matches_a_full_render(name: str) -> None:
    # BASE: 10 over a, b, c, d (no heartbeats in a diff: equal room) -> 3, 3, 2, 2 or so.
    # HEAD: d leaves; steadily only d's replicas move, where a fresh division of 10 over
    # three clusters gives other shares.
    base = Snapshot("1" * 40, files(POLICIES[name], labels_d={"env": "prod"}))
    head = Snapshot("2" * 40, files(POLICIES[name], labels_d={"env": "dev"}))
    fast = diff_snapshots(base, head).to_dict()
    full = diff_snapshots(base, head, everything=True).to_dict()
    for d in (fast, full):
        d["summary"].pop("unitsRendered")
    assert fast == full
