"""A restarted agent judges a fetched cluster commit against the one it applied (kept in its
record in the cluster). When its repository lacks that applied commit, it is fetched by id; a
failure of that fetch (the Git server away, a 503) must not turn into "nothing to compare,
apply": the agent holds the last applied state, retries with the Git backoff, and judges once
the commit is known (review2 LOW 7). A commit the fleet repo no longer has at all ("not our
ref") is judged as before, never held forever.

The window is made real with `git daemon`: an agent restarted on a workdir that last saw an
older commit (the node's volume), while the fleet's Git server is down."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gitfleet.agent.agent import Agent
from gitfleet.clock import FakeClock
from gitfleet.kubesim import KubeSim
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.status import SyncResult
from tests.gitserver import GitDaemon
from tests.harness import Remote, person
from tests.shards.test_rollback_moves import Fleet


def _data(sim: KubeSim) -> dict[str, str]:
    return person(sim).get("v1", "ConfigMap", "bar", "a")["data"]  # type: ignore[no-any-return]


class Behind:
    """Cluster c1 applied "1" from workdir `old`, then "2" from another workdir (a restart)."""

    def __init__(self, remote: Remote, sim: KubeSim, make_agent: Callable[..., Agent],
                 old: Path) -> None:
        hub = SigningKey.generate()
        self.remote, self.sim, self.clock, self.old = remote, sim, FakeClock(), old
        self.fleet = Fleet(remote, hub)
        self._make = lambda workdir=None: make_agent(
            remote, sim, clock=self.clock, workdir=workdir,
            trusted_hub_keys=TrustedKeys.of(hub))
        self.before = self.fleet.publish("1")
        self._make(old).step()
        assert _data(sim) == {"v": "1"}
        self.after = self.fleet.publish("2")
        self.clock.advance(5)
        self._make().step()
        assert _data(sim) == {"v": "2"}

    def restart_on_old_workdir(self) -> Agent:
        self.clock.advance(5)
        agent = self._make(self.old)
        agent.step()
        return agent


def test_an_applied_commit_that_cannot_be_fetched_holds_the_last_applied_state(
        flaky_remote: tuple[Remote, GitDaemon], kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    remote, daemon = flaky_remote
    c = Behind(remote, kubesim(), make_agent, tmp_path / "node-volume")
    daemon.down()
    restarted = c.restart_on_old_workdir()   # sees "1" locally, cannot fetch "2" to compare
    assert _data(c.sim) == {"v": "2"}, "rolled back to a commit it could not judge"
    said = [e for e in restarted.last.errors if "not judged yet" in e]
    assert said and c.after[:12] in said[0], restarted.last.errors
    assert restarted.last.remote_fault
    # still down a step later: still held
    c.clock.advance(30)
    restarted.step()
    assert _data(c.sim) == {"v": "2"}
    # back, with the old commit pushed onto the branch meanwhile: the fetch is tried again
    # (not remembered as done), so the replay is refused
    c.fleet.push_back(c.before)
    daemon.up()
    c.clock.advance(30)
    restarted.step()
    assert _data(c.sim) == {"v": "2"}, "the replay was applied after the failed fetch"
    assert restarted.last.refused and "older than the applied commit" in restarted.last.refused


def test_once_the_applied_commit_is_fetched_the_agent_syncs_again(
        flaky_remote: tuple[Remote, GitDaemon], kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    remote, daemon = flaky_remote
    c = Behind(remote, kubesim(), make_agent, tmp_path / "node-volume")
    daemon.down()
    restarted = c.restart_on_old_workdir()
    assert _data(c.sim) == {"v": "2"}
    daemon.up()
    c.fleet.publish("3")
    c.clock.advance(30)
    restarted.step()
    assert _data(c.sim) == {"v": "3"}
    assert not restarted.last.errors, restarted.last.errors
    status = restarted.status_branch.load()
    assert status is not None and status.sync.result is SyncResult.SYNCED


def test_an_applied_commit_gone_from_the_fleet_repo_is_judged_as_before(
        flaky_remote: tuple[Remote, GitDaemon], kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    remote, _ = flaky_remote
    c = Behind(remote, kubesim(), make_agent, tmp_path / "node-volume")
    c.fleet.push_back(c.before)
    remote.git.run("reflog", "expire", "--expire=now", "--all")
    remote.git.run("gc", "--prune=now", "--quiet")
    assert remote.git.read_objects([c.after]).get(c.after) is None
    restarted = c.restart_on_old_workdir()   # Git answers "not our ref": nothing to hold for
    assert not [e for e in restarted.last.errors if "not judged yet" in e], restarted.last.errors


@pytest.mark.parametrize(("version", "allow"), [
    ("2", ""), ("0", ""), ("0", "uploadpack.allowReachableSHA1InWant"),
    ("0", "uploadpack.allowTipSHA1InWant")])
def test_a_replay_is_refused_whatever_protocol_the_fleet_repo_speaks(
        version: str, allow: str, flaky_remote: tuple[Remote, GitDaemon],
        kubesim: Callable[..., KubeSim], make_agent: Callable[..., Agent],
        tmp_path: Path) -> None:
    """Over protocol v0 Git refuses a fetch by an id no branch tip names ("unadvertised
    object"), or, on a server that lets clients ask for ids (allowReachable/allowTipSHA1InWant,
    as hosted Git may), says "not our ref" for a commit it holds but no ref reaches: exactly
    the applied commit right after the branch was pushed back. Neither proves the commit gone,
    so the replay is never applied, and the status says what to change on the server. Over v2
    the commit is fetched and the replay refused. (Found by the audit: taking either answer as
    "gone" applied the replay.) v0 is set in the agent's own repository, as a server or proxy
    that drops the Git-Protocol header forces it."""
    remote, _ = flaky_remote
    c = Behind(remote, kubesim(), make_agent, tmp_path / "node-volume")   # applied "2"
    c.fleet.push_back(c.before)                                            # branch back at "1"
    if allow:
        remote.git.run("config", allow, "true")
    subprocess.run(["git", "config", "--file", str(c.old / "config"), "protocol.version",
                    version], check=True)
    restarted = c.restart_on_old_workdir()   # has "1", lacks "2" (applied, in its record)
    assert _data(c.sim) == {"v": "2"}, f"the replay was applied (protocol v{version} {allow})"
    if version == "2":
        assert restarted.last.refused and "older than the applied commit" in \
            restarted.last.refused
    else:
        said = [e for e in restarted.last.errors if "not judged yet" in e]
        assert said and "serve protocol v2" in said[0], restarted.last.errors
