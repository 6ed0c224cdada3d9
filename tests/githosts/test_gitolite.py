"""Scoped writes on a self-hosted server with gitolite's per-branch rules: the hub writes every
gitfleet branch, an agent may write only its own status and registration branches; hub and
agent run end to end over SSH, and a write outside the agent's branches is refused with
gitolite's DENIED read as "permission denied". The rules are the ones docs/git-hosts.md shows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.remoteerrors import PermissionDenied
from gitfleet.state.transport import GitTransport
from gitfleet.wire.status import SyncResult
from tests.githosts.conftest import _require
from tests.githosts.fleet import configs_in, fleet_files, gitfleet, status_of
from tests.githosts.servers import Gitolite, SshGit, ssh_keypair

pytestmark = pytest.mark.slow

RULES = """@agents = c1

repo gitolite-admin
    RW+                                       =   admin

repo fleet
    RW+                                       =   hub
    R                                         =   @agents
    RW+ refs/heads/gitfleet/status/c1$        =   c1
    RW+ refs/heads/gitfleet/registrations/c1$ =   c1
"""


@pytest.fixture
def gitolite(tmp_path: Path) -> Iterator[tuple[Gitolite, dict[str, Path]]]:
    _require("/usr/sbin/sshd", "ssh", "gitolite")
    sshd = SshGit(tmp_path / "sshd")
    gl = Gitolite(tmp_path / "gitolite", sshd)
    keys = {}
    for name in ("admin", "hub", "c1"):
        keys[name] = tmp_path / "keys" / name
        keys[name].parent.mkdir(exist_ok=True)
        line = ssh_keypair(keys[name], name)
        if name != "admin":
            gl.user(name, line)
    gl.setup(keys["admin"].with_suffix(".pub"))
    gl.configure(RULES)
    sshd.up()
    try:
        yield gl, keys
    finally:
        sshd.down()


def _transport(key: Path, gl: Gitolite) -> GitTransport:
    return GitTransport(ssh_key=key, known_hosts=gl.sshd.known_hosts)


def test_hub_and_agent_through_gitolite_branch_rules(gitolite, kubesim, tmp_path: Path) -> None:
    gl, keys = gitolite
    url = gl.url("fleet")
    # a person (here with the hub's key) pushes the fleet repo's main branch
    local = init_repo(tmp_path / "person.git", bare=True, transport=_transport(keys["hub"], gl))
    commit = local.commit(local.write_tree(fleet_files({"cfg-a": "1"})), [], "fleet")
    local.push(url, [RefUpdate("refs/heads/main", commit, None)])

    ssh = ["--git-known-hosts", str(gl.sshd.known_hosts)]
    hub = gitfleet("hub", "--repo", url, "--once", "--no-fleet-status", "--cache-dir",
                   str(tmp_path / "hub"), "--git-ssh-key", str(keys["hub"]), *ssh)
    assert hub.code == 0, hub.stderr

    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    agent = gitfleet("agent", "--repo", url, "--cluster", "c1", "--once", "--no-register",
                     "--kubeconfig", str(kubeconfig), "--workdir", str(tmp_path / "agent"),
                     "--git-ssh-key", str(keys["c1"]), *ssh)
    assert agent.code == 0, agent.stderr
    assert configs_in(sim) == {"cfg-a": "1"}
    status = status_of(gl.repo_path("fleet"))
    assert status is not None and status.sync.result is SyncResult.SYNCED

    # the agent's key may not move its cluster branch (only the hub writes it) ...
    c1 = Git(tmp_path / "agent", transport=_transport(keys["c1"], gl))
    tip = c1.resolve("refs/remotes/origin/gitfleet/clusters/c1")
    assert tip is not None
    forged = c1.commit(c1.write_tree({"x": b"y"}), [tip], "forged")
    with pytest.raises(PermissionDenied) as denied:
        c1.push(url, [RefUpdate("refs/heads/gitfleet/clusters/c1", forged, tip)])
    assert str(denied.value).startswith(f"git push {url}: permission denied")
    assert "DENIED" in str(denied.value)
    # ... nor another cluster's status, nor main
    tips = c1.ls_remote(url)
    for ref in ("refs/heads/gitfleet/status/c2", "refs/heads/main"):
        with pytest.raises(PermissionDenied):
            c1.push(url, [RefUpdate(ref, forged, tips.get(ref))])
    # a repository c1 may not read (or that does not exist: gitolite says the same)
    with pytest.raises(PermissionDenied) as hidden:
        c1.fetch(gl.url("gitolite-admin"), ["+refs/heads/*:refs/hidden/*"])
    assert "does not exist" in str(hidden.value)
    # and the hub round after the agent's status push still works (it folds status)
    again = gitfleet("hub", "--repo", url, "--once", "--cache-dir", str(tmp_path / "hub"),
                     "--git-ssh-key", str(keys["hub"]), *ssh)
    assert again.code == 0, again.stderr
