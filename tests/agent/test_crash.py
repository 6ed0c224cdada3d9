"""Crash safety of a real agent process: SIGKILL mid-apply, state changed while it is down."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.agent.desired import parse_cluster_tree
from gitfleet.agent.inventory import Intent
from gitfleet.agent.marks import managed_body
from gitfleet.wire.status import Change, SyncResult
from tests.agent import crashloop
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import Remote, person, status_of


@pytest.mark.slow
def test_killed_agent_converges_exactly(remote: Remote, kubesim, tmp_path: Path) -> None:
    sim = kubesim()
    tally = crashloop.run(sim=sim, git=remote.git, url=remote.url, workdir=tmp_path, kills=3,
                          size=30, seed=7, latency=0.03)
    assert tally.problems == []
    assert tally.kills == 3 and tally.killed_mid_apply >= 1
    assert (tally.leaks, tally.missing, tally.stale, tally.foreign_touched) == (0, 0, 0, 0)
    assert tally.final_objects == 30 and tally.status == "Synced"


def test_interrupted_sync_is_resumed_from_its_journal(remote: Remote, kubesim, make_agent
                                                      ) -> None:
    """What a sync killed part way leaves (some objects applied, some deleted, the journal
    written, no final record) is put right by the next sync, whatever the hashes say."""
    def state(**objects: str) -> dict[str, bytes]:
        return description_files("default", "web", [configmap(n, "bar", {"v": v})
                                                    for n, v in objects.items()])

    sim = kubesim()
    agent = make_agent(remote, sim)
    publish(remote.git, "c1", state(a="1", b="1", c="1"))
    agent.step()
    # A sync of {a: 2, d: 2} killed part way: it wrote its journal, configured a, created d,
    # deleted b, and never recorded any of it.
    killed = state(a="2", d="2")
    target = parse_cluster_tree(killed, cluster_commit="k" * 40)
    engine = agent.engine
    journal = engine.inventory.with_entries(
        [e.as_pending() for e in engine.inventory.entries.values()]).with_intent(
        Intent("k" * 40, apply=2, delete=2))
    engine.record.write(journal)
    for name in ("a", "d"):
        obj = next(o for o in target.objects.values() if o.ref.name == name)
        agent.kube.apply(managed_body(obj, "c1", "k" * 40))
    agent.kube.delete("v1", "ConfigMap", "bar", "b")

    # Restarted, with the state back at a's and b's first content: a's hash matches its old
    # inventory entry, but a holds the killed sync's content; b is gone; d and c must go.
    publish(remote.git, "c1", state(a="1", b="1"))
    restarted = make_agent(remote, sim)
    restarted.step()
    live = {o["metadata"]["name"]: o["data"] for o in person(sim).list_objects(
        "v1", "ConfigMap", namespace="bar").items}
    assert live == {"a": {"v": "1"}, "b": {"v": "1"}}
    status = status_of(remote)
    assert status.sync.result is SyncResult.SYNCED and status.drift == ()
    changes = {o.name: o.change for o in status.descriptions[0].objects}
    assert changes == {"a": Change.CONFIGURED, "b": Change.CREATED}
    assert sorted(o.name for o in status.pruned) == ["c", "d"]
    assert not restarted.engine.inventory.interrupted
