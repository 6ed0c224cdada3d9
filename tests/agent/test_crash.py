"""Crash safety of a real agent process: SIGKILL mid-apply, state changed while it is down."""

from __future__ import annotations

from pathlib import Path

from tests.agent import crashloop
from tests.agent.conftest import Remote


def test_killed_agent_converges_exactly(remote: Remote, kubesim, tmp_path: Path) -> None:
    sim = kubesim()
    tally = crashloop.run(sim=sim, git=remote.git, url=remote.url, workdir=tmp_path, kills=3,
                          size=30, seed=7, latency=0.03)
    assert tally.problems == []
    assert tally.kills == 3 and tally.killed_mid_apply >= 1
    assert (tally.leaks, tally.missing, tally.stale, tally.foreign_touched) == (0, 0, 0, 0)
    assert tally.final_objects == 30 and tally.status == "Synced"
