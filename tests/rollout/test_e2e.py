"""End to end: a RolloutPolicy over three kubesim clusters (canary, early, rest) with real
agents and the hub as a process. A good change reaches the clusters wave by wave, in order; a
bad image (its pods never become ready) stops at the canary and, with Rollback, the canary
returns to the previous image while the other clusters never see the bad one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from gitfleet.clock import SystemClock
from tests.fleetfixtures import NAMESPACE, feed, managed_cluster, subscription
from tests.harness import Remote, clone, hub_process, person, push, running, wait_for

pytestmark = pytest.mark.slow

RINGS = {"canary": "33333333-3333-4333-8333-333333333331",
         "early": "33333333-3333-4333-8333-333333333332",
         "rest": "33333333-3333-4333-8333-333333333333"}

SUBSCRIPTION = subscription(feed("Deployment", "web", api_version="apps/v1"), labels="app: web")


def ring_cluster(name: str, uid: str) -> str:
    """clusters/<name>.yaml: a test cluster labelled with its ring (= its name)."""
    return managed_cluster(name, uid, labels=f"env: test, ring: {name}")

POLICY = """apiVersion: gitfleet.io/v1alpha1
kind: RolloutPolicy
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  waves:
  - {name: canary, clusterAffinity: {matchLabels: {ring: canary}}, bake: 1s}
  - {name: early, clusterAffinity: {matchLabels: {ring: early}}, bake: 1s}
  - {name: rest}
  healthTimeout: 20s
  onFailure: Rollback
"""

WEB = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
spec:
  replicas: 1
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
        - name: web
          image: nginx:{tag}
"""


def _image(sim) -> str | None:
    obj = person(sim).get("apps/v1", "Deployment", "app", "web")
    if obj is None:
        return None
    return str(obj["spec"]["template"]["spec"]["containers"][0]["image"])


def _phase(remote: Remote) -> str | None:
    """The phase of policy `web`'s rollout, from the state branch's rollouts.yaml."""
    data = remote.git.read_blob("refs/heads/gitfleet/state", "rollouts.yaml")
    found = [r for r in (yaml.safe_load(data) or {}).get("rollouts", [])
             if r.get("policy") == "web"] if data else []
    return str(found[0]["phase"]) if found else None


def _arrival_order(sims: dict, image: str, *, timeout: float) -> list[str]:
    """The clusters in the order the image reached them (polled; bounded)."""
    order: list[str] = []
    deadline = time.monotonic() + timeout
    while len(order) < len(sims) and time.monotonic() < deadline:
        for name, sim in sims.items():
            if name not in order and _image(sim) == image:
                order.append(name)
        time.sleep(0.05)
    return order


def test_waves_in_order_and_a_bad_image_rolled_back_at_the_canary(
        remote: Remote, kubesim, make_agent, tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: web everywhere",
         {**{f"clusters/{n}.yaml": ring_cluster(n, u) for n, u in RINGS.items()},
          "policies/app.yaml": SUBSCRIPTION, "templates/namespace.yaml": NAMESPACE,
          "templates/web.yaml": WEB.format(tag="1.25")})
    sims = {name: kubesim() for name in RINGS}
    with hub_process("--repo", str(remote.git.path), "--interval", "0.5s", "--no-fleet-status"):
        agents = [make_agent(remote, sims[n], cluster=n, clock=SystemClock(), interval=0.3)
                  for n in RINGS]
        with running(agents[0]), running(agents[1]), running(agents[2]):
            wait_for(lambda: all(_image(s) == "nginx:1.25" for s in sims.values()), timeout=30)
            push(work, "fleet: release web in waves", {"policies/rollout.yaml": POLICY})

            push(work, "web 1.26", {"templates/web.yaml": WEB.format(tag="1.26")})
            assert _arrival_order(sims, "nginx:1.26", timeout=60) == ["canary", "early", "rest"]
            # the last wave's image arrives before its health is judged: 1.26 is done only when
            # its rollout is Complete (the canary stalling earlier would roll 1.26 back, rightly)
            wait_for(lambda: _phase(remote) == "Complete", timeout=60, what="1.26 Complete")

            # 1.27 never becomes ready in the canary: it stops there and is rolled back
            sims["canary"].set_rollout_stalled("Deployment", "app", "web")
            push(work, "web 1.27 (bad)", {"templates/web.yaml": WEB.format(tag="1.27")})
            wait_for(lambda: _image(sims["canary"]) == "nginx:1.27", timeout=30)
            wait_for(lambda: _image(sims["canary"]) == "nginx:1.26", timeout=60)
            rollouts = remote.git.read_blob("refs/heads/gitfleet/state", "rollouts.yaml")
            assert rollouts is not None and b"phase: RolledBack" in rollouts
            assert _image(sims["early"]) == _image(sims["rest"]) == "nginx:1.26"
