"""The status branch: readable change commits, heartbeats that do not grow history."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.clock import FakeClock, isoformat
from gitfleet.layout import Branches
from gitfleet.state.git import init_repo
from gitfleet.wire.status import (
    Change,
    ClusterStatus,
    DescriptionStatus,
    Heartbeat,
    ObjectStatus,
    Phase,
    SyncResult,
    SyncStatus,
)
from tests.harness import Remote


def _history(remote: Remote, cluster: str) -> list[str]:
    ref = Branches().status(cluster)
    return remote.git.run("log", "--format=%s", ref).decode().splitlines()


def _status(time: str, phase: Phase = Phase.SUCCESS) -> ClusterStatus:
    obj = ObjectStatus("v1", "ConfigMap", "bar", "cfg", Change.CREATED)
    return ClusterStatus(
        cluster="c1", heartbeat=Heartbeat(time=time, interval_seconds=1800, healthz=True),
        sync=SyncStatus(cluster_commit="a" * 40, state_commit="b" * 40, time=time,
                        result=SyncResult.SYNCED),
        descriptions=(DescriptionStatus("default", "web", phase, objects=(obj,)),))


@pytest.mark.slow
def test_a_day_of_quiet_heartbeats_keeps_history_length(tmp_path: Path, remote: Remote) -> None:
    clock = FakeClock()
    branch = StatusBranch(init_repo(tmp_path / "agent.git"), remote.url, Branches(), "c1")
    first = _status(isoformat(clock.now()))
    branch.write(first, when=clock.now())
    every = 1800  # a heartbeat interval of 30 minutes keeps the test short; the rule is the same
    clock.advance(every)
    branch.write(replace(first, heartbeat=replace(first.heartbeat, time=isoformat(clock.now()))),
                 when=clock.now())
    length = len(_history(remote, "c1"))
    for _ in range(24 * 3600 // every):
        clock.advance(every)
        hb = replace(first.heartbeat, time=isoformat(clock.now()))
        branch.write(replace(first, heartbeat=hb), when=clock.now())
    assert len(_history(remote, "c1")) == length == 2
    tip = remote.git.read_blob(Branches().status("c1"), "status.yaml")
    assert ClusterStatus.from_yaml(tip).heartbeat.time == isoformat(clock.now())

    changed = replace(_status(isoformat(clock.now()), Phase.DEGRADED))
    branch.write(changed, when=clock.now())
    log = _history(remote, "c1")
    assert len(log) == 3 and "default/web: Success -> Degraded" in log[0]


def test_restarted_writer_continues_the_branch(tmp_path: Path, remote: Remote) -> None:
    one = StatusBranch(init_repo(tmp_path / "a.git"), remote.url, Branches(), "c1")
    one.write(_status("2026-01-01T00:00:00Z"), when=0)
    two = StatusBranch(init_repo(tmp_path / "b.git"), remote.url, Branches(), "c1")
    assert two.load() == _status("2026-01-01T00:00:00Z")
    two.write(_status("2026-01-01T00:01:00Z"), when=60)
    one.write(_status("2026-01-01T00:02:00Z", Phase.FAILURE), when=120)  # stale tip: re-reads
    assert len(_history(remote, "c1")) == 3
