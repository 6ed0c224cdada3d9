"""Rollback protection survives status moves: a restarted agent (new workdir) judges a fetched
cluster commit against the newest applied record wherever its status has lived, found through
the link a move leaves in the fleet repo; a crash between that link and the new place's first
write converges. The fleet repo is served by `git daemon`, the status repositories by nginx +
`git http-backend`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitfleet.agent.agent import Agent
from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.clock import FakeClock
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.status import ClusterStatus, SyncResult
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import Remote, person
from tests.shards.servers import StatusHttp, serving

CLUSTER_REF = Branches().cluster("c1")
STATUS_REF = Branches().status("c1")
MOVED_TRAILER = "Gitfleet-Status-Moved-To"     # the link a move leaves in the fleet repo


@pytest.fixture
def status_http(tmp_path: Path) -> Iterator[StatusHttp]:
    with serving(tmp_path, "status-a.git", "status-b.git") as srv:
        yield srv


class Fleet:
    """The hub's side, by hand: signed cluster commits, and pushing an old one back."""

    def __init__(self, remote: Remote, hub: SigningKey) -> None:
        self.remote, self.hub = remote, hub

    def publish(self, value: str, status_repository: str = "") -> str:
        files = description_files("default", "app", [configmap("a", "bar", {"v": value})])
        files["cluster.yaml"] = b"name: c1\nsyncMode: Pull\n" + (
            f"statusRepository: {status_repository}\n".encode() if status_repository else b"")
        self.remote.git.signer = self.hub
        try:
            return publish(self.remote.git, "c1", files)
        finally:
            self.remote.git.signer = None

    def push_back(self, old: str) -> None:
        """Someone with push access replays an older hub-signed commit (or puts the hub's
        own tip back)."""
        tip = self.remote.git.resolve(CLUSTER_REF)
        self.remote.git.update_refs([RefUpdate(CLUSTER_REF, old, tip)])


def _data(sim: KubeSim) -> dict[str, str]:
    return person(sim).get("v1", "ConfigMap", "bar", "a")["data"]  # type: ignore[no-any-return]


def _status(git: Git) -> ClusterStatus:
    raw = git.read_blob(STATUS_REF, "status.yaml")
    assert raw is not None
    return ClusterStatus.from_yaml(raw)


def _link(git: Git) -> str:
    """The place the fleet repo's status branch links to ("" when its tip is no link)."""
    out = git.run("log", "-1", f"--format=%(trailers:key={MOVED_TRAILER},valueonly)",
                  STATUS_REF).decode().strip()
    return out


def _moved_once(fleet: Fleet, running: Agent, clock: FakeClock, a_url: str) -> tuple[str, str]:
    """The hub publishes "1" and `running` applies it; then "2" moves the status to `a_url`
    and `running` applies that: (the commit before the move, the commit of the move)."""
    before = fleet.publish("1")
    running.step()
    moved = fleet.publish("2", a_url)
    clock.advance(5)
    running.step()
    return before, moved


def test_a_restarted_agent_refuses_a_replay_after_a_move(
        tmp_path: Path, served_remote: Remote, status_http: StatusHttp,
        kubesim: Callable[..., KubeSim], make_agent: Callable[..., Agent]) -> None:
    hub, own = SigningKey.generate(), SigningKey.generate()    # the agent signs its status
    fleet, sim, clock = Fleet(served_remote, hub), kubesim(), FakeClock()
    a_url = status_http.url("status-a.git")
    a = Git(tmp_path / "repos" / "status-a.git")

    def agent() -> Agent:
        return make_agent(served_remote, sim, clock=clock, signing_key=own,
                          trusted_hub_keys=TrustedKeys.of(hub))

    running = agent()
    before, moved = _moved_once(fleet, running, clock, a_url)
    assert _data(sim) == {"v": "2"}
    assert _link(served_remote.git) == a_url
    assert _status(served_remote.git).sync.cluster_commit == moved, "the link holds the record"
    link = served_remote.git.resolve(STATUS_REF)

    fleet.push_back(before)       # its cluster.yaml names no status repository
    for attempt in range(2):      # the running agent, then one restarted with a new workdir
        clock.advance(5)
        one = running if attempt == 0 else agent()
        one.step()
        assert one.last.refused.endswith(f"older than the applied commit {moved[:12]} "
                                         "(an old state pushed back)"), one.last
        assert _data(sim) == {"v": "2"}
        status = _status(a)
        assert status.sync.result == SyncResult.REFUSED and status.sync.cluster_commit == moved
        assert served_remote.git.resolve(STATUS_REF) == link, "the refusal is said in place a"

    later = fleet.publish("3", a_url)      # the hub goes on: applied again
    clock.advance(5)
    again = agent()
    again.step()
    assert again.last.synced and _data(sim) == {"v": "3"}
    assert _status(a).sync.cluster_commit == later


def test_a_replay_is_refused_after_two_moves_and_back_home(
        tmp_path: Path, served_remote: Remote, status_http: StatusHttp,
        kubesim: Callable[..., KubeSim], make_agent: Callable[..., Agent]) -> None:
    hub = SigningKey.generate()
    fleet, sim, clock = Fleet(served_remote, hub), kubesim(), FakeClock()
    a_url, b_url = status_http.url("status-a.git"), status_http.url("status-b.git")
    b = Git(tmp_path / "repos" / "status-b.git")

    def agent() -> Agent:
        return make_agent(served_remote, sim, clock=clock, trusted_hub_keys=TrustedKeys.of(hub))

    commits = []
    for value, place in (("1", ""), ("2", a_url), ("3", b_url)):
        commits.append(fleet.publish(value, place))
        clock.advance(5)
        agent().step()                       # every step by a restarted agent
    assert _link(served_remote.git) == b_url and _status(b).sync.cluster_commit == commits[2]
    assert b.run("log", "--format=%s", STATUS_REF).decode().count("status moved") == 0
    assert "Status moved here from" in b.run("log", "-1", "--format=%B", STATUS_REF).decode()

    fleet.push_back(commits[1])              # names place a, which holds an older record
    clock.advance(5)
    one = agent()
    one.step()
    assert one.last.refused and _data(sim) == {"v": "3"}

    fleet.push_back(commits[2])              # the hub's own tip again (it writes on top)
    home = fleet.publish("4")                # moved back to the fleet repo
    clock.advance(5)
    agent().step()
    assert _link(served_remote.git) == "" and _status(served_remote.git).sync.cluster_commit == home
    fleet.push_back(commits[2])              # names place b
    clock.advance(5)
    two = agent()
    two.step()
    assert two.last.refused and _data(sim) == {"v": "4"}
    assert _status(served_remote.git).sync.result == SyncResult.REFUSED
    assert _status(b).sync.cluster_commit == commits[2], "place b is left as it was"


def test_a_crash_between_the_link_and_the_new_place_converges(
        tmp_path: Path, served_remote: Remote, status_http: StatusHttp,
        kubesim: Callable[..., KubeSim], make_agent: Callable[..., Agent]) -> None:
    hub = SigningKey.generate()
    fleet, sim, clock = Fleet(served_remote, hub), kubesim(), FakeClock()
    a_url = status_http.url("status-a.git")
    a = Git(tmp_path / "repos" / "status-a.git")
    hook = tmp_path / "repos" / "status-a.git" / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refused by the test' >&2\nexit 1\n")
    hook.chmod(0o755)                        # place a takes no push: the agent dies there

    def agent() -> Agent:
        return make_agent(served_remote, sim, clock=clock, trusted_hub_keys=TrustedKeys.of(hub))

    before = fleet.publish("1")
    agent().step()
    moved = fleet.publish("2", a_url)
    clock.advance(5)
    dying = agent()
    dying.step()
    assert any("status" in e for e in dying.last.errors), dying.last
    assert _data(sim) == {"v": "2"} and a.resolve(STATUS_REF) is None
    assert _link(served_remote.git) == a_url
    link = served_remote.git.resolve(STATUS_REF)

    fleet.push_back(before)
    hook.unlink()
    clock.advance(5)
    restarted = agent()
    restarted.step()
    assert restarted.last.refused and _data(sim) == {"v": "2"}
    status = _status(a)
    assert status.sync.result == SyncResult.REFUSED and status.sync.cluster_commit == moved
    assert a.run("rev-parse", f"{STATUS_REF}^").decode().strip() == link, \
        "place a starts on top of the link"
    assert "Status moved here from" in a.run("log", "-1", "--format=%B", STATUS_REF).decode()
    assert served_remote.git.resolve(STATUS_REF) == link


def test_a_restarted_agent_without_trusted_keys_carries_the_history_when_it_moves(
        tmp_path: Path, served_remote: Remote, status_http: StatusHttp,
        kubesim: Callable[..., KubeSim], make_agent: Callable[..., Agent]) -> None:
    fleet, sim, clock = Fleet(served_remote, SigningKey.generate()), kubesim(), FakeClock()
    a_url = status_http.url("status-a.git")
    a = Git(tmp_path / "repos" / "status-a.git")
    fleet.publish("1")
    make_agent(served_remote, sim, clock=clock).step()
    old_tip = served_remote.git.resolve(STATUS_REF)
    assert old_tip
    moved = fleet.publish("2", a_url)
    clock.advance(5)
    make_agent(served_remote, sim, clock=clock).step()       # restarted, then moved
    assert _status(a).sync.cluster_commit == moved
    history = a.run("log", "--format=%H", STATUS_REF).decode().split()
    assert old_tip in history, "the old status history came along"
    assert "Status moved here from" in a.run("log", "-1", "--format=%B", STATUS_REF).decode()


def test_a_replay_is_refused_while_the_status_repository_is_down(
        tmp_path: Path, served_remote: Remote, status_http: StatusHttp,
        kubesim: Callable[..., KubeSim], make_agent: Callable[..., Agent]) -> None:
    hub = SigningKey.generate()
    fleet, sim, clock = Fleet(served_remote, hub), kubesim(), FakeClock()
    a_url = status_http.url("status-a.git")
    a = Git(tmp_path / "repos" / "status-a.git")

    def agent() -> Agent:
        return make_agent(served_remote, sim, clock=clock, trusted_hub_keys=TrustedKeys.of(hub))

    running = agent()
    before, moved = _moved_once(fleet, running, clock, a_url)
    fleet.push_back(before)
    in_a = a.resolve(STATUS_REF)
    status_http.down()                       # the status repository is away
    try:
        clock.advance(5)
        restarted = agent()
        restarted.step()
        assert restarted.last.refused.endswith(f"older than the applied commit {moved[:12]} "
                                               "(an old state pushed back)"), restarted.last
        assert _data(sim) == {"v": "2"}
        assert a.resolve(STATUS_REF) == in_a
    finally:
        status_http.up()
    clock.advance(60)
    restarted.step()
    assert restarted.last.refused and _data(sim) == {"v": "2"}
    assert _status(a).sync.result == SyncResult.REFUSED, "said in place a once it is back"
    assert _status(a).sync.cluster_commit == moved


def test_a_link_the_agent_did_not_sign_is_not_followed(
        tmp_path: Path, served_remote: Remote, status_http: StatusHttp,
        kubesim: Callable[..., KubeSim], make_agent: Callable[..., Agent]) -> None:
    hub, own = SigningKey.generate(), SigningKey.generate()
    fleet, sim, clock = Fleet(served_remote, hub), kubesim(), FakeClock()
    a_url = status_http.url("status-a.git")
    a = Git(tmp_path / "repos" / "status-a.git")
    fleet.publish("1")
    make_agent(served_remote, sim, clock=clock, signing_key=own,
               trusted_hub_keys=TrustedKeys.of(hub)).step()
    tip = served_remote.git.resolve(STATUS_REF)
    raw = served_remote.git.read_blob(STATUS_REF, "status.yaml")
    assert tip and raw
    for signer in (own, None):       # the agent's own link is followed; a stranger's is not
        served_remote.git.signer = signer
        link = served_remote.git.commit(
            served_remote.git.write_tree({"status.yaml": raw}), [tip],
            f"c1: status moved\n\n{MOVED_TRAILER}: {a_url}\n", when=0)
        served_remote.git.signer = None
        served_remote.git.update_refs(
            [RefUpdate(STATUS_REF, link, served_remote.git.resolve(STATUS_REF))])
        git = init_repo(tmp_path / f"reader-{signer is not None}.git", bare=True)
        git.signer = own
        branch = StatusBranch(git, served_remote.url, Branches(), "c1")
        branch.load()
        assert branch.url == (a_url if signer else served_remote.url)
        assert a.resolve(STATUS_REF) is None, "only read"


def test_a_commit_pushed_on_top_of_the_status_does_not_wipe_the_record(
        tmp_path: Path, served_remote: Remote, status_http: StatusHttp,
        kubesim: Callable[..., KubeSim], make_agent: Callable[..., Agent]) -> None:
    hub, own = SigningKey.generate(), SigningKey.generate()
    fleet, sim, clock = Fleet(served_remote, hub), kubesim(), FakeClock()
    a_url = status_http.url("status-a.git")

    def agent() -> Agent:
        return make_agent(served_remote, sim, clock=clock, signing_key=own,
                          trusted_hub_keys=TrustedKeys.of(hub))

    running = agent()
    before, moved = _moved_once(fleet, running, clock, a_url)
    link = served_remote.git.resolve(STATUS_REF)
    assert link
    stranger = served_remote.git.commit(      # unsigned, over the link: no link, no status
        served_remote.git.write_tree({"status.yaml": b"cluster: c1\n"}), [link], "x\n", when=0)
    served_remote.git.update_refs([RefUpdate(STATUS_REF, stranger, link)])
    fleet.push_back(before)
    clock.advance(5)
    restarted = agent()
    restarted.step()
    assert restarted.last.refused.endswith(f"older than the applied commit {moved[:12]} "
                                           "(an old state pushed back)"), restarted.last
    assert _data(sim) == {"v": "2"}
