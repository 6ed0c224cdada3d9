"""fleet.yaml `state.repositories`: the hub writes each cluster's branch into the repository
placed for it (signed as any hub commit), `cluster.yaml` names it, the agent fetches it there,
and a move between repositories (a hub killed in the middle of it included) loses nothing.
Real Git repositories, the hub in-process, a real agent against kubesim."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from gitfleet.agent.agent import Agent
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from gitfleet.state.git import Git, init_repo
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.state.store import open_store
from gitfleet.wire.tips import decode
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import Remote, commit, git

REF = Branches().cluster("c1")


def _fleet(*repos: tuple[str, str, str]) -> str:
    text = "apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\n"
    if repos:
        text += "state:\n  repositories:\n"
        for name, url, selector in repos:
            text += f"    - name: {name}\n      url: {url}\n"
            if selector:
                text += f"      selector:\n        matchLabels: {{{selector}}}\n"
    return text


def _source(work: Path, remote: Remote, fleet: str, data: str = "v: '1'") -> None:
    commit(work, "fleet", {"fleet.yaml": fleet,
                           "clusters/c1.yaml": managed_cluster("c1", "u1", labels="env: test"),
                           "policies/app.yaml": subscription(feed("ConfigMap", "cfg",
                                                                  namespace="app")),
                           "templates/namespace.yaml": NAMESPACE,
                           "templates/cfg.yaml": config_map("cfg", data)})
    git(work, "push", "-q", "-f", str(remote.git.path), "main")


def _value(sim: KubeSim) -> str | None:
    try:
        cm = client.CoreV1Api(sim.api_client()).read_namespaced_config_map("cfg", "app")
    except client.ApiException:
        return None
    return str((cm.data or {}).get("v"))


def _named(repo: Git, ref: str = REF) -> str:
    doc = yaml.safe_load(repo.read_blob(ref, "cluster.yaml") or b"{}")
    return str(doc.get("stateRepository", ""))


def _places(tmp_path: Path) -> tuple[tuple[Git, str], tuple[Git, str], Path]:
    """State repositories a and b (bare, empty) with their URLs, and an empty source clone."""
    repos = []
    for name in ("a", "b"):
        path = tmp_path / f"state-{name}.git"
        repos.append((init_repo(path, bare=True), path.as_uri()))
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    return repos[0], repos[1], work


def test_bad_state_settings_are_errors_at_their_line() -> None:
    fleet = _fleet(("a", "https://git.example.com/state-a.git", "")) + \
        "      fetchURL: https://x.example.com/a.git\n" \
        "    - name: b\n      url: https://tok:secret@git.example.com/state-b.git\n"
    loaded = load_fleet({"fleet.yaml": fleet.encode()})
    messages = [f"{p.path}:{p.line}: {p.message}" for p in loaded.errors]
    assert any(m.startswith("fleet.yaml:7: ") and "fetchURL" in m for m in messages), messages
    assert any(m.startswith("fleet.yaml:9: ") and "credentials" in m for m in messages), messages
    assert not any("tok:secret" in m for m in messages), "the error never repeats the secret"
    assert not loaded.settings.state, "a broken state section places nothing"


def test_clusters_are_placed_by_label_then_by_hash() -> None:
    fleet = _fleet(("eu", "https://g.example.com/eu.git", "region: eu"),
                   ("a", "https://g.example.com/a.git", ""),
                   ("b", "https://g.example.com/b.git", ""))
    files = {"fleet.yaml": fleet.encode()}
    for i in range(60):
        files[f"clusters/c{i}.yaml"] = managed_cluster(
            f"c{i}", f"u{i}", labels="region: eu" if i % 3 == 0 else "region: us").encode()
    files["clusters/p.yaml"] = managed_cluster("p", "up", labels="region: eu",
                                               sync_mode="Push").encode()
    result = render(load_fleet(files))
    where = {yaml.safe_load(d)["name"]: yaml.safe_load(d).get("stateRepository", "")
             for path, d in result.files.items() if path.endswith("/cluster.yaml")}
    assert all(where[f"c{i}"] == "https://g.example.com/eu.git" for i in range(0, 60, 3))
    others = [where[f"c{i}"] for i in range(60) if i % 3]
    assert set(others) == {"https://g.example.com/a.git", "https://g.example.com/b.git"}
    assert where["p"] == "", "a Push cluster's branch stays where the push worker reads it"


@pytest.mark.slow
def test_the_agent_follows_its_branch_into_state_repositories(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    (a, a_url), (b, b_url), work = _places(tmp_path)
    _source(work, remote, _fleet(("a", a_url, "env: test")))
    hub = Hub(open_store(str(remote.git.path)), settings=HubSettings(fleet_status=False))
    hub.run_once()
    assert _named(a) == a_url, "the branch is in the repository placed for it"
    link = remote.git.resolve(REF) or ""
    assert link == a.resolve(REF), "the fleet repo keeps the link a restarted agent starts at"

    sim = kubesim()
    agent = make_agent(remote, sim, register=False)
    agent.step()
    assert _value(sim) == "1"

    _source(work, remote, _fleet(("a", a_url, "env: test")), data="v: '2'")
    hub.run_once()
    assert remote.git.resolve(REF) == link, "a change is written to the placed repository only"
    assert a.resolve(REF) != link and a.is_ancestor(link, a.resolve(REF) or "")
    agent.step()
    assert _value(sim) == "2"

    # moved to b (a label selector that takes it first): a and the fleet repo name b
    _source(work, remote, _fleet(("b", b_url, "env: test"), ("a", a_url, "env: test")),
            data="v: '3'")
    hub.run_once()
    assert _named(b) == b_url and _named(a) == b_url and _named(remote.git) == b_url
    assert b.is_ancestor(link, b.resolve(REF) or ""), "the history came along"
    agent.step()
    assert _value(sim) == "3"
    assert agent.branch.url == b_url
    hub.run_once()      # its status says it applied a commit naming b: a is purged
    assert a.resolve(REF) is None, "the place it left is purged once the agent moved"
    assert _named(b) == b_url and _named(remote.git) == b_url, "the link stays"
    agent.step()
    assert _value(sim) == "3" and agent.branch.url == b_url

    # a hub killed after the link, before the new place: as if b's branch was never written
    # (b stays listed until its clusters have left it: it is where their agents read)
    _source(work, remote, _fleet(("a", a_url, "env: test"), ("b", b_url, "env: none")),
            data="v: '4'")
    hub.run_once()
    assert _named(a) == a_url and _named(b) == a_url
    a.run("update-ref", "-d", REF)
    restarted = Hub(open_store(str(remote.git.path)), settings=HubSettings(fleet_status=False))
    restarted.run_once()
    assert _named(a) == a_url, "the next start writes the new place"
    fresh = make_agent(remote, sim, register=False)     # a new workdir: starts at the fleet repo
    fresh.step()
    assert _value(sim) == "4" and fresh.branch.url == a_url

    # back to the fleet repo: the agent reads it there again
    _source(work, remote, _fleet(("a", a_url, "env: none"), ("b", b_url, "env: none")),
            data="v: '5'")
    restarted.run_once()
    assert _named(remote.git) == "" and _named(a) == ""
    fresh.step()
    assert _value(sim) == "5" and fresh.branch.url == remote.url


@pytest.mark.slow
def test_only_a_signed_commit_sends_the_agent_elsewhere(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    (a, a_url), (_, b_url), work = _places(tmp_path)
    _source(work, remote, _fleet(("a", a_url, "env: test")))
    key = SigningKey.generate()
    hub = Hub(open_store(str(remote.git.path)),
              settings=HubSettings(fleet_status=False, signing_key=key))
    hub.run_once()
    trusted = TrustedKeys.of(key)
    assert a.verify_commit(a.resolve(REF) or "", trusted).ok, "signed as every hub commit"
    assert remote.git.verify_commit(remote.git.resolve(REF) or "", trusted).ok
    sim = kubesim()
    make_agent(remote, sim, register=False, trusted_hub_keys=trusted).step()
    assert _value(sim) == "1"

    # someone who can push to the fleet repo points the link at a repository of theirs
    forged = tmp_path / "forged"
    forged.mkdir()
    git(forged, "init", "-q", "-b", "x")
    commit(forged, "forged", {"cluster.yaml": f"name: c1\nstateRepository: {b_url}\n",
                              "app/cfg.yaml": config_map("cfg", "v: 'forged'")})
    git(forged, "push", "-q", "-f", str(tmp_path / "state-b.git"), f"x:{REF}")
    git(forged, "push", "-q", "-f", str(remote.git.path), f"x:{REF}")
    fresh = make_agent(remote, sim, register=False, trusted_hub_keys=trusted)
    fresh.step()
    assert fresh.branch.url == remote.url, "an unsigned commit names no place to follow"
    assert _value(sim) == "1"


def test_tip_documents_name_the_tip_in_the_state_repository(
        tmp_path: Path, remote: Remote) -> None:
    a_url = (tmp_path / "state-a.git").as_uri()
    a = init_repo(tmp_path / "state-a.git", bare=True)
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    _source(work, remote, _fleet(("a", a_url, "env: test")))
    key, folder = SigningKey.generate(), tmp_path / "tips"
    hub = Hub(open_store(str(remote.git.path)), settings=HubSettings(
        fleet_status=False, signing_key=key, tips=True, tips_dir=folder))

    def announced() -> str:
        return decode((folder / "c1.json").read_bytes(), cluster="c1", ref=REF,
                      trusted=TrustedKeys.of(key)).tip.commit

    hub.run_once()
    assert announced() == a.resolve(REF)
    _source(work, remote, _fleet(("a", a_url, "env: test")), data="v: '2'")
    hub.run_once()
    assert a.resolve(REF) != remote.git.resolve(REF), "the fleet repo holds the link only"
    assert announced() == a.resolve(REF), "the document names the tip the agent fetches"


@pytest.mark.slow
def test_a_replay_in_the_state_repository_is_refused_by_a_restarted_agent(
        tmp_path: Path, served_remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    a_url = (tmp_path / "state-a.git").as_uri()
    a = init_repo(tmp_path / "state-a.git", bare=True)
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    _source(work, served_remote, _fleet(("a", a_url, "env: test")))
    key = SigningKey.generate()
    # the hub works on a mirror of a remote fleet repo: the remote gets the links only
    hub = Hub(open_store(served_remote.url, cache_dir=tmp_path / "hub-cache"),
              settings=HubSettings(fleet_status=False, signing_key=key))
    hub.run_once()
    first = a.resolve(REF) or ""
    trusted = TrustedKeys.of(key)
    sim = kubesim()
    agent = make_agent(served_remote, sim, register=False, trusted_hub_keys=trusted)
    agent.step()
    _source(work, served_remote, _fleet(("a", a_url, "env: test")), data="v: '2'")
    hub.run_once()
    agent.step()
    assert _value(sim) == "2"
    # someone who can push to the state repository pushes the old, well-signed state back;
    # an agent restarted on a new workdir knows the applied commit from its cluster's record
    a.run("update-ref", REF, first)
    fresh = make_agent(served_remote, sim, register=False, trusted_hub_keys=trusted)
    fresh.step()
    assert fresh.branch.url == a_url
    assert _value(sim) == "2", "the older commit is refused: it fetched the applied one by id " \
        "where the branch lives"


def test_a_move_within_the_second_of_the_last_write_keeps_the_newest_history(
        tmp_path: Path, remote: Remote, kubesim: Callable[..., KubeSim],
        make_agent: Callable[..., Agent]) -> None:
    """Committer times have whole seconds: a cluster's link in the fleet repo and its newer
    commit in repository a written in the same second (a hub whose clock stands still here,
    as in two quick rounds), then a move to b. The move goes on top of the newer commit, never
    of the link, so the agent that applied it follows to b and applies the next change."""
    from gitfleet.clock import FakeClock

    (a, a_url), (b, b_url), work = _places(tmp_path)
    # b listed first: the places are looked at in the order fleet.yaml lists them
    _source(work, remote, _fleet(("b", b_url, "env: none"), ("a", a_url, "env: test")))
    hub = Hub(open_store(str(remote.git.path)), settings=HubSettings(fleet_status=False),
              clock=FakeClock())
    hub.run_once()
    link = remote.git.resolve(REF) or ""
    sim = kubesim()
    agent = make_agent(remote, sim, register=False)
    _source(work, remote, _fleet(("b", b_url, "env: none"), ("a", a_url, "env: test")),
            data="v: '2'")
    hub.run_once()
    written = a.resolve(REF) or ""
    assert written != link and a.is_ancestor(link, written)
    agent.step()
    assert _value(sim) == "2"

    _source(work, remote, _fleet(("b", b_url, "env: test"), ("a", a_url, "env: test")),
            data="v: '3'")
    hub.run_once()
    assert _named(b) == b_url
    assert b.is_ancestor(written, b.resolve(REF) or ""), "the move went on top of v2"
    agent.step()
    assert _value(sim) == "3" and agent.branch.url == b_url
