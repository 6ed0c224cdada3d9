"""The hub's judgement under jitter: a live agent is never Unknown, a stopped one is Unknown
from the first round after its last heartbeat plus the tolerance, not a round sooner."""

from __future__ import annotations

import pytest

from gitfleet.clock import FakeClock, isoformat, parse_iso
from gitfleet.hub.evictions import Lifecycle
from gitfleet.lifecycle.judgement import Condition, judge
from gitfleet.model.loader import load_fleet
from gitfleet.state.statusread import StatusReader
from gitfleet.wire.heartbeat import HeartbeatTiming
from gitfleet.wire.status import ClusterStatus, Heartbeat
from tests.harness import Remote, status_of
from tests.heartbeat.conftest import publish_timing, run_until

T0 = 1_767_225_600.0
# the widest jitter allowed and a tolerance only 30 s above the longest silence it allows
TIMING = HeartbeatTiming(interval=300, jitter=0.5, tolerance=480)


def _at(seconds: float, **fields: int) -> ClusterStatus:
    hb = Heartbeat(time=isoformat(seconds), livez=True, readyz=True, **fields)  # type: ignore[arg-type]
    return ClusterStatus(cluster="c", heartbeat=hb)


def test_the_declared_tolerance_is_the_limit_and_older_agents_get_three_intervals() -> None:
    declared = _at(T0, interval_seconds=300, tolerance_seconds=480)
    assert judge(declared, now=T0 + 480, parse_time=parse_iso).condition is Condition.READY
    late = judge(declared, now=T0 + 481, parse_time=parse_iso)
    assert (late.condition, late.since) == (Condition.UNKNOWN, T0 + 480)
    assert late.reason == "heartbeat older than its tolerance of 8m"
    older = _at(T0, interval_seconds=60)               # an agent from before toleranceSeconds
    assert judge(older, now=T0 + 180, parse_time=parse_iso).condition is Condition.READY
    assert judge(older, now=T0 + 181, parse_time=parse_iso).condition is Condition.UNKNOWN


def _fleet(names: list[str]):  # type: ignore[no-untyped-def]
    return load_fleet({f"clusters/{n}.yaml": (
        "apiVersion: clusters.clusternet.io/v1beta1\nkind: ManagedCluster\n"
        f"metadata: {{name: {n}}}\nspec: {{clusterId: id-{n}}}\n").encode() for n in names})


def test_a_running_hub_judges_an_unchanged_status_again_once_its_tolerance_ran_out() -> None:
    # the hub judges a status it judged Ready before without reading it again: time alone
    # must still turn it Unknown (and tainted), and a new heartbeat Ready again
    fleet, lifecycle = _fleet(["c0", "c1"]), Lifecycle()
    silent = {"c0": _at(T0, interval_seconds=300, tolerance_seconds=480)}   # c1 never reported
    for now in (T0 + 10, T0 + 480):
        life = lifecycle.judge(fleet, silent, None, now=now)
        assert {n: j.condition for n, j in life.judgements.items()} == {
            "c0": Condition.READY, "c1": Condition.NEVER_REPORTED}
        assert not life.taints and not life.digest
    late = lifecycle.judge(fleet, silent, None, now=T0 + 481)
    assert late.judgements["c0"].condition is Condition.UNKNOWN
    assert [t.key for t in late.taints["c0"]] == ["cluster.gitfleet.io/unreachable"]
    assert late.digest and any("cluster c0 is Unknown" in c for c in late.changes)
    back = {"c0": _at(T0 + 600, interval_seconds=300, tolerance_seconds=480)}
    again = lifecycle.judge(fleet, back, None, now=T0 + 601)
    assert again.judgements["c0"].condition is Condition.READY and not again.taints


def test_a_calm_fleet_is_judged_again_when_a_cluster_joins_or_its_status_moves() -> None:
    # a round in which all was calm is not judged cluster by cluster again while nothing
    # moved: a new cluster, a new status or an evictions file must each be judged at once
    lifecycle = Lifecycle()
    silent = {"c0": _at(T0, interval_seconds=300, tolerance_seconds=480)}
    calm = lifecycle.judge(_fleet(["c0", "c1"]), silent, None, now=T0 + 10)
    assert lifecycle.judge(_fleet(["c0", "c1"]), silent, None, now=T0 + 20) == calm
    three = _fleet(["c0", "c1", "c2"])
    joined = lifecycle.judge(three, silent, None, now=T0 + 30)
    assert joined.judgements["c2"].condition is Condition.NEVER_REPORTED
    unready = {**silent, "c1": ClusterStatus(cluster="c1", heartbeat=Heartbeat(
        time=isoformat(T0 + 25), interval_seconds=300, tolerance_seconds=480, livez=True))}
    moved = lifecycle.judge(three, unready, None, now=T0 + 40)
    assert moved.judgements["c1"].condition is Condition.NOT_READY and moved.changes
    # the evictions file the judgement starts from changed: judged again (a new outcome)
    tasks = lifecycle.judge(three, silent, {"evictions.yaml": b"tasks: [\n"}, now=T0 + 50)
    assert tasks is not lifecycle.judge(three, silent, {}, now=T0 + 60)


@pytest.mark.slow
def test_the_hub_flags_a_stopped_agent_after_the_tolerance_and_never_a_live_one(
        logged: Remote, kubesim, agents) -> None:
    names = [f"c{i}" for i in range(6)]
    fleet = _fleet(names)
    assert fleet.errors == ()
    sim, clock = kubesim(), FakeClock()
    start = clock.now()
    fleet_agents = {}
    for i, name in enumerate(names):
        publish_timing(logged, name, TIMING)
        fleet_agents[name] = agents(logged, sim, clock, cluster=name, seed=i, interval=300.0)
    stop_at = start + 5 * 300 + 17
    lifecycle = Lifecycle()
    reader = StatusReader(logged.git)
    rounds: list[tuple[float, dict[str, Condition]]] = []

    def hub_round(now: float) -> None:           # what the hub reads and judges each round
        # the hub's own reader: one for-each-ref a round, status.yaml parsed once per commit
        # (reading each cluster with status_of took two Git processes per cluster and round)
        statuses = dict(reader.read().statuses)
        judged = lifecycle.judge(fleet, statuses, None, now=now).judgements
        rounds.append((now, {n: judged[n].condition for n in names}))

    run_until(clock, fleet_agents, start + 14 * 300, every=hub_round, tick=20.0,
              stopped=lambda name, now: name == "c0" and now >= stop_at)

    later = [now for now, _ in rounds if now > start]
    assert len(later) > 200
    for now, judged in rounds:
        if now > start:                            # (the first round precedes every agent)
            assert all(judged[n] is Condition.READY for n in names[1:]), (now - start, judged)
    last = status_of(logged, "c0")
    assert last is not None and last.heartbeat is not None
    expires = parse_iso(last.heartbeat.time) + TIMING.tolerance
    assert stop_at - TIMING.longest_gap <= expires - TIMING.tolerance <= stop_at
    for now, judged in rounds:
        if now > start:
            expected = Condition.UNKNOWN if now > expires else Condition.READY
            assert judged["c0"] is expected, (now - start, expires - start, judged["c0"])
