"""A small fleet repo for the Git host tests, written straight into the served bare repository,
and `gitfleet` run as a real process (so its argv, output and files can be inspected)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.wire.status import ClusterStatus
from tests import harness
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.githosts.servers import cmdlines


def fleet_files(configs: dict[str, str], clusters: tuple[str, ...] = ("c1",)) -> dict[str, bytes]:
    files = {f"clusters/{c}.yaml": managed_cluster(
        c, f"11111111-1111-4111-8111-11111111111{i + 1}").encode()
        for i, c in enumerate(clusters)}
    files["templates/namespace.yaml"] = NAMESPACE.encode()
    files["policies/app.yaml"] = subscription(*(feed("ConfigMap", n) for n in configs)).encode()
    for name, value in configs.items():
        files[f"templates/{name}.yaml"] = config_map(name, f'v: "{value}"').encode()
    return files


def seed(bare: Path, configs: dict[str, str], clusters: tuple[str, ...] = ("c1",)) -> str:
    """Commit the fleet onto `main` of the served repository (as a person's push would)."""
    git = Git(bare)
    old = git.resolve("refs/heads/main")
    commit = git.commit(git.write_tree(fleet_files(configs, clusters)), [old] if old else [],
                        "fleet")
    git.update_refs([RefUpdate("refs/heads/main", commit, old)])
    return commit


def status_of(bare: Path, cluster: str = "c1") -> ClusterStatus | None:
    git = Git(bare)
    ref = Branches().status(cluster)
    raw = git.read_blob(ref, "status.yaml") if git.resolve(ref) else None
    return ClusterStatus.from_yaml(raw) if raw else None


def status_log(bare: Path, cluster: str = "c1") -> str:
    return Git(bare).run("log", "--format=%B", Branches().status(cluster)).decode()


def configs_in(sim: KubeSim) -> dict[str, str]:
    client = KubeClient(sim.api_client(), KubeSettings(field_manager="kubectl"))
    return {o["metadata"]["name"]: o["data"]["v"]
            for o in client.list_objects("v1", "ConfigMap", namespace="app").items
            if o["metadata"]["name"].startswith("cfg-")}


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    argv_seen: list[bytes] = field(default_factory=list)   # every process argv sampled


def gitfleet(*args: str, env: dict[str, str] | None = None, sample: bool = False,
             timeout: float = 120.0) -> Run:
    """`gitfleet ARGS` as a real process (tests.harness); with `sample`, the argv of every
    process on the machine is read every few milliseconds while it runs (git children too)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    seen: list[bytes] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.extend(argv for _pid, argv in cmdlines())
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True) if sample else None
    if watcher:
        watcher.start()
    try:
        proc = harness.gitfleet(*args, timeout=timeout, env=full_env)
    finally:
        done.set()
        if watcher:
            watcher.join()
    return Run(proc.returncode, proc.stdout, proc.stderr, seen)
