"""Hub shards render only the clusters they own (issue 34 item 1): the same fleet rendered by
one hub and by three shards gives the very same cluster trees (replica division over the
whole fleet, a Localization's ApplyLater basis, an incremental round), the leader's
`<prefix>/state` is the fleet one hub would write, and a cluster handed to a new shard keeps
its guard's hold. In process: local fleet repositories, the Leases on kubesim, one FakeClock.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gitfleet.clock import FakeClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.membership import SHARD_LABEL, LeaseTimes
from gitfleet.hub.sharding import GROUP_LABEL, Shards, ShardSettings
from gitfleet.kube.client import KubeClient
from gitfleet.kube.leases import Lease, LeaseClient
from gitfleet.kubesim import KubeSim
from gitfleet.layout import ERRORS_FILE, Branches
from gitfleet.state.git import Git
from gitfleet.state.store import LocalStore
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import commit, git

B = Branches()
TIMES = LeaseTimes(duration=3600, renew=60, margin=10)   # nothing lapses in a test
CLUSTERS = [f"c{i:02d}" for i in range(24)]
WEB = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: web, namespace: app}
spec:
  subscribers:
    - {clusterAffinity: {matchLabels: {tier: small}}, weight: 1}
    - {clusterAffinity: {matchLabels: {tier: big}}, weight: 3}
  schedulingStrategy: Dividing
  dividingScheduling: {type: Static}
  feeds:
    - {apiVersion: apps/v1, kind: Deployment, namespace: app, name: web}
"""


def deployment(replicas: int) -> str:
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: app}\n"
            f"spec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n"
            "  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n"
            "        - {name: web, image: nginx:1.25.3}\n")


def localization(cluster: str, value: str) -> str:
    """An ApplyLater Localization of the ConfigMap `conf` in `cluster`."""
    return ("apiVersion: apps.clusternet.io/v1alpha1\nkind: Localization\n"
            f"metadata: {{name: conf, namespace: gitfleet-{cluster}}}\nspec:\n"
            "  overridePolicy: ApplyLater\n"
            "  feed: {apiVersion: v1, kind: ConfigMap, name: conf, namespace: app}\n"
            "  overrides:\n"
            f"    - {{name: local, type: MergePatch, value: '{{\"data\": {{\"local\": "
            f"\"{value}\"}}}}'}}\n")


def fleet(version: int, replicas: int) -> dict[str, str | None]:
    return {
        **{f"clusters/{c}.yaml": managed_cluster(
            c, f"{i:08d}-1111-4111-8111-111111111111",
            labels=f"env: test, tier: {'big' if i % 4 == 0 else 'small'}")
           for i, c in enumerate(CLUSTERS)},
        "policies/app.yaml": subscription(feed("ConfigMap", "conf", namespace="app")),
        "policies/web.yaml": WEB,
        "templates/ns.yaml": NAMESPACE,
        "templates/conf.yaml": config_map("conf", f"version: '{version}'"),
        "templates/web.yaml": deployment(replicas)}


def member(leases: LeaseClient, clock: FakeClock, name: str) -> None:
    """`name`'s membership Lease, taken an hour ago (it counts at once)."""
    leases.write(Lease(name=f"gitfleet-hub-shard-{name}", holder=f"{name}/test",
                       duration=3600, acquired=clock.now() - 3600, renewed=clock.now(),
                       labels={GROUP_LABEL: "gitfleet-hub", SHARD_LABEL: name}),
                 previous=None)


def shard_hub(repo: Path, leases: LeaseClient, clock: FakeClock, name: str) -> Hub:
    shards = Shards(leases, ShardSettings(name=name, times=TIMES), clock=clock)
    shards.identity = f"{name}/test"       # the process holding the Lease written above
    return Hub(LocalStore(Git(repo)), shards=shards, clock=clock)


def tick(hubs: list[Hub]) -> None:
    for hub in hubs:
        assert hub.shards is not None
        hub.shards.tick()


def trees(repo: Path) -> dict[str, str]:
    """cluster -> the tree of its branch."""
    out = git(repo, "for-each-ref", "--format=%(tree) %(refname)", B.cluster(""))
    return {ref.rsplit("/", 1)[1]: tree for tree, ref in
            (line.split(" ", 1) for line in out.splitlines())}


def init(repo: Path) -> None:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")


def test_shards_render_only_their_clusters_and_the_fleet_is_what_one_hub_renders(
        kubesim: Callable[..., KubeSim], tmp_path: Path) -> None:
    one, sharded = tmp_path / "one", tmp_path / "sharded"
    init(one)
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(sharded))
    clock = FakeClock()
    leases = LeaseClient(KubeClient(kubesim().api_client()), "default")
    names = ("s0", "s1", "s2")
    for name in names:
        member(leases, clock, name)
    hub = Hub(LocalStore(Git(one)), clock=clock)
    shards = [shard_hub(sharded, leases, clock, name) for name in names]
    tick(shards)
    assert shards[0].shards is not None and shards[0].shards.leads()

    versions = [
        fleet(1, 50) | {"policies/loc-c05.yaml": localization("c05", "a")},
        # a new ConfigMap (a feed changed: c05's basis moves) and a new division
        fleet(2, 37) | {"policies/loc-c05.yaml": localization("c05", "a"),
                        "policies/loc-c07.yaml": localization("c07", "b")},
        # only c05's ApplyLater Localization: deferred, its basis stays (an incremental round)
        fleet(2, 37) | {"policies/loc-c05.yaml": localization("c05", "changed"),
                        "policies/loc-c07.yaml": localization("c07", "b")},
    ]
    for n, files in enumerate(versions):
        commit(one, f"v{n + 1}", files)      # the very same commits in both (ids are inputs)
        git(sharded, "fetch", "-q", str(one), "+refs/heads/main:refs/heads/main")
        report = hub.run_once()
        assert report is not None and not report.result.errors, report
        rendered = 0
        for shard in shards:
            assert shard.shards is not None
            owner = shard.shards.owner()
            mine = owner.share(CLUSTERS)
            done = shard.run_once()
            assert done is not None and not done.result.errors
            assert len(done.result.clusters) == len(mine) < len(CLUSTERS)   # its share only
            rendered += len(mine)
            if n == 2:
                assert done.mode == "incremental", done.mode
        assert rendered == len(CLUSTERS)
        shards[0].run_once()        # the leader assembles the fleet's state once all wrote
        assert trees(sharded) == trees(one), f"v{n + 1}"
        for path in ("clusters", ERRORS_FILE):
            assert Git(sharded).resolve(f"{B.state}:{path}") == \
                Git(one).resolve(f"{B.state}:{path}"), (f"v{n + 1}", path)

    # what the versions did, as one hub renders it (the comparison above is not vacuous)
    web = {c: int(git(one, "show", f"{B.cluster(c)}:app/web/apps_Deployment_app_web.yaml")
                  .split("replicas: ", 1)[1].split("\n", 1)[0]) for c in CLUSTERS}
    assert sum(web.values()) == 37 and web["c00"] > web["c01"] > 0, web   # divided by weight
    c05 = git(one, "show", f"{B.cluster('c05')}:app/app/core_ConfigMap_app_conf.yaml")
    assert "local: a" in c05 and "version: '2'" in c05, c05


def test_a_cluster_handed_to_a_new_shard_keeps_its_guard_hold(
        kubesim: Callable[..., KubeSim], tmp_path: Path) -> None:
    repo = tmp_path / "fleet"
    init(repo)
    names = [f"c{i:02d}" for i in range(12)]
    clusters = {f"clusters/{c}.yaml": managed_cluster(
        c, f"{i:08d}-2222-4222-8222-222222222222") for i, c in enumerate(names)}
    maps = {f"templates/{m}.yaml": config_map(m, "k: v") for m in ("a", "b", "c")}
    commit(repo, "v1", {**clusters, **maps, "templates/ns.yaml": NAMESPACE,
                        "fleet.yaml": "guards:\n  maxDeletions: {count: 1, share: 0.2}\n",
                        "policies/app.yaml": subscription(
                            *(feed("ConfigMap", m, namespace="app") for m in "abc"))})
    clock = FakeClock()
    leases = LeaseClient(KubeClient(kubesim().api_client()), "default")
    member(leases, clock, "s0")
    member(leases, clock, "s1")
    hubs = [shard_hub(repo, leases, clock, name) for name in ("s0", "s1")]
    tick(hubs)
    for hub in hubs:
        hub.run_once()
    before = trees(repo)
    assert sorted(before) == names

    # two of three ConfigMaps gone in every cluster: past the guard, every cluster is held
    commit(repo, "v2", {"policies/app.yaml": subscription(feed("ConfigMap", "a",
                                                               namespace="app")),
                        "templates/b.yaml": None, "templates/c.yaml": None})
    for hub in hubs:
        hub.run_once()
    assert trees(repo) == before

    # a third shard joins: it takes its share, and what it takes stays held
    member(leases, clock, "s2")
    hubs.append(shard_hub(repo, leases, clock, "s2"))
    tick(hubs)
    hub2 = hubs[2]
    assert hub2.shards is not None
    taken = hub2.shards.owner().share(names)
    assert taken, "s2 owns no cluster: pick other names"
    report = hub2.run_once()
    assert report is not None
    assert trees(repo) == before, "a cluster handed over lost its hold"
    held = git(repo, "show", f"{B.shard('s2')}:{ERRORS_FILE}")
    named = sorted(part.split("\n", 1)[0] for part in held.split("object: Cluster/")[1:])
    assert named == sorted(taken), (named, taken)        # its clusters' holds, kept
    for hub in hubs[:2]:
        hub.run_once()
    assert trees(repo) == before
