"""fleet.yaml's heartbeat settings reach each agent through its cluster.yaml (the real hub
renders it), the agent heartbeats by them and declares them; `--heartbeat-interval` is the
fallback before the first cluster branch and, when given, overrides the fleet's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitfleet.clock import FakeClock
from gitfleet.layout import Branches
from gitfleet.wire.heartbeat import HeartbeatTiming
from tests.agent.fleetstate import publish
from tests.harness import Remote, clone, gitfleet_here, push, status_of
from tests.heartbeat.conftest import heartbeat_times, publish_timing, run_until

FLEET = """apiVersion: gitfleet.io/v1alpha1
kind: FleetSettings
heartbeat:
  interval: 7m
  jitter: 20%
  tolerance: 20m
"""

CLUSTER = """apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata:
  name: c1
spec:
  clusterId: 11111111-1111-4111-8111-111111111111
"""


def _declared(remote: Remote, cluster: str = "c1") -> tuple[int, int]:
    status = status_of(remote, cluster)
    assert status is not None and status.heartbeat is not None
    return status.heartbeat.interval_seconds, status.heartbeat.tolerance_seconds


@pytest.mark.slow
def test_fleet_yaml_settings_reach_the_agent_through_cluster_yaml(
        logged: Remote, kubesim, agents, tmp_path: Path) -> None:
    work = clone(logged.git.path, tmp_path / "work")
    push(work, "fleet: heartbeats every 7 minutes", {"fleet.yaml": FLEET,
                                                     "clusters/c1.yaml": CLUSTER})
    done = gitfleet_here("hub", "--repo", str(logged.git.path), "--once", "--no-fleet-status",
                         "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    shipped = yaml.safe_load(logged.git.read_blob(Branches().cluster("c1"), "cluster.yaml"))
    assert shipped["agent"] == {"heartbeatInterval": "7m", "heartbeatJitter": "20%",
                                "heartbeatTolerance": "20m"}

    clock = FakeClock()
    agent = agents(logged, kubesim(), clock)        # no --heartbeat-interval: the fleet's
    start = clock.now()
    run_until(clock, {"c1": agent}, start + 6 * 420)
    assert _declared(logged) == (420, 1200)
    times = heartbeat_times(logged, "c1")
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert times[0] == start and len(gaps) >= 5
    assert 0 < gaps[0] <= 420                        # the first: a random phase
    assert all(420 * 0.8 <= g <= 420 * 1.2 for g in gaps[1:]), gaps


def test_the_flag_is_the_fallback_before_the_first_branch_and_else_overrides(
        logged: Remote, kubesim, agents) -> None:
    clock, sim = FakeClock(), kubesim()
    fleet = HeartbeatTiming(interval=420, jitter=0.2, tolerance=1200)
    waiting = agents(logged, sim, clock, cluster="c1")
    waiting.step()                                   # no cluster branch yet: 60 s, 3 minutes
    assert _declared(logged, "c1") == (60, 180)
    publish_timing(logged, "c1", fleet)
    run_until(clock, {"c1": waiting}, clock.now() + 120)   # from its next heartbeat on
    assert _declared(logged, "c1") == (420, 1200)

    publish_timing(logged, "c2", fleet)
    own = agents(logged, sim, clock, cluster="c2", heartbeat_interval=30.0)
    own.step()                                       # its own interval: judged by 3 of them
    assert _declared(logged, "c2") == (30, 90)


def test_an_agent_mapping_it_cannot_read_is_said(logged: Remote, kubesim, agents,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    publish(logged.git, "c1", {"cluster.yaml": b"name: c1\nagent:\n  heartbeatInterval: 5m\n"
                                               b"  heartbeatJitter: 10%\n"
                                               b"  heartbeatTolerance: 15m\n  colour: red\n"})
    agent = agents(logged, kubesim(), FakeClock())
    agent.step()
    said = [r.fields["errors"] for r in caplog.records  # type: ignore[attr-defined]
            if "read with errors" in r.getMessage()]
    assert len(said) == 1 and "agent: unknown field(s) colour" in said[0], said
    assert _declared(logged) == (60, 180)            # the fallback, not a guess
    agent.step()
    assert len([r for r in caplog.records if "read with errors" in r.getMessage()]) == 1
