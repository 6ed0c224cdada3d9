"""Every auth and transport fault of a real Git host, as an agent and a hub meet it: one clear
message naming the Git command, the (redacted) repository and what to do; exit 3 (the fault
code) whether or not a branch was fetched before; the cluster keeps what it runs (nothing
pruned, although the newer state would prune); and once the remote is usable again, the agent
catches up and says in its status branch what happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitfleet.agent.agent import Agent, AgentSettings
from gitfleet.clock import FakeClock
from gitfleet.kube.client import KubeClient
from gitfleet.state.credentials import TokenFile
from gitfleet.state.transport import GitTransport
from gitfleet.state.urls import credential_scope
from tests.githosts.conftest import READER_TOKEN, TOKEN
from tests.githosts.fleet import configs_in, gitfleet, seed, status_log
from tests.githosts.servers import HttpsGit, SshGit, ssh_keypair

pytestmark = pytest.mark.slow


def _render(bare: Path, configs: dict[str, str]) -> None:
    seed(bare, configs)
    hub = gitfleet("hub", "--repo", str(bare), "--once", "--no-fleet-status")
    assert hub.code == 0, hub.stderr


def _agent(url: str, kubeconfig: Path, workdir: Path, *flags: str):
    return gitfleet("agent", "--repo", url, "--cluster", "c1", "--once", "--no-register",
                    "--kubeconfig", str(kubeconfig), "--workdir", str(workdir), *flags)


def test_https_faults_keep_the_cluster_and_exit_3(https_host: HttpsGit, kubesim,
                                                  tmp_path: Path) -> None:
    bare = https_host.base / "fleet.git"
    _render(bare, {"cfg-a": "1", "cfg-b": "1"})
    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    url = https_host.url("fleet.git")
    token = tmp_path / "token"
    token.write_text(TOKEN)
    ca = ["--git-ca-file", str(https_host.ca.cert)]
    good = ["--git-token-file", str(token), "--git-username", "gitfleet", *ca]
    workdir = tmp_path / "agent"
    first = _agent(url, kubeconfig, workdir, *good)
    assert first.code == 0, first.stderr
    assert configs_in(sim) == {"cfg-a": "1", "cfg-b": "1"}
    _render(bare, {"cfg-a": "1"})     # the next state drops cfg-b: a sync would prune it

    def fails(expected: str, *flags: str, repo: str = url) -> str:
        run = _agent(repo, kubeconfig, workdir, *flags)
        assert run.code == 3, run.stderr
        assert expected in run.stderr, run.stderr
        assert "not registered" not in run.stderr and "Traceback" not in run.stderr
        assert "fetch.unpackLimit" not in run.stderr
        assert TOKEN not in run.stderr + run.stdout
        assert configs_in(sim) == {"cfg-a": "1", "cfg-b": "1"}   # kept, nothing pruned
        return run.stderr

    # a revoked token: the server no longer takes it
    https_host.set_users({"gitfleet": "tok-new", "reader": READER_TOKEN})
    err = fails(f"git fetch {url}: authentication failed; the host refused the token", *good)
    assert "--git-token-file" in err
    https_host.set_users({"gitfleet": TOKEN, "reader": READER_TOKEN})
    # no token at all
    fails(f"git fetch {url}: authentication failed; the host asks for credentials and none "
          "were given", *ca)
    # the private CA not given
    fails(f"git fetch {url}: TLS certificate verification failed; the server's certificate is "
          "not signed by a trusted CA: give the CA with --git-ca-file",
          "--git-token-file", str(token), "--git-username", "gitfleet")
    # a repository that is not there
    fails(f"git fetch {https_host.url('nope.git')}: repository not found", *good,
          repo=https_host.url("nope.git"))
    # a token that may read but not write: the fetch works (state applied), the status push
    # is refused (403)
    reader = tmp_path / "reader"
    reader.write_text(READER_TOKEN)
    run = _agent(url, kubeconfig, workdir, "--git-token-file", str(reader), "--git-username",
                 "reader", *ca)
    assert run.code == 3, run.stderr
    assert f"git push {url}: permission denied" in run.stderr
    assert configs_in(sim) == {"cfg-a": "1"}    # what it fetched was applied
    _render(bare, {"cfg-a": "3"})
    # the server is down, with a cached branch: a fault (3), not "objects failed" (1)
    https_host.down()
    down = _agent(url, kubeconfig, workdir, *good)
    assert down.code == 3, down.stderr
    assert f"git fetch {url}: the Git server is unreachable" in down.stderr
    assert configs_in(sim) == {"cfg-a": "1"}
    https_host.up()
    back = _agent(url, kubeconfig, workdir, *good)
    assert back.code == 0, back.stderr
    assert configs_in(sim) == {"cfg-a": "3"}


def test_hub_reports_tls_and_auth_faults_with_exit_3(https_host: HttpsGit,
                                                     tmp_path: Path) -> None:
    seed(https_host.base / "fleet.git", {"cfg-a": "1"})
    url = https_host.url("fleet.git")
    base = ["hub", "--repo", url, "--once", "--no-fleet-status", "--cache-dir",
            str(tmp_path / "cache")]
    tls = gitfleet(*base)
    assert tls.code == 3
    assert f"error: git fetch {url}: TLS certificate verification failed" in tls.stderr
    token = tmp_path / "token"
    token.write_text("wrong")
    auth = gitfleet(*base, "--git-ca-file", str(https_host.ca.cert), "--git-token-file",
                    str(token), "--git-username", "gitfleet")
    assert auth.code == 3
    assert f"error: git fetch {url}: authentication failed" in auth.stderr
    assert "Traceback" not in auth.stderr


def test_ssh_hub_and_agent_and_their_faults(ssh_host: SshGit, kubesim, tmp_path: Path) -> None:
    served = tmp_path / "served"
    bare = served / "fleet.git"
    from gitfleet.state.git import init_repo

    init_repo(bare, bare=True)
    seed(bare, {"cfg-a": "1", "cfg-b": "1"})
    deploy = tmp_path / "deploy_key"
    ssh_host.authorize(ssh_keypair(deploy, "c1-deploy"))
    url = ssh_host.url(bare)
    good = ["--git-ssh-key", str(deploy), "--git-known-hosts", str(ssh_host.known_hosts)]
    # the hub over SSH too (deploy key, pinned host key)
    hub = gitfleet("hub", "--repo", url, "--once", "--no-fleet-status", "--cache-dir",
                   str(tmp_path / "hub"), *good)
    assert hub.code == 0, hub.stderr
    assert "wrote state" in hub.stdout
    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    workdir = tmp_path / "agent"
    first = _agent(url, kubeconfig, workdir, *good)
    assert first.code == 0, first.stderr
    _render(bare, {"cfg-a": "1"})

    stranger = tmp_path / "stranger_key"
    ssh_keypair(stranger)
    wrong = _agent(url, kubeconfig, workdir, "--git-ssh-key", str(stranger),
                   "--git-known-hosts", str(ssh_host.known_hosts))
    assert wrong.code == 3, wrong.stderr
    assert f"git fetch {url}: authentication failed; the host refused the SSH key" in wrong.stderr

    impostor = tmp_path / "impostor_known_hosts"
    other = ssh_keypair(tmp_path / "other_host_key", "host")
    impostor.write_text(f"[127.0.0.1]:{ssh_host.port} {other}\n")
    changed = _agent(url, kubeconfig, workdir, "--git-ssh-key", str(deploy),
                     "--git-known-hosts", str(impostor))
    assert changed.code == 3, changed.stderr
    assert f"git fetch {url}: SSH host key verification failed" in changed.stderr
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in changed.stderr

    unknown = tmp_path / "empty_known_hosts"
    unknown.write_text("")
    new = _agent(url, kubeconfig, workdir, "--git-ssh-key", str(deploy),
                 "--git-known-hosts", str(unknown))
    assert new.code == 3, new.stderr
    assert f"git fetch {url}: SSH host key verification failed" in new.stderr
    assert configs_in(sim) == {"cfg-a": "1", "cfg-b": "1"}   # nothing pruned through it all
    assert _agent(url, kubeconfig, workdir, *good).code == 0
    assert configs_in(sim) == {"cfg-a": "1"}


def test_daemon_reports_the_outage_in_its_status_once_pushes_go_through(
        https_host: HttpsGit, kubesim, tmp_path: Path) -> None:
    bare = https_host.base / "fleet.git"
    _render(bare, {"cfg-a": "1"})
    url = https_host.url("fleet.git")
    token = tmp_path / "token"
    token.write_text(TOKEN)
    transport = GitTransport(token=TokenFile(token), username="gitfleet",
                             scope=credential_scope(url), ca_file=https_host.ca.cert)
    sim = kubesim()
    clock = FakeClock()
    agent = Agent(AgentSettings(repo_url=url, cluster="c1", workdir=tmp_path / "agent",
                                register=False, git_transport=transport),
                  KubeClient(sim.api_client()), clock=clock)
    agent.step()
    assert configs_in(sim) == {"cfg-a": "1"}
    https_host.set_users({"gitfleet": "rotated-but-not-mounted-yet"})
    _render(bare, {"cfg-b": "1"})
    for _ in range(5):          # backs off, keeps running from the last verified commit
        clock.advance(15)
        agent.step()
        assert agent.last.remote_fault.startswith(f"git fetch {url}: authentication failed") \
            or not agent.last.fetched
    assert configs_in(sim) == {"cfg-a": "1"}
    token.write_text("rotated-but-not-mounted-yet")     # the Secret's new value arrives
    clock.advance(15)
    agent.step()
    assert agent.last.remote_fault == ""
    assert configs_in(sim) == {"cfg-b": "1"}
    log = status_log(bare)
    assert "git remote unusable from " in log
    assert "authentication failed" in log
    assert "nothing pruned for it" in log
    assert "rotated-but-not-mounted-yet" not in log
