"""The hub's push worker registry, in-process: real Git repos, kubesim clusters.

Workers are spawned for clusters that become pushable (Push or Dual with the agent's AppPusher
on, or Push without agent under --push-agentless), stopped when they leave the fleet or stop
allowing it, and one cluster's broken kubeconfig or crashing worker touches no other.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.backoff import Backoff
from gitfleet.errors import InputError
from gitfleet.hub.pushworkers import PushTarget, push_target
from gitfleet.wire.status import HUB_WORKER_VERSION, ClusterStatus, SyncResult
from tests.hub.fleet import commit, git
from tests.hub.pushfleet import (
    cluster_yaml,
    colour,
    kubeconfigs,
    person,
    push_fleet,
    push_hub,
    report_heartbeat,
    sims,
    status,
    stopping,
    wait_for,
)

AGENT_ON = ClusterStatus.from_dict({"kind": "ClusterStatus", "cluster": "c", "heartbeat": {
    "appPusher": True, "agentVersion": "0.1.0"}})
AGENT_OFF = ClusterStatus.from_dict({"kind": "ClusterStatus", "cluster": "c", "heartbeat": {
    "appPusher": False, "agentVersion": "0.1.0"}})
BY_HUB = ClusterStatus.from_dict({"kind": "ClusterStatus", "cluster": "c", "heartbeat": {
    "appPusher": True, "agentVersion": HUB_WORKER_VERSION}})


@pytest.mark.parametrize(("mode", "reported", "agentless", "want"), [
    ("Pull", AGENT_ON, True, None),
    ("Dual", None, True, None),                       # Dual never without its agent's word
    ("Dual", AGENT_OFF, False, None),
    ("Dual", AGENT_ON, False, PushTarget("c", "Dual", own_heartbeat=False)),
    ("Push", AGENT_ON, False, PushTarget("c", "Push", own_heartbeat=False)),
    ("Push", AGENT_OFF, True, None),                  # an agent that refuses: nobody pushes
    ("Push", None, False, None),                      # agentless only when the hub is told
    ("Push", None, True, PushTarget("c", "Push", own_heartbeat=True)),
    ("Push", BY_HUB, True, PushTarget("c", "Push", own_heartbeat=True)),
    ("Push", BY_HUB, False, None),
    ("Push", ClusterStatus(cluster="c"), True, PushTarget("c", "Push", own_heartbeat=True)),
])
def test_who_is_pushed(mode: str, reported: ClusterStatus | None, agentless: bool,
                       want: PushTarget | None) -> None:
    assert push_target(cluster="c", sync_mode=mode, status=reported, agentless=agentless) == want


def test_workers_follow_the_fleet_and_app_pusher(tmp_path: Path) -> None:
    repo = push_fleet(tmp_path / "fleet", {"dual": "Dual", "pull": "Pull"})
    with sims("dual", "pull", "later") as sim:
        folder = kubeconfigs(tmp_path / "kubeconfigs", sim)
        with stopping(push_hub(repo, folder, tmp_path / "push", agentless=True)) as hub:
            assert hub.push is not None
            hub.run_once()
            assert hub.push.pushing() == {}               # Dual without its agent's word
            assert colour(sim["dual"]) is None

            report_heartbeat(repo, "dual", tmp_path / "agent", app_pusher=True)
            hub.run_once()
            assert set(hub.push.pushing()) == {"dual"}
            wait_for(lambda: colour(sim["dual"]) == "blue", what="the worker's apply")
            synced = wait_for(lambda: (s := status(repo, "dual")) and s.sync.result
                              is SyncResult.SYNCED and s, what="the worker's status")
            assert synced.heartbeat is not None and synced.heartbeat.agent_version == "0.1.0"
            assert colour(sim["pull"]) is None            # Pull: the agent's job, not the hub's

            commit(repo, "a Push cluster without agent", {
                "clusters/later.yaml": cluster_yaml("later", "Push", 9)})
            hub.run_once()
            assert set(hub.push.pushing()) == {"dual", "later"}
            wait_for(lambda: colour(sim["later"]) == "blue", what="the agentless worker")
            later = wait_for(lambda: (s := status(repo, "later")) and s.heartbeat and s,
                             what="the hub's heartbeat")
            assert later.heartbeat.agent_version == HUB_WORKER_VERSION
            assert later.heartbeat.app_pusher

            report_heartbeat(repo, "dual", tmp_path / "agent", app_pusher=False)
            commit(repo, "later leaves", {"clusters/later.yaml": None})
            hub.run_once()
            assert hub.push.pushing() == {}
            assert hub.push.stop(timeout=20)
            assert (hub.push.spawned, hub.push.stopped) == (2, 2)
            # Stopping a worker deletes nothing: what it applied stays.
            assert colour(sim["dual"]) == "blue" and colour(sim["later"]) == "blue"


def test_a_broken_kubeconfig_is_reported_on_that_cluster_only(tmp_path: Path) -> None:
    repo = push_fleet(tmp_path / "fleet", {"good": "Push", "broken": "Push",
                                           "missing": "Push"})
    with sims("good") as sim:
        folder = kubeconfigs(tmp_path / "kubeconfigs", sim)
        (folder / "broken.kubeconfig").write_text("clusters: [unclosed\n")
        with stopping(push_hub(repo, folder, tmp_path / "push", agentless=True)) as hub:
            hub.run_once()
            wait_for(lambda: colour(sim["good"]) == "blue", what="the good cluster applied")
            broken = wait_for(lambda: (s := status(repo, "broken")) and s.sync.result
                              is SyncResult.FAILED and s, what="the broken cluster's status")
            assert "kubeconfig does not parse" in broken.sync.message
            assert "broken.kubeconfig" in broken.sync.message
            assert hub.push is not None
            reported = hub.push.workers["broken"]
            hub.run_once()                  # reported once; not restarted every round
            assert hub.push.workers["broken"] is reported and reported.rounds_started == 0
            metrics = hub.metrics.text()
            assert "gitfleet_hub_push_workers 3.0" in metrics
            assert "gitfleet_hub_push_workers_broken 2.0" in metrics
            missing = wait_for(lambda: (s := status(repo, "missing")) and s, what="missing")
            assert missing.sync.result is SyncResult.FAILED
            assert "no kubeconfig for cluster missing" in missing.sync.message
            good = wait_for(lambda: (s := status(repo, "good")) and s.sync.result
                            is SyncResult.SYNCED and s, what="the good cluster's status")
            assert good.sync.message == "" or "kubeconfig" not in good.sync.message

            # Fixed: the worker is restarted with the new kubeconfig and applies.
            with sims("broken") as fixed:
                kubeconfigs(folder, fixed)
                (folder / "broken.kubeconfig").unlink()
                wait_for(lambda: colour(fixed["broken"]) == "blue", step=hub.run_once,
                         every=0.2, what="the fixed cluster applied")
                assert hub.push is not None
                assert hub.push.stop(timeout=20)


def test_a_crashing_worker_is_restarted_alone(tmp_path: Path) -> None:
    repo = push_fleet(tmp_path / "fleet", {"a": "Push", "b": "Push"})
    with sims("a", "b") as sim:
        folder = kubeconfigs(tmp_path / "kubeconfigs", sim)
        workdir = tmp_path / "push"
        workdir.mkdir()
        (workdir / "b").write_text("a file where worker b wants its Git repository")
        with stopping(push_hub(repo, folder, workdir, agentless=True,
                               restart_backoff=Backoff(base=0.05, maximum=0.2))) as hub:
            assert hub.push is not None
            hub.run_once()
            wait_for(lambda: colour(sim["a"]) == "blue", what="worker a applies")
            worker = hub.push.workers["b"]
            wait_for(lambda: worker.restarts >= 2, what="worker b restarted")
            assert colour(sim["b"]) is None
            assert worker.last_error
            (workdir / "b").unlink()
            wait_for(lambda: colour(sim["b"]) == "blue", what="worker b recovered")
            assert hub.push.workers["b"] is worker        # the same worker, restarted


def test_a_worker_with_recovery_puts_drift_back(tmp_path: Path) -> None:
    repo = push_fleet(tmp_path / "fleet", {"a": "Push"})
    with sims("a") as sim:
        folder = kubeconfigs(tmp_path / "kubeconfigs", sim)
        with stopping(push_hub(repo, folder, tmp_path / "push", agentless=True, recovery=True,
                               interval=30.0)) as hub:
            hub.run_once()
            wait_for(lambda: colour(sim["a"]) == "blue", what="the worker applies")
            wait_for(lambda: (s := status(repo, "a")) and s.sync.result is SyncResult.SYNCED,
                     what="synced")
            person(sim["a"]).apply({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"namespace": "app", "name": "settings"},
                                    "data": {"colour": "black"}}, force=True)
            # Within seconds, not at the next 30 s round: the worker's watch repaired it.
            wait_for(lambda: colour(sim["a"]) == "blue", timeout=25, what="drift put back")
            wait_for(lambda: "recovered ConfigMap app/settings" in git(
                repo, "log", "-5", "--format=%B", "refs/heads/gitfleet/status/a"),
                what="the repair on the status branch")


def test_with_client_makes_one_off_calls(tmp_path: Path) -> None:
    repo = push_fleet(tmp_path / "fleet", {"a": "Push"})
    with sims("a") as sim:
        folder = kubeconfigs(tmp_path / "kubeconfigs", sim)
        with stopping(push_hub(repo, folder, tmp_path / "push")) as hub:
            assert hub.push is not None
            uid = hub.push.with_client("a", lambda kube: kube.namespace_uid("kube-system"))
            assert uid == sim["a"].namespace_uid()
            with pytest.raises(InputError, match="no kubeconfig for cluster nope"):
                hub.push.with_client("nope", lambda kube: kube.version())
