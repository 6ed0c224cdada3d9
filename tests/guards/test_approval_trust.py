"""Approvals the hub believes, and approvals that reach the agent (docs/guards.md):

- with `--require-signed-source`, an approval in a commit not signed by an allowed key does not
  count, even below a signed tip;
- a deletion the hub let through but the agent's own guard refused (a fleet whose
  `guards.maxDeletions.count` is above the agent's floor) is approved by a later, empty commit:
  the hub gives the cluster a commit carrying the approval although its tree did not change,
  and the agent prunes without any flag.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.git import Git
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.state.store import open_store
from gitfleet.wire.status import SyncResult
from tests.fleetfixtures import NAMESPACE, subscription
from tests.guards.test_mass_deletion import CLUSTER, CONFIGS, _configs, _deployed, _fleet
from tests.harness import Remote, clone, git, push, status_of

pytestmark = pytest.mark.slow
HELD = "held: would delete 13 of 13 objects in c1"


def _signed_push(work: Path, key: SigningKey, message: str,
                 files: dict[str, str | None] | None = None) -> str:
    """A commit signed with `key` (as a developer's signed commit), pushed to main."""
    for rel, text in (files or {}).items():
        if text is None:
            (work / rel).unlink()
        else:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
    git(work, "add", "-A")
    tree = git(work, "write-tree").strip()
    head = Git(work).resolve("HEAD")       # None: the first commit
    sha = Git(work, signer=key).commit(tree, [head] if head else [], message)
    git(work, "update-ref", "HEAD", sha)
    git(work, "push", "-q", "origin", "HEAD:main")
    return sha


def test_an_unsigned_approval_does_not_count_with_require_signed_source(
        remote: Remote, tmp_path: Path, caplog) -> None:
    dev = SigningKey.generate()
    work = clone(remote.git.path, tmp_path / "work")
    _signed_push(work, dev, "fleet: app on c1", _fleet())
    hub = Hub(open_store(str(remote.git.path)),
              settings=HubSettings(interval=1, source_keys=TrustedKeys.of(dev)))
    hub.run_once()
    branch = remote.git.resolve(CLUSTER)
    assert branch is not None

    _signed_push(work, dev, "fleet: drop the app", {"policies/app.yaml": None})
    hub.run_once()
    assert remote.git.resolve(CLUSTER) == branch

    # an approval in an unsigned commit, under a signed tip the hub renders
    caplog.set_level(logging.WARNING, logger="gitfleet.hub")
    push(work, "fleet: drop it\n\nGitfleet-Approve-Deletions: c1")
    _signed_push(work, dev, "docs: a readme", {"README.md": "the fleet\n"})
    hub.run_once()
    assert hub.refused == ""
    assert remote.git.resolve(CLUSTER) == branch                # still held
    assert HELD in remote.git.read_blob("refs/heads/gitfleet/state", "errors.yaml").decode()
    assert "approval not counted" in caplog.text

    _signed_push(work, dev, "fleet: yes, drop it\n\nGitfleet-Approve-Deletions: c1")
    hub.run_once()
    assert remote.git.resolve(CLUSTER) != branch
    assert "Gitfleet-Approve-Deletions:" in remote.git.run(
        "log", "-1", "--format=%B", CLUSTER).decode()


def test_a_later_approval_reaches_an_agent_that_refused_the_prune(
        remote: Remote, tmp_path: Path, kubesim, make_agent) -> None:
    work, hub, sim, agent = _deployed(remote, tmp_path, kubesim, make_agent)
    # the hub lets 13 deletions through (count 50); the agent's own guard refuses them
    push(work, "fleet: guards for a big fleet",
         {"fleet.yaml": "guards:\n  maxDeletions:\n    count: 50\n"})
    hub.run_once()
    push(work, "fleet: drop the app", {"policies/app.yaml": None})
    hub.run_once()
    agent.step()
    assert _configs(sim) == CONFIGS
    status = status_of(remote)
    assert status is not None and status.sync.result is SyncResult.PRUNE_REFUSED
    assert "Gitfleet-Approve-Deletions" in status.sync.message
    refused = remote.git.resolve(CLUSTER)
    hub.run_once()
    assert remote.git.resolve(CLUSTER) == refused         # nothing to say to the agent yet

    push(work, "fleet: yes, drop the app from c1\n\nGitfleet-Approve-Deletions: c1")
    hub.run_once()
    approved = remote.git.resolve(CLUSTER)
    assert approved != refused
    assert remote.git.resolve(f"{approved}^{{tree}}") == remote.git.resolve(f"{refused}^{{tree}}")
    assert "Gitfleet-Approve-Deletions:" in remote.git.run(
        "log", "-1", "--format=%B", CLUSTER).decode()
    hub.run_once()
    assert remote.git.resolve(CLUSTER) == approved        # said once

    agent.step()
    assert _configs(sim) == []
    status = status_of(remote)
    assert status is not None and status.sync.result is SyncResult.SYNCED
    push(work, "docs: a readme", {"README.md": "the fleet\n"})
    hub.run_once()
    assert remote.git.resolve(CLUSTER) == approved


def test_an_approval_pushed_before_the_agent_refused_still_reaches_it(
        remote: Remote, tmp_path: Path, kubesim, make_agent) -> None:
    work, hub, sim, agent = _deployed(remote, tmp_path, kubesim, make_agent)
    push(work, "fleet: guards for a big fleet",
         {"fleet.yaml": "guards:\n  maxDeletions:\n    count: 50\n"})
    hub.run_once()
    push(work, "fleet: drop the app", {"policies/app.yaml": None})
    hub.run_once()
    dropped = remote.git.resolve(CLUSTER)
    push(work, "fleet: yes, drop the app from c1\n\nGitfleet-Approve-Deletions: c1")
    hub.run_once()
    assert remote.git.resolve(CLUSTER) == dropped       # no agent has refused: nothing owed

    agent.step()                                         # refuses: its head has no approval
    status = status_of(remote)
    assert status is not None and status.sync.result is SyncResult.PRUNE_REFUSED
    hub.run_once()                                       # the refusal: rendered again
    assert remote.git.resolve(CLUSTER) != dropped
    assert "Gitfleet-Approve-Deletions:" in remote.git.run(
        "log", "-1", "--format=%B", CLUSTER).decode()
    agent.step()
    assert _configs(sim) == []


def test_an_approval_in_the_commit_the_refused_state_came_from_reaches_the_agent(
        remote: Remote, tmp_path: Path, kubesim, make_agent) -> None:
    work, hub, sim, agent = _deployed(remote, tmp_path, kubesim, make_agent)
    push(work, "fleet: guards for a big fleet",
         {"fleet.yaml": "guards:\n  maxDeletions:\n    count: 50\n"})
    hub.run_once()
    push(work, "fleet: only the namespace", {"policies/app.yaml": subscription()})
    hub.run_once()
    # before the agent ran: a commit approving c1 that also labels the Namespace; c1 loses
    # nothing more, so its new head carries no approval, and the agent refuses 12 of 13
    push(work, "fleet: label the namespace\n\nGitfleet-Approve-Deletions: c1",
         {"templates/namespace.yaml": NAMESPACE + "  labels: {team: a}\n"})
    hub.run_once()
    labelled = remote.git.resolve(CLUSTER)
    assert "Gitfleet-Approve-Deletions:" not in remote.git.run(
        "log", "-1", "--format=%B", CLUSTER).decode()
    agent.step()
    status = status_of(remote)
    assert status is not None and status.sync.result is SyncResult.PRUNE_REFUSED
    hub.run_once()
    assert remote.git.resolve(CLUSTER) != labelled
    agent.step()
    assert _configs(sim) == []
    status = status_of(remote)
    assert status is not None and status.sync.result is SyncResult.SYNCED
