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
from tests.githosts.servers import cmdlines

CLUSTER = """apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata:
  name: {name}
  namespace: gitfleet-{name}
  labels: {{env: test}}
spec:
  clusterId: 11111111-1111-4111-8111-11111111111{n}
  syncMode: Pull
"""
SUBSCRIPTION = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata:
  name: app
  namespace: app
spec:
  subscribers:
    - clusterAffinity:
        matchLabels: {env: test}
  feeds:
    - {apiVersion: v1, kind: Namespace, name: app}
"""
CONFIG = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: app
data:
  v: "{value}"
"""


def fleet_files(configs: dict[str, str], clusters: tuple[str, ...] = ("c1",)) -> dict[str, bytes]:
    files = {f"clusters/{c}.yaml": CLUSTER.format(name=c, n=i + 1).encode()
             for i, c in enumerate(clusters)}
    files["templates/namespace.yaml"] = b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n"
    files["policies/app.yaml"] = (SUBSCRIPTION + "".join(
        f"    - {{apiVersion: v1, kind: ConfigMap, name: {n}}}\n" for n in configs)).encode()
    for name, value in configs.items():
        files[f"templates/{name}.yaml"] = CONFIG.format(name=name, value=value).encode()
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
