"""The pure rollout machine and wave assignment: no Git, no clock — time is an argument."""

from __future__ import annotations

from gitfleet.model.objects import Cluster, Origin
from gitfleet.model.rollouts import MaxUnavailable, RolloutPolicy, Wave
from gitfleet.rollout.machine import ClusterReport, Inputs, Release, step
from gitfleet.rollout.progress import Progress, from_record, to_record
from gitfleet.rollout.waves import assign_waves, hash_order
from gitfleet.wire.rolloutcontrol import Control
from gitfleet.wire.rollouts import Phase, State, read_rollouts, rollouts_file


def cluster(name: str, **labels: str) -> Cluster:
    return Cluster(name=name, namespace=f"gitfleet-{name}", labels=labels, cluster_id="",
                   sync_mode="Pull", cluster_type="StandardCluster", taints=(), provider="",
                   region="", zone="", origin=Origin(f"clusters/{name}.yaml"))


POLICY = RolloutPolicy(
    name="web", selector=None,
    waves=(Wave("canary", affinity={"matchLabels": {"ring": "canary"}}, bake=60),
           Wave("early", percent=50, bake=60), Wave("rest")),
    max_unavailable=MaxUnavailable(100, percent=True), health_timeout=300)
FLEET = {"c1": cluster("c1", ring="canary")} | {f"p{i}": cluster(f"p{i}") for i in range(4)}
GOVERNED = frozenset({"web/web"})


def test_waves_by_affinity_then_percent_of_the_rest_in_hash_order() -> None:
    waves = assign_waves(POLICY, FLEET)
    assert waves["c1"] == 0
    early = [n for n, w in waves.items() if w == 1]
    assert early == hash_order([f"p{i}" for i in range(4)])[:2]
    assert sorted(n for n, w in waves.items() if w == 2) == sorted(
        set(FLEET) - {"c1"} - set(early))
    # adding a cluster keeps the canary and takes its share of the rest
    bigger = assign_waves(POLICY, FLEET | {"p9": cluster("p9")})
    assert bigger["c1"] == 0 and sum(1 for w in bigger.values() if w == 1) == 3


def inputs(now: float, reports: dict[str, ClusterReport], *, revision: str = "r1",
           control: Control | None = None, policy: RolloutPolicy = POLICY,
           holding: frozenset[str] = frozenset()) -> Inputs:
    """`holding`: the clusters whose branch holds the revision (released and published)."""
    return Inputs(revision=revision, source="s" * 40, waves=assign_waves(policy, FLEET),
                  current={n: n in holding for n in FLEET}, heads={n: f"head-{n}" for n in FLEET},
                  governed=dict.fromkeys(FLEET, GOVERNED), reports=reports,
                  control=control or Control(),
                  now=now)


def ok(phase: str = "Success", *, ready: bool = True, applied: bool = True) -> ClusterReport:
    return ClusterReport(ready=ready, applied=applied, phases={"web/web": phase})


def released(releases: dict[str, Release]) -> set[str]:
    return {n for n, r in releases.items() if r == Release.TARGET}


def test_first_step_records_and_releases_nothing_then_the_canary() -> None:
    first = step(POLICY, None, inputs(0, {}))
    assert first.progress.phase == Phase.PROGRESSING and released(first.releases) == set()
    assert {c.before for c in first.progress.clusters.values()} == {f"head-{n}" for n in FLEET}
    reports = {n: ok(applied=False) for n in FLEET}
    second = step(POLICY, first.progress, inputs(1, reports))
    assert released(second.releases) == {"c1"}
    # Success at t=2, bake 60s: the early wave comes at t=62, not before
    held = frozenset({"c1"})
    # a Success reported while the branch does not hold the revision yet does not count
    assert step(POLICY, second.progress, inputs(2, reports | {"c1": ok()})).progress \
        .clusters["c1"].state == State.RELEASED
    p = step(POLICY, second.progress, inputs(2, reports | {"c1": ok()}, holding=held)).progress
    assert released(step(POLICY, p, inputs(61, reports | {"c1": ok()},
                                           holding=held)).releases) == {"c1"}
    out = step(POLICY, p, inputs(62, reports | {"c1": ok()}, holding=held))
    assert len(released(out.releases)) == 3 and "wave canary done" in out.events


def test_rollback_moves_released_clusters_back_and_stays() -> None:
    policy = RolloutPolicy(name="web", selector=None, waves=POLICY.waves,
                           health_timeout=300, on_failure="Rollback")
    p = step(policy, None, inputs(0, {})).progress
    p = step(policy, p, inputs(1, {n: ok(applied=False) for n in FLEET})).progress
    out = step(policy, p, inputs(2, {n: ok(applied=False) for n in FLEET} | {"c1": ok("Failure")},
                                 holding=frozenset({"c1"})))
    assert out.progress.phase == Phase.ROLLED_BACK
    assert out.releases["c1"] == Release.BACK
    assert out.progress.clusters["c1"].state == State.ROLLED_BACK
    later = step(policy, out.progress, inputs(999, {n: ok() for n in FLEET}))
    assert later.releases["c1"] == Release.BACK and released(later.releases) == set()


def test_pause_promote_and_abort_by_control() -> None:
    p = step(POLICY, None, inputs(0, {})).progress
    reports = {n: ok(applied=False) for n in FLEET}
    paused = step(POLICY, p, inputs(1, reports, control=Control(paused=True)))
    assert paused.progress.phase == Phase.PAUSED and released(paused.releases) == set()
    resumed = step(POLICY, paused.progress, inputs(2, reports))
    assert resumed.progress.phase == Phase.PROGRESSING and released(resumed.releases) == {"c1"}
    # promote: the canary's gates are skipped (no Success needed)
    promoted = step(POLICY, resumed.progress,
                    inputs(3, reports, control=Control(promote="r1/canary")))
    assert len(released(promoted.releases)) == 3
    aborted = step(POLICY, promoted.progress, inputs(4, reports, control=Control(abort="r1")))
    assert aborted.progress.phase == Phase.ABORTED
    assert {n for n, r in aborted.releases.items() if r == Release.BACK} == \
        released(promoted.releases)


def test_a_newer_revision_supersedes() -> None:
    p = step(POLICY, None, inputs(0, {})).progress
    p = step(POLICY, p, inputs(1, {n: ok(applied=False) for n in FLEET})).progress
    out = step(POLICY, p, inputs(2, {}, revision="r2"))
    assert out.progress.revision == "r2" and out.progress.wave == 0
    assert "superseding" in out.events[0]


def test_unknown_is_skipped_not_failed_and_counts_against_max_unavailable() -> None:
    policy = RolloutPolicy(name="web", selector=None, waves=(Wave("all"),),
                           max_unavailable=MaxUnavailable(1, percent=False))
    p = step(policy, None, inputs(0, {}, policy=policy)).progress
    reports = {n: ok(applied=False) for n in FLEET} | {"p1": ok(ready=False)}
    out = step(policy, p, inputs(1, reports, policy=policy))
    assert out.progress.clusters["p1"].state == State.SKIPPED
    assert released(out.releases) == set()        # the skipped cluster takes the one slot
    assert out.progress.phase == Phase.PROGRESSING


def test_progress_round_trips_through_rollouts_yaml() -> None:
    p = step(POLICY, None, inputs(0, {})).progress
    p = step(POLICY, p, inputs(1, {n: ok(applied=False) for n in FLEET})).progress
    data = rollouts_file([to_record(p, POLICY)])
    back = from_record(read_rollouts(data)["web"], POLICY)
    assert isinstance(back, Progress)
    assert back.clusters == p.clusters and back.wave == p.wave and back.phase == p.phase
    # a wave the policy no longer has: the rollout starts again at its first wave
    fewer = RolloutPolicy(name="web", selector=None, waves=(Wave("all"),))
    assert from_record(read_rollouts(data)["web"], fewer) is None
