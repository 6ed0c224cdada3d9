"""Zero trust end to end: `git daemon` serving the fleet repo with gitfleet's pre-receive hook,
a signing hub process, two agents with their own keys and two kubesim clusters, and a SOPS-sealed
Secret. Signed status is folded; a forged status is refused by the hook, and when written into
the repository around the hook, not folded by the hub; a forged cluster-branch commit is refused
by the hook; the Secret's plaintext is in no ref, no commit and no log."""

from __future__ import annotations

import base64
import logging
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

import pyrage
import pytest
import yaml

from gitfleet.clock import SystemClock
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.state.signing import SigningKey, TrustedKeys
from tests.fleetfixtures import managed_cluster
from tests.gitserver import git_daemon
from tests.harness import Remote, git, gitfleet_here, person, process, running, wait_for
from tests.secrets.test_e2e_sops import PLAINTEXT, push_sealed_app

# a hub process, a git daemon and two agents: under load (8 and above) the first syncs alone
# can take a minute, so its waits are 120 s and the test may run past the suite's 180 s
pytestmark = [pytest.mark.slow, pytest.mark.timeout(480)]

BRANCHES = Branches()
CLUSTERS = ("c1", "c2")


def _hub(url: str, key: Path, log: Path) -> AbstractContextManager[object]:
    return process([sys.executable, "-m", "gitfleet", "-vv", "hub", "--repo", url,
                    "--interval", "1s", "--signing-key", str(key)], log=log)


def _secret_value(sim) -> str | None:
    live = person(sim).get("v1", "Secret", "app", "db")
    if live is None or "DATABASE_URL" not in (live.get("data") or {}):
        return None
    return base64.b64decode(live["data"]["DATABASE_URL"]).decode()


def _fleet_status(bare: Git, cluster: str) -> dict | None:
    raw = bare.read_blob(BRANCHES.fleet_status, f"clusters/{cluster}.yaml") \
        if bare.resolve(BRANCHES.fleet_status) else None
    return yaml.safe_load(raw) if raw else None


def _push(pusher: Path, url: str, spec: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", url, spec], cwd=pusher, capture_output=True,
                          text=True, timeout=60)


def test_signed_status_is_folded_and_forgeries_are_refused_or_ignored(
        kubesim, make_agent, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    base = tmp_path / "srv"
    bare_path = base / "fleet.git"
    bare = init_repo(bare_path, bare=True)

    # keys: the hub's, and each agent's own (its public half in its ManagedCluster)
    hub_key = SigningKey.generate(comment="hub")
    hub_key.save(tmp_path / "hub.key")
    (tmp_path / "hub.pub").write_text(hub_key.public_line() + "\n")
    agent_keys, age_keys = {}, {}
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(bare_path), str(work))
    (work / "clusters").mkdir()
    for i, name in enumerate(CLUSTERS, start=1):
        agent_keys[name] = tmp_path / f"{name}.key"
        SigningKey.generate().save(agent_keys[name])
        identity = pyrage.x25519.Identity.generate()
        age_keys[name] = tmp_path / f"{name}.agekey"
        age_keys[name].write_text(f"{identity}\n")
        (work / "clusters" / f"{name}.yaml").write_text(managed_cluster(
            name, f"{i}" * 8 + "-1111-4111-8111-111111111111",
            ageRecipient=str(identity.to_public()),
            signingKey=SigningKey.load(agent_keys[name]).public_line(f"gitfleet-agent@{name}")))
    push_sealed_app(work, tmp_path)
    installed = gitfleet_here("hooks", "install", str(bare_path), "--hub-key",
                         str(tmp_path / "hub.pub"))
    assert installed.returncode == 0, installed.stderr

    sims = {name: kubesim() for name in CLUSTERS}
    pusher = tmp_path / "pusher"
    init_repo(pusher, bare=True)
    hub_log = tmp_path / "hub.log"
    with git_daemon(base) as prefix, _hub(f"{prefix}/fleet.git", tmp_path / "hub.key", hub_log):
        url = f"{prefix}/fleet.git"
        remote = Remote(git=bare, url=url, base=base)
        agents = {name: make_agent(remote, sims[name], cluster=name, clock=SystemClock(),
                                   interval=1.0, heartbeat_interval=5.0, register=False,
                                   age_key_file=age_keys[name],
                                   signing_key_file=agent_keys[name],
                                   trusted_hub_keys=TrustedKeys.of(hub_key))
                  for name in CLUSTERS}
        want = f"postgres://shop:{PLAINTEXT}@db/shop"
        with running(agents["c1"]), running(agents["c2"]):
            wait_for(lambda: all(_secret_value(sims[n]) == want for n in CLUSTERS), timeout=120)
            # signed status is folded: both clusters ready, nothing rejected
            wait_for(lambda: all((_fleet_status(bare, n) or {}).get("ready") is True
                                 for n in CLUSTERS), timeout=120)
        for name in CLUSTERS:
            summary = _fleet_status(bare, name)
            assert summary is not None
            assert "statusRejected" not in summary and "statusWarning" not in summary
        genuine = bare.resolve(BRANCHES.status("c1"))
        assert genuine is not None

        # a forged status for c1 (another key, or none) pushed through the server: refused
        status_ref = BRANCHES.status("c1")
        forged_status = (bare.read_blob(genuine, "status.yaml") or b"").replace(
            b"kubernetesVersion: ", b"kubernetesVersion: v9.99.0-forged-")
        assert b"forged" in forged_status
        intruder = Git(pusher, signer=SigningKey.generate())
        git(pusher, "fetch", "-q", url, f"+{status_ref}:{status_ref}")
        forged = intruder.commit(intruder.write_tree({"status.yaml": forged_status}), [genuine],
                                 "status: all fine", when=1_800_000_000)
        refused = _push(pusher, url, f"{forged}:{status_ref}")
        assert refused.returncode != 0
        assert "gitfleet: refused refs/heads/gitfleet/status/c1" in refused.stderr
        unsigned = Git(pusher).commit(intruder.write_tree({"status.yaml": forged_status}),
                                      [genuine], "status: all fine", when=1_800_000_000)
        refused = _push(pusher, url, f"{unsigned}:{status_ref}")
        assert refused.returncode != 0 and "unsigned" in refused.stderr
        assert bare.resolve(status_ref) == genuine

        # the same commit written straight into the repository, around the hook: not folded
        git(bare_path, "fetch", "-q", str(pusher), forged)
        bare.update_refs([RefUpdate(status_ref, forged, genuine)])
        wait_for(lambda: forged[:12] in str((_fleet_status(bare, "c1") or {})
                                            .get("statusRejected", "")), timeout=60)
        summary = _fleet_status(bare, "c1")
        assert summary is not None
        assert "forged" not in summary["versions"]["kubernetes"]
        assert f"folded {genuine[:12]}" in summary["statusRejected"]
        assert "status rejected" in hub_log.read_text()

        # a forged commit on c1's cluster branch (what the agent applies): refused by the hook
        cluster_ref = BRANCHES.cluster("c1")
        tip = bare.resolve(cluster_ref)
        assert tip is not None
        git(pusher, "fetch", "-q", url, f"+{cluster_ref}:{cluster_ref}")
        evil = intruder.commit(intruder.write_tree({"x.yaml": b"kind: ConfigMap\n"}), [tip],
                               "render", when=1_800_000_000)
        refused = _push(pusher, url, f"{evil}:{cluster_ref}")
        assert refused.returncode != 0 and "signed by the hub's key" in refused.stderr
        assert bare.resolve(cluster_ref) == tip

    # the sealed Secret's plaintext: in no ref, no commit, no log of hub or agents
    history = git(bare_path, "log", "-p", "--all", "--format=%H %s%n%b")
    assert "ENC[AES256_GCM" in history
    encoded = base64.b64encode(want.encode()).decode()
    for text in (history, hub_log.read_text(), caplog.text,
                 installed.stdout + installed.stderr):
        assert PLAINTEXT not in text and encoded not in text
