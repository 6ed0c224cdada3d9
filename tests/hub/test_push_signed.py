"""A push worker's status on a cluster that publishes its own signing key.

The status branch of a Push or Dual cluster has two writers: the cluster's agent (heartbeats,
signed with the cluster's key) and the hub's push worker (the sync part). The hub folds only
status signed by a key it trusts for that cluster, so the worker signs with the hub's key and the
hub trusts its own key there too; a worker that signed nothing would have its sync rejected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.cli.pushagent import AgentPush
from gitfleet.hub.hub import Hub
from gitfleet.hub.kubeconfigs import KubeconfigDir
from gitfleet.hub.pushworkers import PushRegistry, PushSettings
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.signing import SigningKey
from gitfleet.state.store import open_store
from gitfleet.wire.status import SyncResult
from tests.hub.fleet import commit, git
from tests.hub.pushfleet import (
    cluster_yaml,
    colour,
    kubeconfigs,
    push_fleet,
    sims,
    status,
    stopping,
    wait_for,
)


@pytest.mark.parametrize("worker_signs", [True, False])
def test_the_hub_folds_its_push_workers_signed_status(tmp_path: Path,
                                                      worker_signs: bool) -> None:
    repo = push_fleet(tmp_path / "fleet", {"p": "Push"})
    agent_key = SigningKey.generate(comment="gitfleet-agent@p")
    commit(repo, "p publishes its key", {"clusters/p.yaml": cluster_yaml("p", "Push") +
                                         f"  signingKey: {agent_key.public_line('p')}\n"})
    hub_key = SigningKey.generate(comment="hub")
    with sims("p") as sim:
        folder = kubeconfigs(tmp_path / "kubeconfigs", sim)
        registry = PushRegistry(
            agents=AgentPush(),
            repo_url=str(repo), workdir=tmp_path / "push", kubeconfigs=KubeconfigDir(folder),
            settings=PushSettings(interval=0.2, agentless=True,
                                  signing_key=hub_key if worker_signs else None))
        hub = Hub(open_store(str(repo)), settings=HubSettings(signing_key=hub_key),
                  push=registry)
        with stopping(hub):
            hub.run_once()
            wait_for(lambda: colour(sim["p"]) == "blue", what="the worker applied")
            wait_for(lambda: (s := status(repo, "p")) and s.sync.result is SyncResult.SYNCED,
                     what="the worker's status")
            tip = git(repo, "rev-parse", Branches().status("p")).strip()
            hub.run_once()
            assert hub.seen is not None
            choice = hub.seen.status.choices["p"]
            if worker_signs:
                assert choice.rejected == ""
                assert choice.commit == tip
            else:
                assert "unsigned" in choice.rejected
                assert choice.commit != tip
