"""Tip documents by default: the hub announces where they are served in cluster.yaml (fleet.yaml
`tips.url`), and the agent follows that, starting, moving and stopping its tip watcher when a
new cluster commit says so, without a restart; `--tips-url` and `--no-tips` win over it.

Real parts: the cluster branch is served by `git daemon --verbose` (every fetch counted), the
documents are written by the hub's TipFolder and served by nginx, the agent applies to kubesim;
the agent is built as `gitfleet agent` builds it (cli.agent_cmd.tip_follower) and steps on a
fake clock while its tip watcher polls on its own thread.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gitfleet.agent.agent import Agent, AgentSettings
from gitfleet.cli.agent_cmd import tip_follower
from gitfleet.clock import FakeClock
from gitfleet.hub.tips import TipFolder
from gitfleet.kube.client import KubeClient
from gitfleet.layout import Branches
from gitfleet.model.loader import load_settings
from gitfleet.state.git import init_repo
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.cluster import ClusterFile, cluster_file, read_cluster
from gitfleet.wire.tips import Tip, encode
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import Remote, clone, gitfleet, gitfleet_here, push, run_hub, wait_for
from tests.tips.servers import CountingGitDaemon, StaticSite

REF = Branches().cluster("c1")


class Served:
    """A fleet repository behind a counting git daemon, and two folders of tip documents
    (`a`, `b`) behind one nginx: the hub's tip store before and after it moved."""

    def __init__(self, tmp_path: Path) -> None:
        base = tmp_path / "git"
        self.bare = init_repo(base / "fleet.git", bare=True)
        self.daemon = CountingGitDaemon(base, tmp_path / "daemon.log")
        self.folders = {name: TipFolder(tmp_path / "tips" / name) for name in ("a", "b")}
        self.site = StaticSite(tmp_path / "tips", tmp_path / "nginx")
        self.key = SigningKey.generate()
        self.remote = Remote(git=self.bare, url=self.daemon.url("fleet.git"), base=base)

    def url(self, folder: str) -> str:
        return f"{self.site.url}/{folder}"

    def render(self, value: str, *, tips: str = "") -> str:
        """A hub-signed cluster commit whose cluster.yaml announces `tips` (a folder name, or
        nothing), and its tip document in both folders (the hub writes one store; both
        here, so that a watcher of either sees the move)."""
        files = description_files("default", "app", [configmap("a", "bar", {"v": value})])
        files["cluster.yaml"] = cluster_file(ClusterFile(
            name="c1", namespace="clusternet-c1", tips_url=self.url(tips) if tips else ""))
        self.bare.signer = self.key
        try:
            commit = publish(self.bare, "c1", files)
        finally:
            self.bare.signer = None
        doc = encode(Tip(cluster="c1", ref=REF, commit=commit, state="", issued_at=1e9),
                     self.key)
        for folder in self.folders.values():
            folder.write("c1", doc)
        return commit


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    served = Served(tmp_path)
    served.daemon.up()
    try:
        served.site.up()
        try:
            yield served
        finally:
            served.site.down()
    finally:
        served.daemon.down()


def _args(**flags: object) -> argparse.Namespace:
    """The agent command's flags that the tip follower reads."""
    defaults: dict[str, object] = {"cluster": "c1", "branch_prefix": "gitfleet", "interval": 0.2,
                                   "tips_safety_interval": 3600.0, "tips_url": None,
                                   "no_tips": False}
    return argparse.Namespace(**{**defaults, **flags})


@pytest.fixture
def made(tmp_path: Path, served: Served, kubesim) -> Iterator[list[Agent]]:  # type: ignore[no-untyped-def]
    made: list[Agent] = []
    yield made
    for agent in made:
        for reactor in agent.reactors:
            reactor.close()  # type: ignore[attr-defined]
        agent.close()


def _agent(served: Served, kubesim, made: list[Agent], tmp_path: Path,  # type: ignore[no-untyped-def]
           **flags: object) -> Agent:
    settings = AgentSettings(repo_url=served.remote.url, cluster="c1",
                             workdir=tmp_path / f"agent{len(made)}", interval=10.0,
                             progress_interval=0.1, trusted_hub_keys=TrustedKeys.of(served.key))
    box: list[Agent] = []
    follower = tip_follower(_args(**flags), settings, lambda: box[0])
    agent = Agent(settings, KubeClient(kubesim().api_client()), clock=FakeClock(),
                  branch_hint=follower.hint, reactors=[follower])
    box.append(agent)
    made.append(agent)
    follower.start()
    return agent


def _quiet(served: Served, agent: Agent) -> bool:
    """Whether the agent's next round asks Git nothing (it waits for its tip)."""
    before = served.daemon.fetches()
    agent.step()
    return served.daemon.fetches() == before


def test_the_agent_follows_the_announced_url_moves_with_it_and_stops_without_a_restart(
        served: Served, kubesim, made: list[Agent], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    served.render("1", tips="a")
    agent = _agent(served, kubesim, made, tmp_path)       # no --tips-url
    agent.step()                                            # Git: cluster.yaml names `a`
    wait_for(lambda: _quiet(served, agent), what="the agent on the announced tips")

    moved = served.render("2", tips="b")                    # the hub's store moved
    wait_for(lambda: agent.last.commit == moved, step=agent.step, what="the change via tips")
    wait_for(lambda: _quiet(served, agent), what="the agent on the new tips")
    follower = agent.reactors[0]
    assert follower.url == served.url("b")  # type: ignore[attr-defined]

    gone = served.render("3")                               # no announcement any more
    wait_for(lambda: agent.last.commit == gone, step=agent.step, what="the change via tips")
    for _ in range(3):                                      # every round asks Git again
        assert not _quiet(served, agent)
    assert follower.watcher is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("flag", ["tips_url", "no_tips"])
def test_the_operators_flag_wins_over_the_announcement_and_says_so(
        served: Served, kubesim, made: list[Agent], tmp_path: Path,  # type: ignore[no-untyped-def]
        caplog: pytest.LogCaptureFixture, flag: str) -> None:
    served.render("1", tips="a")
    flags = {"tips_url": served.url("b")} if flag == "tips_url" else {"no_tips": True}
    agent = _agent(served, kubesim, made, tmp_path, **flags)
    caplog.set_level(logging.INFO, "gitfleet.agent.tips")
    agent.step()
    if flag == "tips_url":
        wait_for(lambda: _quiet(served, agent), what="the agent on --tips-url's tips")
        assert agent.reactors[0].url == served.url("b")  # type: ignore[attr-defined]
    else:
        for _ in range(3):
            assert not _quiet(served, agent)
    said = [r.getMessage() for r in caplog.records if "not followed" in r.getMessage()]
    assert len(said) == 1, said


def test_an_older_agents_cluster_yaml_reader_keeps_every_other_field() -> None:
    """0.1.0 agents read only syncMode and ignoreDifferences (188efb3's desired.py) and so
    never see `tips`; this release's reader knows it, refuses a URL that carries a secret
    and names an unknown field inside it, the other fields still applying."""
    text = cluster_file(ClusterFile(name="c1", namespace="ns", sync_mode="Dual",
                                    tips_url="https://tips.example/fleet"))
    assert yaml.safe_load(text)["tips"] == {"url": "https://tips.example/fleet"}
    assert read_cluster(text).tips_url == "https://tips.example/fleet"
    bad = read_cluster(b"name: c1\nsyncMode: Dual\ntips:\n  url: https://u:pw@tips.example/\n"
                       b"  ur1: x\n")
    assert bad.tips_url == "" and bad.sync_mode == "Dual"
    assert any("tips.url must not carry credentials" in p for p in bad.problems), bad.problems
    assert any("ur1 (did you mean url?)" in p for p in bad.problems), bad.problems
    assert all("pw" not in p for p in bad.problems)


FLEET = "apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\ntips:\n  url: {url}\n"


@pytest.mark.parametrize("url, said", [
    ("http://user:token@hub:8080/tips", "must not carry credentials"),
    ("https://bucket.example/tips?sig=abc", "without ?query"),
    ("ftp://hub/tips", "must be an http(s) URL")])
def test_a_tips_url_in_fleet_yaml_that_cannot_work_is_an_error_at_its_line(
        url: str, said: str) -> None:
    settings, problems = load_settings({"fleet.yaml": FLEET.format(url=url).encode()})
    assert settings.tips_url == ""
    assert [(p.path, p.line) for p in problems] == [("fleet.yaml", 4)], problems
    assert said in problems[0].message and "token" not in problems[0].message


@pytest.mark.slow
def test_the_hub_announces_fleet_yamls_url_in_every_cluster_yaml_and_refuses_a_bad_one(
        remote: Remote, tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    cluster = ("apiVersion: clusters.clusternet.io/v1beta1\nkind: ManagedCluster\n"
               "metadata:\n  name: c1\nspec:\n  clusterId: 11111111-1111-4111-8111-111111111111\n")
    push(work, "announce tips", {"fleet.yaml": FLEET.format(url="https://tips.example/fleet"),
                                 "clusters/c1.yaml": cluster})
    done = gitfleet_here("hub", "--repo", str(remote.git.path), "--once", "--no-fleet-status",
                         "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    shipped = yaml.safe_load(remote.git.read_blob(Branches().cluster("c1"), "cluster.yaml"))
    assert shipped["tips"] == {"url": "https://tips.example/fleet"}
    assert "does not publish" in done.stderr     # no --serve-tips/--tips-dir: said

    push(work, "a secret in the URL", {"fleet.yaml": FLEET.format(
        url="https://u:s3cret@tips.example/fleet")})
    done = run_hub("--repo", str(remote.git.path), "--once", "--no-fleet-status",
                   "--cache-dir", str(tmp_path / "cache"))     # a process: what it prints
    assert "fleet.yaml:4" in done.stdout + done.stderr, done.stdout + done.stderr
    assert "s3cret" not in done.stdout + done.stderr
    kept = yaml.safe_load(remote.git.read_blob(Branches().cluster("c1"), "cluster.yaml"))
    assert kept["tips"] == {"url": "https://tips.example/fleet"}   # the last good fleet.yaml


@pytest.mark.parametrize("once", [True, False])
def test_a_tips_url_flag_carrying_a_secret_is_refused_before_anything_starts(
        tmp_path: Path, once: bool) -> None:
    done = gitfleet("agent", "--repo", str(tmp_path / "none.git"), "--cluster", "c1",
                    "--kubeconfig", str(tmp_path / "missing"), "--workdir", str(tmp_path / "a"),
                    "--tips-url", "https://ops:hunter2@tips.example/fleet",
                    *(["--once"] if once else []), timeout=60)
    assert done.returncode != 0
    assert "--tips-url must not carry credentials" in done.stderr, done.stderr
    assert "hunter2" not in done.stdout + done.stderr
