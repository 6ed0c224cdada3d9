"""Helpers of the push-mode tests: a small fleet repo whose clusters are Push, Dual or Pull,
kubesim clusters with kubeconfigs in a folder, and an agent's heartbeat written the way an
agent writes it (through the status-branch writer)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.cli.pushagent import AgentPush
from gitfleet.clock import isoformat
from gitfleet.hub.hub import Hub
from gitfleet.hub.kubeconfigs import KubeconfigDir
from gitfleet.hub.pushworkers import PushRegistry, PushSettings
from gitfleet.hub.settings import HubSettings
from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import init_repo
from gitfleet.state.store import open_store
from gitfleet.wire.status import ClusterStatus, Heartbeat
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import wait_for as wait_for  # the push tests wait with the harness
from tests.hub.fleet import commit, git

SUBSCRIPTION = subscription(feed("ConfigMap", "settings", namespace="app"))



def cluster_yaml(name: str, mode: str, n: int = 1) -> str:
    return managed_cluster(name, f"00000000-0000-4000-8000-{n:012d}", sync_mode=mode)


def push_fleet(path: Path, clusters: dict[str, str], *, colour: str = "blue") -> Path:
    """A fleet repo (work tree, branch main): `clusters` name -> syncMode, one app."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    files = {f"clusters/{name}.yaml": cluster_yaml(name, mode, i)
             for i, (name, mode) in enumerate(sorted(clusters.items()), 1)}
    files.update({"policies/app.yaml": SUBSCRIPTION, "templates/namespace.yaml": NAMESPACE,
                  "templates/config.yaml": config_map("settings", f"colour: {colour}")})
    commit(path, "fleet", files)
    return path


def person(sim: KubeSim) -> KubeClient:
    """Someone with kubectl: a client of their own, to look at the cluster."""
    return KubeClient(sim.api_client(), KubeSettings(field_manager="kubectl"))


def colour(sim: KubeSim) -> str | None:
    cm = person(sim).get("v1", "ConfigMap", "app", "settings")
    return None if cm is None else str((cm.get("data") or {}).get("colour"))


def uid(sim: KubeSim) -> str:
    cm = person(sim).get("v1", "ConfigMap", "app", "settings")
    return "" if cm is None else str(cm["metadata"]["uid"])


def inventory_keys(sim: KubeSim) -> list[str]:
    import json

    cm = person(sim).get("v1", "ConfigMap", "gitfleet-system", "gitfleet-inventory")
    if cm is None:
        return []
    doc = json.loads(cm["data"]["inventory.json"])
    return sorted(f"{o['kind']}/{o['namespace']}/{o['name']}" for o in doc["objects"])


def status(repo: Path, cluster: str) -> ClusterStatus | None:
    ref = Branches().status(cluster)
    if not git(repo, "for-each-ref", ref).strip():
        return None
    return ClusterStatus.from_yaml(git(repo, "show", f"{ref}:status.yaml"))


def report_heartbeat(repo: Path, cluster: str, workdir: Path, *, app_pusher: bool) -> None:
    """What an agent with AppPusher on/off reports, written through the agent's writer (over
    whatever the hub's worker wrote in the sync part)."""
    branch = StatusBranch(init_repo(workdir, bare=True), str(repo), Branches(), cluster)
    tip = branch.load() or ClusterStatus(cluster=cluster)
    heartbeat = Heartbeat(time=isoformat(time.time()), interval_seconds=60, healthz=True,
                          livez=True, readyz=True, app_pusher=app_pusher,
                          agent_version="0.1.0")
    branch.write(_with(tip, heartbeat), when=time.time(),
                 rebase=lambda t: _with(t or tip, heartbeat))


def _with(status: ClusterStatus, heartbeat: Heartbeat) -> ClusterStatus:
    from dataclasses import replace

    return replace(status, heartbeat=heartbeat)


def kubeconfigs(folder: Path, sims: dict[str, KubeSim]) -> Path:
    for name, sim in sims.items():
        sim.write_kubeconfig(folder / f"{name}.yaml")
    return folder


def push_hub(repo: Path, folder: Path, workdir: Path, **settings: Any) -> Hub:
    settings.setdefault("interval", 0.2)
    registry = PushRegistry(agents=AgentPush(), repo_url=str(repo), workdir=workdir,
                            kubeconfigs=KubeconfigDir(folder), settings=PushSettings(**settings))
    return Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False), push=registry)


@contextmanager
def stopping(hub: Hub) -> Iterator[Hub]:
    """The hub's push workers are always stopped (bounded) at the end of the block."""
    try:
        yield hub
    finally:
        assert hub.push is not None
        assert hub.push.stop(timeout=20), "push workers did not stop"


@contextmanager
def sims(*names: str) -> Iterator[dict[str, KubeSim]]:
    started: dict[str, KubeSim] = {}
    try:
        for name in names:
            started[name] = KubeSim(nodes=1, controller_delay=0.05).start()
        yield started
    finally:
        for sim in started.values():
            sim.stop()
