"""Rollback protection of a restarted agent must not rest on its status branch alone (review2's
repros, then anchor's). Whoever can push an old hub-signed commit back onto the cluster branch
(the threat the protection is for) can, with the same push access to the fleet repo, put a
commit on top of the agent's status branch, remove it or force-push an orphan over it; the
agent's own record in its cluster (the inventory record's `applied` and journal) still says
which cluster commit was applied, so the replay is refused. A sync killed at any write keeps
the commit it was applying in that record, and never names it applied before it ran through."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gitfleet.agent.agent import Agent
from gitfleet.agent.inventory import Intent, Inventory
from gitfleet.agent.records import InventoryRecord
from gitfleet.clock import FakeClock
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import RefUpdate
from gitfleet.state.signing import SigningKey, TrustedKeys
from tests.harness import Remote, person
from tests.inventory.crashkube import Crash, CrashKube
from tests.inventory.test_record_crash import _entry, _inventory, _record
from tests.shards.test_rollback_moves import Fleet

STATUS_REF = Branches().status("c1")


def _data(sim: KubeSim) -> dict[str, str]:
    return person(sim).get("v1", "ConfigMap", "bar", "a")["data"]  # type: ignore[no-any-return]


class Applied:
    """A fleet whose cluster c1 applied "1" then "2" (each by a new agent, as restarts do)."""

    def __init__(self, remote: Remote, sim: KubeSim, make_agent: Callable[..., Agent], *,
                 own: SigningKey | None = None) -> None:
        hub = SigningKey.generate()
        self.remote, self.sim, self.clock = remote, sim, FakeClock()
        self.fleet = Fleet(remote, hub)
        self._make = lambda: make_agent(remote, sim, clock=self.clock, signing_key=own,
                                        trusted_hub_keys=TrustedKeys.of(hub))
        self.before = self.fleet.publish("1")
        self.agent().step()
        self.after = self.fleet.publish("2")
        self.clock.advance(5)
        self.agent().step()
        assert _data(sim) == {"v": "2"}

    def agent(self) -> Agent:
        return self._make()

    def replay_on_restart(self) -> Agent:
        """Push the old commit back and start a new agent: what it did."""
        self.fleet.push_back(self.before)
        self.clock.advance(5)
        restarted = self.agent()
        restarted.step()
        return restarted


def test_a_stranger_commit_on_the_status_branch_does_not_erase_the_applied_record(
        remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    c = Applied(remote, kubesim(), make_agent, own=SigningKey.generate())   # signs status
    # someone with push access: a commit on top of the agent's status (not signed by it) ...
    tip = remote.git.resolve(STATUS_REF)
    assert tip
    raw = remote.git.read_blob(STATUS_REF, "status.yaml")
    assert raw is not None
    stranger = remote.git.commit(remote.git.write_tree({"status.yaml": raw.replace(
        b"clusterCommit:", b"clusterCommit: 0000000000000000000000000000000000000000\n  x:")}),
        [tip], "c1: status\n", when=0)
    remote.git.update_refs([RefUpdate(STATUS_REF, stranger, tip)])
    restarted = c.replay_on_restart()                          # ... and the replay
    assert _data(c.sim) == {"v": "2"}, "a restarted agent applied the replay"
    assert restarted.last.refused, restarted.last


def test_a_removed_status_branch_does_not_erase_the_applied_record(
        remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    c = Applied(remote, kubesim(), make_agent)
    tip = remote.git.resolve(STATUS_REF)
    assert tip
    remote.git.run("update-ref", "-d", STATUS_REF, tip)       # the status branch removed
    c.replay_on_restart()                                      # and the replay
    assert _data(c.sim) == {"v": "2"}, "a restarted agent applied the replay"


def test_a_status_moved_before_the_upgrade_still_protects_a_restarted_agent(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    """A cluster whose status moved with an agent older than the link: the fleet repo holds
    its last status from before the move, no link (as that agent left it)."""
    from gitfleet.state.git import init_repo
    hub = SigningKey.generate()
    fleet, sim, clock = Fleet(remote, hub), kubesim(), FakeClock()
    init_repo(tmp_path / "status-a.git", bare=True)
    a_url = (tmp_path / "status-a.git").as_uri()

    def agent() -> Agent:
        return make_agent(remote, sim, clock=clock, trusted_hub_keys=TrustedKeys.of(hub))

    running = agent()
    fleet.publish("1", a_url)
    running.step()
    last_home = fleet.publish("2")           # back home for one commit, then moved again
    clock.advance(5)
    running.step()
    home_tip = remote.git.resolve(STATUS_REF)
    fleet.publish("3", a_url)
    clock.advance(5)
    running.step()
    fleet.publish("4", a_url)
    clock.advance(5)
    running.step()
    assert _data(sim) == {"v": "4"}
    link = remote.git.resolve(STATUS_REF)
    assert link != home_tip
    # the older agent left no link: the fleet repo's status is the one from before the move
    remote.git.update_refs([RefUpdate(STATUS_REF, home_tip, link)])
    fleet.push_back(last_home)               # a replay of the last commit applied at home
    clock.advance(5)
    upgraded = agent()
    upgraded.step()
    assert _data(sim) == {"v": "4"}, "the upgraded, restarted agent applied the replay"


def test_fifty_one_stranger_commits_do_not_erase_the_applied_record(
        remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    """The walk back under a foreign tip is bounded (50 first parents): a fast-forward push of
    51 commits needs no force and no more rights than one."""
    c = Applied(remote, kubesim(), make_agent, own=SigningKey.generate())
    tip = remote.git.resolve(STATUS_REF)
    raw = remote.git.read_blob(STATUS_REF, "status.yaml")
    assert tip and raw is not None
    top = tip
    tree = remote.git.write_tree({"status.yaml": raw})
    for i in range(51):
        top = remote.git.commit(tree, [top], f"c1: status {i}\n", when=i)
    remote.git.update_refs([RefUpdate(STATUS_REF, top, tip)])
    c.replay_on_restart()
    assert _data(c.sim) == {"v": "2"}, "a restarted agent applied the replay"


def test_an_orphan_forced_over_the_status_branch_naming_the_replay_does_not_win(
        remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    """The strongest form: the status branch replaced by an orphan whose status says the
    replayed commit was the one applied (no signing key: the agent reads it as its own)."""
    c = Applied(remote, kubesim(), make_agent)
    tip = remote.git.resolve(STATUS_REF)
    raw = remote.git.read_blob(STATUS_REF, "status.yaml")
    assert tip and raw is not None and c.after.encode() in raw
    orphan = remote.git.commit(remote.git.write_tree({"status.yaml": raw.replace(
        c.after.encode(), c.before.encode())}), [], "c1: status\n", when=0)
    remote.git.update_refs([RefUpdate(STATUS_REF, orphan, tip)])   # a force-push
    restarted = c.replay_on_restart()
    assert _data(c.sim) == {"v": "2"}, "a restarted agent applied the replay"
    assert "older than the applied commit" in restarted.last.refused, restarted.last

    def applied() -> str:   # the record in the cluster, as a person reads it
        return InventoryRecord(person(c.sim), namespace="gitfleet-system",
                               name="gitfleet-inventory").read().applied

    assert applied() == c.after
    newer = c.fleet.publish("3")            # the hub's next commit is applied as ever
    c.clock.advance(5)
    restarted.step()
    assert _data(c.sim) == {"v": "3"} and applied() == newer


B, C = "b" * 40, "c" * 40


@pytest.mark.parametrize("size", [3, 150], ids=["inline", "sharded"])
def test_a_sync_killed_at_any_write_keeps_the_commit_it_was_applying(size: int) -> None:
    """The sync's journal names the cluster commit it applies; its last write names it
    applied. Killed at every write in turn: the record names the new commit from the
    journal's first write on, calls it applied only with the sync's entries written (or a
    journal still open), and the restarted sync converges."""
    kube = CrashKube()
    _record(kube).write(_inventory([_entry(i) for i in range(size)]).with_applied(B))
    base = _record(kube).read()
    assert base.applied == B and base.commits == (B,)
    changed = [_entry(i, 2) for i in range(0, size, 3)]
    journal = base.with_entries(e.as_pending() for e in changed).with_intent(
        Intent("s" * 40, apply=len(changed))).applying(C)
    done = journal.with_entries(changed).with_intent(None).with_applied(C)
    snapshot = kube.snapshot()
    record = _record(kube)
    record.read()
    writes = record.write(journal) + record.write(done)
    assert writes >= 2 and _record(kube).read() == done
    for crash_at in range(writes):
        kube.restore(snapshot)
        record = _record(kube)
        record.read()
        kube.arm(crash_at)
        with pytest.raises(Crash):
            record.write(journal)
            record.write(done)
        kube.arm(None)
        got = _record(kube).read()
        assert C in got.commits or (crash_at == 0 and got == base), crash_at
        if got.applied == C:
            assert got.interrupted or got == done, crash_at   # never half done called done
        restarted = _record(kube)
        restarted.write(done)
        assert _record(kube).read() == done


def test_a_record_without_the_applied_commit_reads_as_before() -> None:
    """Records written by earlier agents (no `applied`, no `clusterCommit`) read unchanged,
    and the index of a sharded record still names its shards with `applied` in it."""
    old = Inventory.from_text('{"version":2,"objects":[],"intent":{"stateCommit":"s",'
                              '"apply":1,"delete":0}}')
    assert old.applied == "" and old.commits == () and old.intent == Intent("s", apply=1)
    kube = CrashKube()
    sharded = _inventory([_entry(i) for i in range(150)]).with_applied(C)
    record = _record(kube)
    record.write(sharded)
    assert record.layout.count > 1
    again = _record(kube)
    assert again.read() == sharded and again.layout == record.layout
