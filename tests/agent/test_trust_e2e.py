"""Signed state end to end through real processes: `gitfleet hub --signing-key` writes the
state into a bare repository (reached by a `file://` URL), `gitfleet agent --trust-hub-key`
applies it to a kubesim cluster; a commit pushed onto the cluster branch with plain git is
refused, nothing is pruned, and the status branch says why."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitfleet.state.signing import SigningKey
from gitfleet.wire.status import SyncResult
from tests.fleetfixtures import NAMESPACE, config_map, feed, managed_cluster, subscription
from tests.harness import Remote, git, gitfleet_here, person, push, status_of

pytestmark = pytest.mark.slow

FLEET = {
    "clusters/c1.yaml": managed_cluster("c1", "11111111-1111-4111-8111-111111111111"),
    "templates/namespace.yaml": NAMESPACE,
}


def _git(work: Path, *args: str) -> str:
    """git as Mallory, someone who can push to the fleet repo."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_AUTHOR_NAME="mallory",
               GIT_AUTHOR_EMAIL="m@example.com", GIT_COMMITTER_NAME="mallory",
               GIT_COMMITTER_EMAIL="m@example.com")
    return git(work, *args, env=env, timeout=60)


def _fleet(work: Path, configs: dict[str, str], message: str) -> None:
    files = dict(FLEET)
    files["policies/app.yaml"] = subscription(*(feed("ConfigMap", n) for n in configs))
    for old in (work / "templates").glob("cfg-*.yaml"):
        old.unlink()
    for name, value in configs.items():
        files[f"templates/{name}.yaml"] = config_map(name, f'v: "{value}"')
    push(work, message, dict(files))


def _configs(sim) -> dict[str, str]:
    return {o["metadata"]["name"]: o["data"]["v"]
            for o in person(sim).list_objects("v1", "ConfigMap", namespace="app").items
            if o["metadata"]["name"].startswith("cfg-")}


def test_signed_state_is_applied_and_a_pushed_forgery_is_refused(
        remote: Remote, kubesim, tmp_path: Path) -> None:
    key = SigningKey.generate()
    key.save(tmp_path / "hub_key")
    (tmp_path / "hub.pub").write_text(f"# the hub\n{key.public_line('hub')}\n")
    work = tmp_path / "work"
    _git(tmp_path, "clone", "-q", str(remote.git.path), str(work))
    _fleet(work, {"cfg-a": "1", "cfg-b": "1"}, "fleet: two configs")

    hub = ["hub", "--repo", str(remote.git.path), "--once", "--no-fleet-status",
           "--signing-key", str(tmp_path / "hub_key")]
    done = gitfleet_here(*hub)
    assert done.returncode == 0, done.stderr

    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    agent = ["agent", "--repo", remote.url, "--cluster", "c1", "--once", "--no-register",
             "--kubeconfig", str(kubeconfig), "--workdir", str(tmp_path / "agent"),
             "--trust-hub-key", str(tmp_path / "hub.pub")]
    applied = gitfleet_here(*agent)
    assert applied.returncode == 0, applied.stderr
    assert "no --trust-hub-key" not in applied.stderr
    assert _configs(sim) == {"cfg-a": "1", "cfg-b": "1"}
    good = status_of(remote)
    assert good is not None and good.sync.result == SyncResult.SYNCED

    # Mallory can push to the cluster branch: drop cfg-b, change cfg-a, with plain git
    forge = tmp_path / "forge"
    _git(tmp_path, "clone", "-q", "--branch", "gitfleet/clusters/c1", remote.url, str(forge))
    folder = next(p for p in forge.rglob("*ConfigMap_app_cfg-b*"))
    folder.unlink()
    target = next(p for p in forge.rglob("*ConfigMap_app_cfg-a*"))
    target.write_text(target.read_text().replace("v: '1'", "v: evil").replace('v: "1"', "v: evil"))
    _git(forge, "commit", "-q", "-am", "nothing to see here")
    _git(forge, "push", "-q", "origin", "HEAD:refs/heads/gitfleet/clusters/c1")
    forged = _git(forge, "rev-parse", "HEAD").strip()

    refused = gitfleet_here(*agent)
    assert refused.returncode == 5, refused.stderr
    assert f"cluster commit {forged[:12]} refused: unsigned" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert _configs(sim) == {"cfg-a": "1", "cfg-b": "1"}           # nothing applied or pruned
    status = status_of(remote)
    assert status is not None and status.sync.result == SyncResult.REFUSED
    assert status.sync.message == f"cluster commit {forged[:12]} refused: unsigned"
    assert status.sync.cluster_commit == good.sync.cluster_commit

    # `git verify-commit` tells the same story (where OpenSSH is installed)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"hub {key.public_line()}\n")
    check = ["-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={allowed}",
             "verify-commit"]
    if subprocess.run(["which", "ssh-keygen"], capture_output=True).returncode == 0:
        _git(remote.git.path, *check, good.sync.cluster_commit)
        with pytest.raises(subprocess.CalledProcessError):
            _git(remote.git.path, *check, forged)

    # the next signed render moves the branch on (from the forged tip) and is applied
    _fleet(work, {"cfg-a": "2"}, "fleet: one config")
    done = gitfleet_here(*hub)
    assert done.returncode == 0, done.stderr
    again = gitfleet_here(*agent)
    assert again.returncode == 0, again.stderr
    assert _configs(sim) == {"cfg-a": "2"}
    status = status_of(remote)
    assert status is not None and status.sync.result == SyncResult.SYNCED
