"""What `render`, `validate` and `diff` read from the status branches: each cluster's
capabilities and room, with the hub's reader, and one line saying where they came from."""

from __future__ import annotations

import time
from pathlib import Path

from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.charts.hubrender import read_status_input, render_revision
from gitfleet.charts.renderer import Charts
from gitfleet.clock import isoformat
from gitfleet.layout import Branches
from gitfleet.model.loader import load_fleet
from gitfleet.model.objects import ObjectKey
from gitfleet.render.charts import Capabilities
from gitfleet.render.core import RenderResult
from gitfleet.render.status import ClusterCapacity
from gitfleet.state.git import init_repo
from gitfleet.wire.autoscaling import (
    AUTOSCALING_FILE,
    AutoscalingFile,
    ReplicaTotal,
    autoscaling_file,
)
from gitfleet.wire.status import ClusterStatus, Heartbeat
from tests.harness import Remote, clone, example_repo, git
from tests.render.conftest import cluster, doc, objects_in

SETTINGS = doc({"apiVersion": "gitfleet.io/v1alpha1", "kind": "FleetSettings",
                "kubernetesVersion": "1.31"})


def _fleet(*names: str) -> dict[str, bytes]:
    return {"fleet.yaml": SETTINGS, **dict(cluster(n) for n in names)}


def _report(remote: Remote, tmp: Path, name: str, version: str, *apis: str) -> None:
    branch = StatusBranch(init_repo(tmp / f"agent-{name}.git", bare=True), remote.url,
                          Branches(), name)
    beat = Heartbeat(time=isoformat(time.time()), interval_seconds=60, healthz=True,
                     kubernetes_version=version, api_versions=apis,
                     allocatable={"cpu": "4", "pods": "110"}, requested={"cpu": "1"})
    branch.write(ClusterStatus(cluster=name, heartbeat=beat), when=time.time())


def test_without_status_branches_every_cluster_renders_with_fleet_yaml(tmp_path: Path) -> None:
    fleet = load_fleet(_fleet("a", "b"))
    for repo in (None, tmp_path):                      # no repository at all; a plain folder
        found = read_status_input(repo, fleet)
        assert found.source == "fleet.yaml" and found.snapshot.capabilities == {}
        assert found.line() == ("capabilities: fleet.yaml kubernetesVersion 1.31 and Helm's "
                                "default API versions for every cluster (no status branches "
                                "in this repository)")


def test_status_branches_of_the_repository_and_of_a_clone(remote: Remote,
                                                          tmp_path: Path) -> None:
    fleet = load_fleet(_fleet("a", "b", "c"))
    _report(remote, tmp_path, "a", "v1.30.4", "v1", "apps/v1")
    _report(remote, tmp_path, "b", "v1.33.0+k3s1", "v1", "apps/v1", "autoscaling.k8s.io/v1")
    _report(remote, tmp_path, "gone", "v1.29.0", "v1")    # not a cluster of the fleet
    found = read_status_input(remote.git.path, fleet)
    assert found.snapshot.capabilities == {
        "a": Capabilities("v1.30.4", ("apps/v1", "v1")),
        "b": Capabilities("v1.33.0", ("apps/v1", "autoscaling.k8s.io/v1", "v1")),
        "gone": Capabilities("v1.29.0", ("v1",))}
    assert found.snapshot.capacity["a"] == ClusterCapacity({"cpu": "4", "pods": "110"},
                                                           {"cpu": "1"})
    assert found.line() == (
        "capabilities: from status (refs/heads/gitfleet/status/*): v1.30.4 (a); v1.33.0 (b); "
        "fleet.yaml kubernetesVersion 1.31 and Helm's default API versions for c "
        "(no heartbeat)")
    assert found.to_dict()["clusters"]["c"] == {"from": "fleet.yaml",
                                                "kubernetesVersion": "1.31", "apiVersions": []}

    # a clone has them as remote-tracking branches: read as last fetched, nothing written
    work = clone(remote.git.path, tmp_path / "work")
    refs_before = git(work, "for-each-ref")
    in_clone = read_status_input(work, fleet)
    assert in_clone.snapshot == found.snapshot
    assert in_clone.where == "refs/remotes/origin/gitfleet/status/* as last fetched"
    assert git(work, "for-each-ref") == refs_before


def _cart_total(result: RenderResult) -> int:
    return sum(body["spec"]["replicas"] for c in result.clusters
               for key, body in objects_in(result, c.name).items()
               if key == "Deployment/shop/cart")


def test_autoscaled_workloads_render_with_the_total_the_hub_last_set(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")       # shop/cart: a FederatedHPA, 2 replicas
    charts = Charts(tmp_path / "charts")
    before = render_revision(repo, "main", charts=charts)
    assert _cart_total(before.result) == 2 and before.status.snapshot.replicas == {}
    # the hub's autoscalers set cart to 7 (and once scaled a workload no autoscaler targets
    # any more: the hub forgets that total, so does render)
    data = autoscaling_file(AutoscalingFile(replicas=(
        ReplicaTotal("apps/v1", "Deployment", "shop", "cart", 7),
        ReplicaTotal("apps/v1", "Deployment", "shop", "retired", 9))))
    assert data is not None
    blob = git(repo, "hash-object", "-w", "--stdin", input=data.decode()).strip()
    tree = git(repo, "mktree", input=f"100644 blob {blob}\t{AUTOSCALING_FILE}\n").strip()
    state = git(repo, "commit-tree", tree, "-m", "state").strip()
    git(repo, "update-ref", Branches().state, state)
    after = render_revision(repo, "main", charts=charts)
    assert _cart_total(after.result) == 7
    assert after.status.snapshot.replicas == {ObjectKey("apps", "Deployment", "shop", "cart"): 7}
    assert after.status.line().endswith(
        "; replicas of 1 autoscaled workload as the hub last set them (refs/heads/gitfleet/state)")
