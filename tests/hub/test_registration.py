"""The hub answers registration requests; with auto approval the new cluster is on the source
branch and gets its own cluster branch in the next round."""

from __future__ import annotations

from pathlib import Path

from gitfleet.clock import FakeClock
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.registration.applicant import answer, submit
from gitfleet.registration.request import Request
from gitfleet.state.git import init_repo
from gitfleet.state.store import open_store
from tests.hub.fleet import commit, consistent, edit, example_repo, git, refs


def test_auto_approved_cluster_is_rendered(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    edit(repo, "fleet.yaml", "approval: manual", "approval: auto")
    commit(repo, "auto approval")
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False), clock=clock)
    hub.run_once()
    agent = init_repo(tmp_path / "agent.git")
    request = Request(name="edge-1", cluster_id="0b5e3c1a-1111-4222-8333-944455556666",
                      labels={"env": "prod"})
    assert submit(agent, str(repo), request, branches=Branches(), now=clock.now())
    assert hub.step() == 0.0                 # it approved, and wants another round at once
    assert "clusters/edge-1.yaml" in git(repo, "ls-tree", "-r", "--name-only", "main")
    verdict = answer(agent, str(repo), "edge-1", branches=Branches())
    assert verdict is not None and verdict.result == "Approved"
    hub.step()
    assert "refs/heads/gitfleet/clusters/edge-1" in refs(repo)
    assert git(repo, "ls-tree", "-r", "--name-only", "refs/heads/gitfleet/clusters/edge-1")
    assert consistent(repo)
