"""An agent with tip documents asks Git only when its branch moved.

Real parts: the cluster branch is served by `git daemon --verbose` (every fetch is a logged
upload-pack request, counted), the tip documents are written by the hub's TipFolder and served
by nginx (ETag, 304), the agent applies to kubesim. The agent steps on a fake clock and the tip
poller is driven one poll at a time, so every count is exact.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gitfleet.agent.agent import Agent
from gitfleet.agent.tips import TipSettings, TipWatcher, document_url
from gitfleet.errors import InputError
from gitfleet.hub.tips import TipFolder
from gitfleet.layout import Branches
from gitfleet.state.git import init_repo
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.status import SyncResult
from gitfleet.wire.tips import Tip, encode
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import Remote, person, status_of
from tests.tips.servers import CountingGitDaemon, StaticSite

REF = Branches().cluster("c1")


@dataclass
class Fleet:
    """A served fleet repository, a served folder of tip documents and the hub's key."""

    remote: Remote
    daemon: CountingGitDaemon
    site: StaticSite
    folder: Path
    key: SigningKey = field(default_factory=SigningKey.generate)

    def render(self, value: str, *, signer: SigningKey | None | str = "hub",
               tip: bool = True) -> str:
        """A new cluster-branch commit (signed by the hub unless told), and its tip document."""
        files = description_files("default", "app", [configmap("a", "bar", {"v": value})])
        self.remote.git.signer = self.key if signer == "hub" else signer  # type: ignore[assignment]
        try:
            commit = publish(self.remote.git, "c1", files)
        finally:
            self.remote.git.signer = None
        if tip:
            self.tip(commit)
        return commit

    def tip(self, commit: str, signer: SigningKey | None | str = "hub",
            plans: tuple[str, ...] | None = None) -> None:
        key = self.key if signer == "hub" else signer
        doc = encode(Tip(cluster="c1", ref=REF, commit=commit, state="", issued_at=1e9,
                         plans=plans), key)  # type: ignore[arg-type]
        TipFolder(self.folder).write("c1", doc)       # as the hub writes it


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    base = tmp_path / "git"
    bare = init_repo(base / "fleet.git", bare=True)
    daemon = CountingGitDaemon(base, tmp_path / "daemon.log")
    folder = tmp_path / "tips"
    TipFolder(folder)
    site = StaticSite(folder, tmp_path / "nginx")
    daemon.up()
    try:
        site.up()
        try:
            yield Fleet(Remote(git=bare, url=daemon.url("fleet.git"), base=base), daemon,
                        site, folder)
        finally:
            site.down()
    finally:
        daemon.down()


class Ticks:
    """The poller's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _watcher(fleet: Fleet, agent_box: list[Agent], *, url: str | None = None,
             ticks: Ticks | None = None, woken: list[str] | None = None) -> TipWatcher:
    def wake() -> None:
        if woken is not None:
            woken.append("wake")
        agent_box[0].wake()

    return TipWatcher(TipSettings(url=url or fleet.site.url, cluster="c1", ref=REF,
                                  interval=10.0, wait=0, safety=600.0, safety_jitter=0.0),
                      trusted=TrustedKeys.of(fleet.key),
                      last_fetched=lambda: agent_box[0].branch.last_fetched, wake=wake,
                      clock=ticks or Ticks())


def _applied(sim) -> str | None:  # type: ignore[no-untyped-def]
    obj = person(sim).get("v1", "ConfigMap", "bar", "a")
    return None if obj is None else str(obj["data"]["v"])


def _make(fleet: Fleet, tmp_path: Path, sim, ticks: Ticks | None = None,  # type: ignore[no-untyped-def]
          url: str | None = None, woken: list[str] | None = None
          ) -> tuple[Agent, TipWatcher]:
    from gitfleet.agent.agent import AgentSettings
    from gitfleet.clock import FakeClock
    from gitfleet.kube.client import KubeClient

    box: list[Agent] = []
    watcher = _watcher(fleet, box, url=url, ticks=ticks, woken=woken)
    agent = Agent(AgentSettings(repo_url=fleet.remote.url, cluster="c1",
                                workdir=tmp_path / "agent", interval=10.0,
                                progress_interval=0.1,
                                trusted_hub_keys=TrustedKeys.of(fleet.key)),
                  KubeClient(sim.api_client()), clock=FakeClock(), branch_hint=watcher.hint)
    box.append(agent)
    return agent, watcher


@pytest.fixture
def made(tmp_path: Path) -> Iterator[list[Agent]]:
    agents: list[Agent] = []
    yield agents
    for agent in agents:
        agent.stop()
        agent.close()


def test_an_agent_whose_tip_does_not_move_makes_no_git_request(
        fleet: Fleet, kubesim, tmp_path: Path, made: list[Agent]) -> None:
    sim = kubesim()
    first = fleet.render("1")
    agent, watcher = _make(fleet, tmp_path, sim)
    made.append(agent)
    watcher.poll()
    assert watcher.tip == first and watcher.problem == ""
    agent.step()                                  # the first fetch: nothing fetched yet
    assert agent.last.synced and _applied(sim) == "1"
    agent.step()
    settled = fleet.daemon.fetches()
    for _ in range(5):
        watcher.poll()
        agent.step()
    assert fleet.daemon.fetches() == settled      # five rounds, not one Git request
    assert fleet.site.statuses()[-5:] == [304] * 5    # and five cheap 304s at the web server
    assert agent.last.commit == first and agent.last.synced


def test_a_changed_tip_is_fetched_and_applied_within_one_poll(
        fleet: Fleet, kubesim, tmp_path: Path, made: list[Agent]) -> None:
    sim = kubesim()
    fleet.render("1")
    woken: list[str] = []
    ticks = Ticks()
    agent, watcher = _make(fleet, tmp_path, sim, woken=woken, ticks=ticks)
    made.append(agent)
    watcher.poll()
    agent.step()
    agent.step()
    woken.clear()
    before = fleet.daemon.fetches()
    second = fleet.render("2")
    ticks.now += 10
    assert watcher.poll() == 0.0                   # one poll sees the new tip ...
    assert watcher.tip == second and woken == ["wake"]   # ... and wakes the agent's wait
    agent.step()
    assert fleet.daemon.fetches() == before + 1
    assert agent.last.commit == second and _applied(sim) == "2"
    assert 9.0 <= watcher.poll() <= 11.0           # a static store: 304, then the interval
    agent.step()
    assert fleet.daemon.fetches() == before + 1    # fetched once, then quiet again
    assert woken == ["wake"]


def test_an_unreachable_tip_document_falls_back_to_git_polling_and_back(
        fleet: Fleet, kubesim, tmp_path: Path, made: list[Agent],
        caplog: pytest.LogCaptureFixture) -> None:
    sim = kubesim()
    first = fleet.render("1")
    ticks = Ticks()
    agent, watcher = _make(fleet, tmp_path, sim, ticks=ticks)
    made.append(agent)
    watcher.poll()
    agent.step()
    fleet.site.down()                              # the tip server goes away
    with caplog.at_level(logging.WARNING, logger="gitfleet.agent.tips"):
        delays = [watcher.poll() for _ in range(3)]
    assert watcher.problem.startswith("tip server unreachable")
    assert [r.getMessage() for r in caplog.records].count(
        "tip documents unusable; polling Git every interval until they answer again") == 1
    assert 1.5 <= delays[0] <= 2.5 and 6 <= delays[2] <= 10     # backoff, with jitter
    before = fleet.daemon.fetches()
    second = fleet.render("2", tip=False)
    for _ in range(3):
        agent.step()                               # Git polling at the agent's interval
    assert fleet.daemon.fetches() == before + 3
    assert agent.last.commit == second and _applied(sim) == "2"

    fleet.tip(second)
    fleet.site.up()                                # back: tips are used again
    watcher.poll()
    assert watcher.problem == "" and watcher.tip == second
    settled = fleet.daemon.fetches()
    for _ in range(3):
        watcher.poll()
        agent.step()
    assert fleet.daemon.fetches() == settled
    del first


def test_the_safety_fetch_asks_git_even_while_the_tip_stands(
        fleet: Fleet, kubesim, tmp_path: Path, made: list[Agent]) -> None:
    sim = kubesim()
    fleet.render("1")
    ticks = Ticks()
    agent, watcher = _make(fleet, tmp_path, sim, ticks=ticks)
    made.append(agent)
    watcher.poll()
    agent.step()
    # a stuck tip server keeps serving the old document while the branch moves
    hidden = fleet.render("2", tip=False)
    watcher.poll()
    agent.step()
    before = fleet.daemon.fetches()
    ticks.now += 599
    agent.step()
    assert fleet.daemon.fetches() == before and _applied(sim) == "1"
    ticks.now += 2                                 # 10 minutes since the last Git fetch
    agent.step()
    assert fleet.daemon.fetches() == before + 1
    assert agent.last.commit == hidden and _applied(sim) == "2"


@pytest.mark.parametrize("forger", ["stranger", "unsigned", "tampered"])
def test_a_forged_tip_document_makes_the_agent_fetch_but_never_apply_unsigned_state(
        fleet: Fleet, kubesim, tmp_path: Path, made: list[Agent], forger: str) -> None:
    sim = kubesim()
    good = fleet.render("1")
    agent, watcher = _make(fleet, tmp_path, sim)
    made.append(agent)
    watcher.poll()
    agent.step()
    assert _applied(sim) == "1"
    # someone who can push to the branch and write the tip document: an unsigned commit, and
    # a document that points at it
    evil = fleet.render("evil", signer=None, tip=False)
    if forger == "stranger":
        fleet.tip(evil, signer=SigningKey.generate())
    elif forger == "unsigned":
        fleet.tip(evil, signer=None)
    else:
        fleet.tip(good)
        doc = json.loads((fleet.folder / "c1.json").read_text())
        doc["tip"] = doc["tip"].replace(good, evil)
        (fleet.folder / "c1.json").write_text(json.dumps(doc))
    before = fleet.daemon.fetches()
    watcher.poll()
    assert watcher.problem and watcher.hint() is None     # refused: Git decides
    agent.step()
    agent.step()
    assert fleet.daemon.fetches() == before + 2          # it fetched ...
    assert agent.last.commit == evil and agent.last.refused   # ... and refused what it got
    assert _applied(sim) == "1"                          # nothing unsigned applied
    status = status_of(fleet.remote)
    assert status is not None and status.sync.result == SyncResult.REFUSED
    assert status.sync.cluster_commit == good


def test_a_tip_server_flipping_documents_cannot_make_the_agent_poll_faster(
        fleet: Fleet, kubesim, tmp_path: Path, made: list[Agent]) -> None:
    """Two well-signed documents served in turn, at once (a replaying server): never two quick
    rounds in a row, so the agent is woken (and asks Git) at most twice an interval."""
    sim = kubesim()
    first = fleet.render("1")
    second = fleet.render("2")
    agent, watcher = _make(fleet, tmp_path, sim)
    made.append(agent)
    delays = []
    for commit in (first, second, first, second):
        fleet.tip(commit)
        delays.append(watcher.poll())
    assert delays[0] == delays[2] == 0.0, delays
    assert 9.0 <= delays[1] <= 11.0 and 9.0 <= delays[3] <= 11.0, delays


def test_a_document_re_signed_for_a_plan_never_makes_the_agent_miss_the_next_move(
        fleet: Fleet, kubesim, tmp_path: Path, made: list[Agent]) -> None:
    """The hub re-signs a cluster's document without moving its tip (a plan listed, the agent
    upgraded), and the tip moves a moment later: the poller asks again within a second each
    time, never after its interval (an agent at `--interval 1h` saw the move an hour late),
    and the move wakes the agent, which applies it."""
    sim = kubesim()
    woken: list[str] = []
    agent, watcher = _make(fleet, tmp_path, sim, woken=woken)
    made.append(agent)
    first = fleet.render("1")
    agent.step()
    assert agent.branch.last_fetched == first and _applied(sim) == "1"
    delays = [watcher.poll()]                  # the tip it fetched: nothing to do
    fleet.tip(first, plans=())                 # re-signed, listing (no) plans
    delays.append(watcher.poll())
    fleet.tip(first, plans=("20261207T120000Z-abcdef",))
    delays.append(watcher.poll())
    assert woken == []
    fleet.render("2")                          # the tip moves
    delays.append(watcher.poll())
    assert woken == ["wake"]
    assert delays[0] == 0.0 and all(d <= 1.0 for d in delays), delays
    agent.step()
    assert _applied(sim) == "2"


@pytest.mark.parametrize("base", ["http://user:token@hub:8080/tips",
                                  "https://bucket.example/tips?sig=secret",
                                  "https://bucket.example/tips#x", "file:///srv/tips"])
def test_a_tips_url_that_would_carry_a_secret_or_cannot_work_is_refused(base: str) -> None:
    with pytest.raises(InputError, match="--tips-url") as refused:
        document_url(base, "eu-1")
    assert "secret" not in str(refused.value).replace("hold no secret", "")
    assert document_url("http://hub:8080/tips/", "eu-1") == "http://hub:8080/tips/eu-1.json"


class ScriptedServer:
    """A loopback HTTP/1.0 server answering each request with the next raw bytes of a script
    (broken answers a proxy or a half-dead server gives: a cut body, a garbage status line)."""

    def __init__(self, answers: list[bytes]) -> None:
        import socket
        import threading

        self.answers = list(answers)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(10)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/tips"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(self.answers.pop(0))

    def close(self) -> None:
        self.sock.close()
        self.thread.join(timeout=10)


def test_a_broken_answer_is_an_outage_of_tips_never_the_end_of_the_poller() -> None:
    key = SigningKey.generate()
    doc = encode(Tip(cluster="c1", ref=REF, commit="a" * 40, state="", issued_at=1e9), key)
    good = (b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nETag: \"1\"\r\n"
            b"Content-Length: %d\r\n\r\n" % len(doc)) + doc
    cut = b"HTTP/1.0 200 OK\r\nContent-Length: 5000\r\n\r\n" + doc[:20]
    garbage = b"SSH-2.0-OpenSSH_9.2\r\n\r\n"
    server = ScriptedServer([good, cut, good, garbage, good])
    try:
        watcher = TipWatcher(TipSettings(url=server.url, cluster="c1", ref=REF, interval=10.0,
                                         wait=0, safety=600.0),
                             trusted=TrustedKeys.of(key), last_fetched=lambda: "a" * 40,
                             wake=lambda: None, clock=Ticks())
        for broken in (False, True, False, True, False):
            delay = watcher.poll()              # never raises: the poller thread lives on
            assert delay >= 0
            assert bool(watcher.problem) is broken, watcher.problem
            assert (watcher.hint() is None) is broken   # broken: the agent asks Git
    finally:
        server.close()


def test_a_plan_its_tip_document_lists_is_answered_in_one_look_and_none_is_looked_for_before(
        fleet: Fleet, kubesim, tmp_path: Path, made: list[Agent]) -> None:  # type: ignore[no-untyped-def]
    """With a document that lists plans, the agent's plan part asks Git nothing until a
    request is listed, then answers it with one fetch; without one, it looks every
    --plan-interval again."""
    from gitfleet.agent.planreview import PlanReviewer, PlanReviewSettings
    from gitfleet.agent.round import FOREVER
    from gitfleet.clock import FakeClock
    from gitfleet.kube.client import KubeClient
    from gitfleet.state.git import Git, RefUpdate
    from gitfleet.wire.plans import Act, PlanAnswer, PlanRequest, plan_id

    sim = kubesim()
    first = fleet.render("1", tip=False)
    fleet.tip(first, plans=())
    ticks = Ticks()
    agent, watcher = _make(fleet, tmp_path, sim, ticks=ticks)
    made.append(agent)
    clock = FakeClock()
    reviewer = PlanReviewer(PlanReviewSettings(repo_url=fleet.remote.url, cluster="c1",
                                               interval=10.0, trusted=TrustedKeys.of(fleet.key)),
                            KubeClient(sim.api_client()), Git(agent.git.path),
                            identities=agent.keyring.identities, clock=clock,
                            notices=watcher.plans)
    told: list[float] = []
    watcher.notice = lambda: told.append(reviewer.due())
    watcher.poll()
    assert told == [FOREVER]         # the first document: the plan part asked, nothing listed
    agent.step()
    assert _applied(sim) == "1" and watcher.plans() == frozenset()
    before = fleet.daemon.fetches()
    for _ in range(3):
        clock.advance(10)
        ticks.now += 10
        watcher.poll()
        assert reviewer.step() == FOREVER           # nothing listed: no look
    assert fleet.daemon.fetches() == before

    # a request for c1 (the tree with v=2, over the applied commit), signed with the hub's key
    expires = time.time() + 3600
    plan = plan_id(first, expires)
    request = PlanRequest(plan=plan, cluster="c1", source_commit="1" * 40, expires=expires)
    git = fleet.remote.git
    git.signer = fleet.key
    try:
        tree = git.write_tree(description_files("default", "app",
                                                [configmap("a", "bar", {"v": "2"})]))
        commit = git.commit(tree, [first], "plan\n\n" + "\n".join(request.trailers()) + "\n")
    finally:
        git.signer = None
    git.update_refs([RefUpdate(Branches().plan("c1", plan), commit, None)])
    assert reviewer.step() == FOREVER and fleet.daemon.fetches() == before   # not listed yet

    fleet.tip(first, plans=(plan,))                 # the hub's next round lists it
    ticks.now += 10
    watcher.poll()
    assert told == [FOREVER, 0.0]                   # the plan part is told, and due at once
    reviewer.step()
    assert reviewer.last.answered == [plan], reviewer.last.errors
    assert fleet.daemon.fetches() == before + 1     # one look
    raw = git.read_blob(Branches().plan_answer("c1", plan), "plan.yaml")
    assert raw is not None
    assert [(a.action, a.name, a.message) for a in PlanAnswer.from_yaml(raw).actions] == [
        (Act.UPDATE, "a", "data.v: '1' -> '2'")]
    for _ in range(3):
        clock.advance(10)
        ticks.now += 10
        watcher.poll()
        assert reviewer.step() == FOREVER           # answered, still listed: no look
    assert fleet.daemon.fetches() == before + 1 and _applied(sim) == "1"

    fleet.site.down()                               # no document: its own interval again
    watcher.poll()
    assert watcher.plans() is None
    assert reviewer.step() == 10.0
    assert fleet.daemon.fetches() == before + 2
