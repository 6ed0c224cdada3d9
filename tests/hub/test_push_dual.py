"""Dual mode with a real agent: the hub's worker and the agent hand the cluster over, both ways,
without pruning or re-creating anything (they share the inventory in the cluster)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitfleet.agent.agent import Agent, AgentSettings
from gitfleet.clock import SystemClock
from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim
from gitfleet.wire.status import Change, SyncResult
from tests.hub.fleet import commit, edit, git
from tests.hub.pushfleet import (
    colour,
    inventory_keys,
    kubeconfigs,
    push_fleet,
    push_hub,
    sims,
    status,
    stopping,
    uid,
    wait_for,
)


@contextmanager
def agent(repo: Path, sim: KubeSim, workdir: Path, *, app_pusher: bool) -> Iterator[Agent]:
    """The cluster's agent in Dual mode, its loop in a thread; always stopped."""
    a = Agent(AgentSettings(repo_url=str(repo), cluster="c1", workdir=workdir,
                            app_pusher=app_pusher, sync_mode="Dual", interval=0.2,
                            progress_interval=0.1, heartbeat_interval=60.0),
              KubeClient(sim.api_client()), clock=SystemClock())
    thread = threading.Thread(target=a.run, name="dual-agent", daemon=True)
    thread.start()
    try:
        yield a
    finally:
        a.stop()
        thread.join(10)
        assert not thread.is_alive(), "agent loop did not stop"


def test_dual_switches_between_the_hub_and_the_agent(tmp_path: Path) -> None:
    repo = push_fleet(tmp_path / "fleet", {"c1": "Dual"})
    with sims("c1") as sim:
        c1 = sim["c1"]
        folder = kubeconfigs(tmp_path / "kubeconfigs", sim)
        with stopping(push_hub(repo, folder, tmp_path / "push")) as hub:
            assert hub.push is not None
            hub.run_once()

            # AppPusher on: the agent only reports, the hub's worker applies.
            with agent(repo, c1, tmp_path / "a1", app_pusher=True) as on:
                wait_for(lambda: colour(c1) == "blue", step=hub.run_once, every=0.2,
                         what="the worker applies")
                assert set(hub.push.pushing()) == {"c1"}
                first = uid(c1)
                applied = inventory_keys(c1)
                assert applied == ["ConfigMap/app/settings", "Namespace//app"]
                wait_for(lambda: (s := status(repo, "c1")) and s.sync.result
                         is SyncResult.SYNCED and s.heartbeat and s.heartbeat.app_pusher,
                         what="the worker's sync beside the agent's heartbeat")
                assert on.last.delegated and not on.last.synced

            # AppPusher off: the agent takes over, the hub's worker stops.
            with agent(repo, c1, tmp_path / "a2", app_pusher=False) as off:
                wait_for(lambda: off.last.synced, what="the agent syncs")
                changes = {str(r.change) for r in off.last.report.objects.values()}
                assert Change.CREATED not in changes and not off.last.report.pruned
                wait_for(lambda: not hub.push.pushing(), step=hub.run_once, every=0.2,
                         what="the worker stops")
                assert hub.push.wait(timeout=20)
                edit(repo, "templates/config.yaml", "colour: blue", "colour: green")
                commit(repo, "green")
                wait_for(lambda: colour(c1) == "green", step=hub.run_once, every=0.2,
                         what="the agent applies the change")
                assert not hub.push.pushing()
                assert uid(c1) == first and inventory_keys(c1) == applied

            # On again: the worker comes back and applies the next change.
            with agent(repo, c1, tmp_path / "a3", app_pusher=True) as again:
                wait_for(lambda: hub.push.pushing(), step=hub.run_once, every=0.2,
                         what="the worker restarts")
                edit(repo, "templates/config.yaml", "colour: green", "colour: red")
                commit(repo, "red")
                wait_for(lambda: colour(c1) == "red", step=hub.run_once, every=0.2,
                         what="the worker applies the change")
                assert again.last.delegated
                assert uid(c1) == first and inventory_keys(c1) == applied
                # the worker writes its sync after the apply the colour shows, and the agent's
                # heartbeat (AppPusher on) may land first over the agent's own earlier sync of
                # "green": wait for the worker's sync of this commit, not any SYNCED
                red = git(repo, "rev-parse", "main").strip()
                final = wait_for(lambda: (s := status(repo, "c1")) and s.sync.result
                                 is SyncResult.SYNCED and s.sync.source_commit == red
                                 and s.heartbeat and s.heartbeat.app_pusher and s,
                                 what="both parts of the status, the sync of the red commit")
                assert not final.pruned
