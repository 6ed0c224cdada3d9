"""One hub shard's round, in process: a local fleet repository, the Leases on kubesim (a
FakeClock for them), another member's Lease already there. The shard writes its own state
branch, exactly the cluster branches it owns, each commit naming it; as leader it writes
`<prefix>/state` from its state and the cluster branches; /metrics says its share. Without
shards nothing of this exists (the hub's own tests cover that hub)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gitfleet.clock import FakeClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.membership import SHARD_LABEL, LeaseTimes, owner_of
from gitfleet.hub.sharding import GROUP_LABEL, Shards, ShardSettings
from gitfleet.kube.client import KubeClient
from gitfleet.kube.leases import Lease, LeaseClient
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import Git
from gitfleet.state.store import LocalStore
from tests.fleetfixtures import config_map, feed, managed_cluster, subscription
from tests.harness import commit, git

CLUSTERS = [f"c{i:02d}" for i in range(24)]
B = Branches()


def test_a_shard_writes_its_state_and_only_the_cluster_branches_it_owns(
        kubesim: Callable[..., KubeSim], tmp_path: Path) -> None:
    repo = tmp_path / "fleet"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "fleet", {
        **{f"clusters/{c}.yaml": managed_cluster(c, f"{i:08d}-1111-4111-8111-111111111111",
                                                 namespace=False, sync_mode=None)
           for i, c in enumerate(CLUSTERS)},
        "policies/app.yaml": subscription(feed("ConfigMap", "conf", namespace="app")),
        "templates/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n",
        "templates/conf.yaml": config_map("conf", "version: '1'")})
    sim, clock = kubesim(), FakeClock()
    leases = LeaseClient(KubeClient(sim.api_client()), "default")
    leases.write(Lease(name="gitfleet-hub-shard-s1", holder="s1/other", duration=3600,
                       acquired=clock.now() - 3600, renewed=clock.now(),
                       labels={GROUP_LABEL: "gitfleet-hub", SHARD_LABEL: "s1"}), previous=None)
    shards = Shards(leases, ShardSettings(name="s0", times=LeaseTimes(duration=15, renew=3,
                                                                      margin=3)), clock=clock)
    for _ in range(7):                # one join delay of renewals
        shards.tick()
        clock.advance(3)
    shards.tick()
    hub = Hub(LocalStore(Git(repo)), shards=shards)
    report = hub.run_once()
    assert report is not None and report.wrote

    mine = sorted(c for c in CLUSTERS if owner_of(c, ("s0", "s1")) == "s0")
    assert 0 < len(mine) < len(CLUSTERS)
    written = sorted(r.rsplit("/", 1)[1] for r in Git(repo).refs(B.cluster("")))
    assert written == mine
    for cluster in mine:
        body = git(repo, "log", "-1", "--format=%B", B.cluster(cluster))
        assert body.rstrip().endswith("Gitfleet-Shard: s0"), body
    state = Git(repo).resolve(B.shard("s0"))
    assert state is not None
    # it leads: `<prefix>/state` is the fleet's state, made from its state and the branches
    fleet_state = git(repo, "log", "-1", "--format=%B", B.state)
    assert f"Shard-State: {state}" in fleet_state and "Gitfleet-Shard: s0" in fleet_state
    listed = git(repo, "ls-tree", "--name-only", f"{B.state}:clusters").split()
    assert listed == mine
    text = hub.metrics.text()
    assert f"gitfleet_hub_shard_clusters {float(len(mine))}" in text
    assert "gitfleet_hub_shard_members 2.0" in text and "gitfleet_hub_shard_leader 1.0" in text
    assert 'gitfleet_hub_shard_info{shard="s0"} 1.0' in text
