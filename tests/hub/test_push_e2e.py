"""End to end: `gitfleet hub` as a process pushes to a Push cluster that has no agent.

The fleet repo is served by `git daemon`; the cluster is a kubesim whose kubeconfig the hub
holds in a folder (or in a Secret of the hub's own cluster). Nothing but the hub touches the
cluster, and its status branch tells what the hub applied, with heartbeats the hub wrote.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from gitfleet.kube.client import KubeClient
from gitfleet.wire.status import HUB_WORKER_VERSION, SyncResult
from tests.gitserver import git_daemon
from tests.harness import gitfleet_here
from tests.hub.fleet import ROOT, commit, edit, git, hub_cmd, hub_process
from tests.hub.pushfleet import colour, kubeconfigs, push_fleet, sims, status, wait_for

pytestmark = pytest.mark.slow


def served(tmp_path: Path, clusters: dict[str, str]) -> tuple[Path, Path]:
    """(work tree, served bare repo) of a push fleet."""
    work = push_fleet(tmp_path / "work", clusters)
    base = tmp_path / "served"
    base.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(work), str(base / "fleet.git"))
    git(work, "remote", "add", "origin", str(base / "fleet.git"))
    return work, base


def test_hub_pushes_to_an_agentless_cluster(tmp_path: Path) -> None:
    work, base = served(tmp_path, {"edge": "Push", "pulled": "Pull"})
    bare = base / "fleet.git"
    with sims("edge") as sim, git_daemon(base) as url:
        folder = kubeconfigs(tmp_path / "kubeconfigs", sim)
        log = tmp_path / "hub.log"
        with hub_process("--repo", f"{url}/fleet.git", "--cache-dir", str(tmp_path / "cache"),
                         "--interval", "0.3", "--push-kubeconfigs", str(folder),
                         "--push-agentless", "--push-interval", "0.3",
                         "--push-heartbeat-interval", "2", log=log) as proc:
            wait_for(lambda: colour(sim["edge"]) == "blue", timeout=60,
                     what="the hub's worker applies")
            reported = wait_for(lambda: (s := status(bare, "edge")) and s.sync.result
                                is SyncResult.SYNCED and s, timeout=30, what="status")
            assert reported.heartbeat is not None
            assert reported.heartbeat.agent_version == HUB_WORKER_VERSION
            assert reported.heartbeat.ready
            assert status(bare, "pulled") is None          # a Pull cluster is its agent's

            edit(work, "templates/config.yaml", "colour: blue", "colour: green")
            commit(work, "green")
            git(work, "push", "-q", "origin", "main")
            wait_for(lambda: colour(sim["edge"]) == "green", timeout=60,
                     what="the pushed change applied by the hub")
            assert proc.poll() is None
        assert proc.returncode == 0
        text = log.read_text()
        assert "push worker started" in text and "cluster=edge" in text
        assert "Traceback" not in text


def test_hub_once_reads_kubeconfigs_from_a_secret(tmp_path: Path) -> None:
    repo = push_fleet(tmp_path / "fleet", {"edge": "Push", "gone": "Push"})
    with sims("edge", "home") as sim:
        edge_config = yaml.safe_dump(sim["edge"].kubeconfig()).encode()
        KubeClient(sim["home"].api_client()).create({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gitfleet"}})
        KubeClient(sim["home"].api_client()).create({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "push-kubeconfigs", "namespace": "gitfleet"},
            "data": {"edge": base64.b64encode(edge_config).decode()}})
        hub_kubeconfig = sim["home"].write_kubeconfig(tmp_path / "home.yaml")
        env = dict(os.environ, KUBECONFIG=str(hub_kubeconfig))
        done = subprocess.run(
            hub_cmd("--repo", str(repo), "--once", "--cache-dir", str(tmp_path / "cache"),
                    "--push-kubeconfig-secret", "gitfleet/push-kubeconfigs",
                    "--push-agentless"),
            capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
        assert done.returncode == 0, done.stderr
        assert colour(sim["edge"]) == "blue"
        edge = status(repo, "edge")
        assert edge is not None and edge.sync.result is SyncResult.SYNCED
        gone = status(repo, "gone")
        assert gone is not None and gone.sync.result is SyncResult.FAILED
        assert "Secret gitfleet/push-kubeconfigs has no key gone" in gone.sync.message
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("--push-kubeconfigs", "/nonexistent/kubeconfigs"), "--push-kubeconfigs: not a folder"),
    (("--push-kubeconfigs", ".", "--push-kubeconfig-secret", "ns/name"),
     "give --push-kubeconfigs or --push-kubeconfig-secret, not both"),
    (("--push-kubeconfig-secret", "just-a-name"),
     "--push-kubeconfig-secret wants NAMESPACE/NAME"),
])
def test_bad_push_flags_are_refused_clearly(tmp_path: Path, args: tuple[str, ...],
                                            message: str) -> None:
    repo = push_fleet(tmp_path / "fleet", {"edge": "Push"})
    done = gitfleet_here("hub", "--repo", str(repo), "--once", "--cache-dir",
                         str(tmp_path / "cache"), *args)          # in this process
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not git(repo, "for-each-ref", "refs/heads/gitfleet/").strip()   # nothing rendered
