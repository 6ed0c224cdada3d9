"""What the render does with the hub's lifecycle inputs (pure: StatusSnapshot in, files out):
lifecycle taints stop new placements but take nothing away; an evicted workload is divided
over the other clusters; a retained old copy keeps its replicas until purged."""

from __future__ import annotations

from typing import Any

from gitfleet.model.objects import ObjectKey, Taint
from gitfleet.render.core import render
from gitfleet.render.status import ClusterCapacity, StatusSnapshot
from tests.render.conftest import cluster, deployment, doc, fleet_of, replicas

UNREACHABLE = "cluster.gitfleet.io/unreachable"
WEB = ObjectKey("apps", "Deployment", "apps", "web")


def policy(name: str, *, dynamic: bool = False, tolerations: list[dict[str, Any]] | None = None,
           target: str = "web") -> tuple[str, bytes]:
    scheduling: dict[str, Any] = {"replicaSchedulingType": "Divided"}
    if dynamic:
        scheduling["replicaDivisionPreference"] = "Weighted"
        scheduling["weightPreference"] = {"dynamicWeight": "AvailableReplicas"}
    placement: dict[str, Any] = {"replicaScheduling": scheduling}
    if tolerations:
        placement["clusterTolerations"] = tolerations
    return f"policies/{name}.yaml", doc({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": "apps"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": target}],
                 "placement": placement}})


def tainted(*names: str, effect: str = "NoSchedule") -> dict[str, tuple[Taint, ...]]:
    return {n: (Taint(UNREACHABLE, "", effect, "2026-01-01T00:00:00Z"),) for n in names}


CLUSTERS = [cluster("a"), cluster("b"), cluster("c")]


def test_a_lifecycle_taint_keeps_placements_but_takes_no_new_ones() -> None:
    fleet = fleet_of(*CLUSTERS, ("templates/web.yaml", deployment("web", replicas=6)),
                     policy("web"))
    first = render(fleet)
    assert [replicas(first, c, "web") for c in "abc"] == [2, 2, 2]
    held = render(fleet, previous_files=first.files, status=StatusSnapshot(taints=tainted("b")))
    assert [replicas(held, c, "web") for c in "abc"] == [2, 2, 2]
    assert 'timeAdded: "2026-01-01T00:00:00Z"' in held.files["clusters/b/cluster.yaml"].decode()

    # a policy new to b does not land there (unless it tolerates the taint, by Karmada's name)
    grown = fleet_of(*CLUSTERS, ("templates/web.yaml", deployment("web", replicas=6)),
                     ("templates/api.yaml", deployment("api", replicas=4)),
                     policy("web"), policy("api", target="api"))
    status = StatusSnapshot(taints=tainted("b"))
    out = render(grown, previous_files=first.files, status=status)
    assert [replicas(out, c, "api") for c in "abc"] == [2, None, 2]
    tolerant = fleet_of(*CLUSTERS, ("templates/web.yaml", deployment("web", replicas=6)),
                        ("templates/api.yaml", deployment("api", replicas=4)),
                        policy("web"), policy("api", target="api", tolerations=[
                            {"key": "cluster.karmada.io/unreachable", "operator": "Exists"}]))
    out = render(tolerant, previous_files=first.files, status=status)
    assert replicas(out, "b", "api") and sum(replicas(out, c, "api") or 0 for c in "abc") == 4


def test_an_evicted_workload_is_divided_over_the_others_and_its_old_copy_kept_until_purged(
        ) -> None:
    fleet = fleet_of(*CLUSTERS, ("templates/web.yaml", deployment("web", replicas=6)),
                     policy("web"))
    first = render(fleet)
    taints = tainted("b", effect="NoExecute")
    kept = render(fleet, previous_files=first.files, status=StatusSnapshot(
        taints=taints, evicted={WEB: frozenset({"b"})}, retained={WEB: {"b": 2}}))
    assert [replicas(kept, c, "web") for c in "abc"] == [3, 2, 3]
    purged = render(fleet, previous_files=kept.files, status=StatusSnapshot(
        taints=taints, evicted={WEB: frozenset({"b"})}))
    assert [replicas(purged, c, "web") for c in "abc"] == [3, None, 3]
    assert not any(p.startswith("clusters/b/apps/web/") for p in purged.files)


def test_steady_division_keeps_the_other_clusters_shares() -> None:
    room = {c: ClusterCapacity(allocatable={"cpu": "10", "pods": str(n)})
            for c, n in (("a", 100), ("b", 100), ("c", 100))}
    fleet = fleet_of(*CLUSTERS, ("templates/web.yaml", deployment("web", replicas=9)),
                     policy("web", dynamic=True))
    first = render(fleet, status=StatusSnapshot(capacity=room))
    before = [replicas(first, c, "web") for c in "abc"]
    assert sum(before) == 9 and before[1]
    out = render(fleet, previous_files=first.files, status=StatusSnapshot(
        capacity=room, taints=tainted("b", effect="NoExecute"),
        evicted={WEB: frozenset({"b"})}))
    after = [replicas(out, c, "web") for c in "abc"]
    assert after[1] is None and sum(a or 0 for a in after) == 9
    assert after[0] >= before[0] and after[2] >= before[2]   # nothing taken from a or c


def test_no_cluster_left_is_a_warning_not_a_crash() -> None:
    fleet = fleet_of(cluster("a"), ("templates/web.yaml", deployment("web", replicas=3)),
                     policy("web"))
    first = render(fleet)
    out = render(fleet, previous_files=first.files, status=StatusSnapshot(
        evicted={WEB: frozenset({"a"})}))
    assert replicas(out, "a", "web") is None
    assert any("failover found no other cluster" in w.message for w in out.warnings)
