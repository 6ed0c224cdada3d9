"""End to end: a Secret sealed for two clusters goes through the fleet repo, the hub and two agents
into two kubesim clusters, and its plaintext is in no branch, no commit and no log."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pyrage
import pytest

from gitfleet.clock import SystemClock
from tests.fleetfixtures import NAMESPACE, feed, managed_cluster, subscription
from tests.harness import (
    Remote,
    clone,
    git,
    gitfleet,
    person,
    process,
    push,
    running,
    wait_for,
)

pytestmark = pytest.mark.slow


PLAINTEXT = "e2e-Pl41nt3xt-c0ffee"
SUBSCRIPTION = subscription(feed("Secret", "db"))
SECRET = f"""apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: app
type: Opaque
stringData:
  DATABASE_URL: postgres://shop:{PLAINTEXT}@db/shop
"""


def push_sealed_app(work: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Commit and push the app (its Subscription, Namespace and a db Secret sealed with
    `gitfleet seal` for every env=test cluster) into the clone `work`, whose clusters/ already
    name each cluster's age recipient; returns the `gitfleet seal` run."""
    (work / "policies").mkdir()
    (work / "policies" / "app.yaml").write_text(SUBSCRIPTION)
    (work / "templates").mkdir()
    (work / "templates" / "namespace.yaml").write_text(NAMESPACE)
    plain = tmp_path / "db-secret.yaml"  # outside the repo: never committed
    plain.write_text(SECRET)
    sealed = gitfleet("seal", str(plain), "--selector", "env=test", "--repo", str(work),
                      "--out", str(work / "templates" / "db.yaml"))
    assert sealed.returncode == 0, sealed.stderr
    push(work, "fleet: app with a sealed db secret")
    return sealed


def _secret_value(sim) -> str | None:
    live = person(sim).get("v1", "Secret", "app", "db")
    if live is None:
        return None
    if "DATABASE_URL" in (live.get("data") or {}):
        return base64.b64decode(live["data"]["DATABASE_URL"]).decode()
    return (live.get("stringData") or {}).get("DATABASE_URL")


def test_a_sealed_secret_reaches_both_clusters_and_nowhere_in_plaintext(
        remote: Remote, kubesim, make_agent, tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    keys = {}
    for i, name in enumerate(("c1", "c2"), start=1):
        identity = pyrage.x25519.Identity.generate()
        keys[name] = tmp_path / f"{name}.agekey"
        keys[name].write_text(f"{identity}\n")
        (work / "clusters").mkdir(exist_ok=True)
        (work / "clusters" / f"{name}.yaml").write_text(managed_cluster(
            name, f"{i}" * 8 + "-1111-4111-8111-111111111111",
            ageRecipient=str(identity.to_public())))
    sealed = push_sealed_app(work, tmp_path)

    one, two = kubesim(), kubesim()
    hub_log = tmp_path / "hub.log"
    with process([sys.executable, "-m", "gitfleet", "-vv", "hub", "--repo",
                  str(remote.git.path), "--interval", "1s", "--no-fleet-status"], log=hub_log):
        a1 = make_agent(remote, one, cluster="c1", clock=SystemClock(), interval=1.0,
                        age_key_file=keys["c1"])
        a2 = make_agent(remote, two, cluster="c2", clock=SystemClock(), interval=1.0,
                        age_key_file=keys["c2"])
        with running(a1), running(a2):
            want = f"postgres://shop:{PLAINTEXT}@db/shop"
            wait_for(lambda: _secret_value(one) == want and _secret_value(two) == want,
                     timeout=90)  # at load 30 the first render and sync took > 30 s
    # every branch and every commit of the fleet repo, and the hub's log: no plaintext
    history = git(remote.git.path, "log", "-p", "--all", "--format=%H %s%n%b")
    assert "gitfleet/state" in git(remote.git.path, "branch", "-a")
    assert "ENC[AES256_GCM" in history
    assert PLAINTEXT not in history
    assert base64.b64encode(f"postgres://shop:{PLAINTEXT}@db/shop".encode()).decode() \
        not in history
    assert PLAINTEXT not in hub_log.read_text()
    assert PLAINTEXT not in sealed.stdout + sealed.stderr
