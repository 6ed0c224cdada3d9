"""A SOPS Secret without `metadata.namespace` (as `sops` and Flux's own test data write it),
fed by a Subscription in `default` to a cluster that names an age recipient, is applied into
the Description's namespace and stays there through any number of syncs of the same commit:
in `--once` runs and in a daemon, with and without Recovery (issue 30, item 2)."""

from __future__ import annotations

import base64
from pathlib import Path

import pyrage
import pytest

from gitfleet.clock import SystemClock
from gitfleet.secrets import sops
from gitfleet.state.git import RefUpdate
from tests.fleetfixtures import managed_cluster
from tests.harness import gitfleet, gitfleet_here, person, running, status_of, wait_for

pytestmark = pytest.mark.slow

PASSWORD = "ns-less-7c2d"
SUBSCRIPTION = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata:
  name: age
  namespace: default
spec:
  subscribers:
    - clusterAffinity:
        matchLabels: {env: test}
  feeds:
    - {apiVersion: v1, kind: Secret, name: age}
"""


def _secret_file(recipient: str) -> bytes:
    """A Secret without metadata.namespace, encrypted as `sops -e --age R` writes it."""
    plain = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "age"},
             "type": "Opaque",
             "data": {"password": base64.b64encode(PASSWORD.encode()).decode()}}
    return sops.dump(sops.encrypt(plain, recipients=[recipient])).encode()


@pytest.fixture
def fleet(tmp_path: Path, remote) -> pyrage.x25519.Identity:
    """The fleet repository, rendered once by the hub; returns the cluster's age identity."""
    identity = pyrage.x25519.Identity.generate()
    recipient = str(identity.to_public())
    files = {"clusters/c1.yaml": managed_cluster(
                 "c1", "11111111-1111-4111-8111-111111111111", ageRecipient=recipient).encode(),
             "policies/age.yaml": SUBSCRIPTION.encode(),
             "templates/age.yaml": _secret_file(recipient)}
    git = remote.git
    commit = git.commit(git.write_tree(files), [], "fleet with a namespace-less SOPS Secret")
    git.update_refs([RefUpdate("refs/heads/main", commit, None)])
    hub = gitfleet_here("hub", "--repo", str(remote.base / "fleet.git"), "--once",
                        "--no-fleet-status")          # in this process: setup, not the test
    assert hub.returncode == 0 and "0 errors" in hub.stdout, hub.stdout + hub.stderr
    (tmp_path / "age.key").write_text(str(identity) + "\n")
    return identity


def _live(sim) -> dict | None:
    return person(sim).get("v1", "Secret", "default", "age")


def _password(live: dict) -> str:
    return base64.b64decode(live["data"]["password"]).decode()


def _assert_applied_once(sim, remote, uid: str | None) -> str:
    live = _live(sim)
    assert live is not None, "the Secret is gone"
    assert _password(live) == PASSWORD
    assert uid is None or live["metadata"]["uid"] == uid, "deleted and created again"
    status = status_of(remote)
    assert status is not None
    [desc] = status.descriptions
    assert desc.phase == "Success", desc
    assert [o.namespace for o in desc.objects] == ["default"], desc.objects
    assert not status.drift, status.drift
    return str(live["metadata"]["uid"])


@pytest.mark.parametrize("recovery", [False, True], ids=["plain", "recovery"])
def test_the_secret_stays_through_every_sync_of_a_daemon(tmp_path: Path, remote, fleet, kubesim,
                                                         make_agent, recovery: bool) -> None:
    sim = kubesim()
    agent = make_agent(remote, sim, age_key_file=tmp_path / "age.key", recovery=recovery,
                       clock=SystemClock(), interval=0.1)
    syncs: list[object] = []   # each step's outcome, kept so that none is counted twice

    def synced(count: int) -> bool:
        if agent.last.report is not None and all(s is not agent.last for s in syncs):
            syncs.append(agent.last)
        return len(syncs) >= count

    with running(agent):
        wait_for(lambda: synced(1), what="the first sync")
        uid = _assert_applied_once(sim, remote, None)
        wait_for(lambda: synced(5), what="four more syncs of the same commit")
    _assert_applied_once(sim, remote, uid)


@pytest.mark.parametrize("recovery", [False, True], ids=["plain", "recovery"])
def test_the_secret_stays_through_every_once_run(tmp_path: Path, remote, fleet, kubesim,
                                                 recovery: bool) -> None:
    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    uid = None
    for _ in range(3):
        agent = gitfleet("agent", "--repo", remote.url, "--cluster", "c1", "--once",
                         "--no-register", "--kubeconfig", str(kubeconfig), "--workdir",
                         str(tmp_path / "agent"), "--age-key-file", str(tmp_path / "age.key"),
                         *(["--feature-gates=Recovery=true"] if recovery else []))
        assert agent.returncode == 0, agent.stderr
        assert PASSWORD not in agent.stderr + agent.stdout
        uid = _assert_applied_once(sim, remote, uid)
