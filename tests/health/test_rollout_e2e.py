"""End to end: a release whose new pods crash-loop stops a rollout at its first wave, by health
alone (the health timeout is far away); a release whose new pods are slow to start holds the
wave until they are available. Real agents on kubesim clusters that run pods, the hub as a
process. Built on the rollout tests' harness (tests/rollout/test_e2e.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gitfleet.clock import SystemClock
from tests.fleetfixtures import NAMESPACE
from tests.harness import Remote, clone, hub_process, push, running, status_of, wait_for
from tests.rollout.test_e2e import SUBSCRIPTION, WEB, _image, ring_cluster

pytestmark = pytest.mark.slow

RINGS = {"canary": "44444444-4444-4444-8444-444444444441",
         "rest": "44444444-4444-4444-8444-444444444442"}

POLICY = """apiVersion: gitfleet.io/v1alpha1
kind: RolloutPolicy
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  waves:
  - {name: canary, clusterAffinity: {matchLabels: {ring: canary}}, bake: 1s}
  - {name: rest}
  healthTimeout: 30m
  onFailure: Pause
"""


def _in_state(state: str) -> str:
    """WEB whose pods kubesim runs in `state` (gitfleet/kubesim/podstates.py)."""
    return WEB.replace("      labels: {{app: web}}\n    spec:",
                       "      labels: {{app: web}}\n      annotations:\n"
                       f"        kubesim.gitfleet.io/container-state: {state}\n"
                       "    spec:")


CRASHING = _in_state("CrashLoopBackOff")
STARTING = _in_state("ContainerCreating")


def _rollouts(remote: Remote) -> str:
    raw = remote.git.read_blob("refs/heads/gitfleet/state", "rollouts.yaml")
    return raw.decode() if raw else ""


@contextmanager
def _fleet(remote: Remote, kubesim, make_agent, tmp_path: Path) -> Iterator[tuple[Path, dict]]:
    """Two clusters (canary, rest) at web 1.25 under the rollout policy, the hub and both agents
    running."""
    work = clone(remote.git.path, tmp_path / "work")
    push(work, "fleet: web everywhere",
         {**{f"clusters/{n}.yaml": ring_cluster(n, u) for n, u in RINGS.items()},
          "policies/app.yaml": SUBSCRIPTION, "templates/namespace.yaml": NAMESPACE,
          "templates/web.yaml": WEB.format(tag="1.25")})
    sims = {name: kubesim(pods=True) for name in RINGS}
    with hub_process("--repo", str(remote.git.path), "--interval", "0.5s", "--no-fleet-status"):
        agents = [make_agent(remote, sims[n], cluster=n, clock=SystemClock(), interval=0.3)
                  for n in RINGS]
        with running(agents[0]), running(agents[1]):
            # a hub process's start and first render, then both agents' syncs: on a loaded
            # machine (more test workers than cores) this alone has taken over 40 s
            wait_for(lambda: all(_image(s) == "nginx:1.25" for s in sims.values()), timeout=90,
                     what="web 1.25 on both clusters")
            push(work, "fleet: release web in waves", {"policies/rollout.yaml": POLICY})
            yield work, sims


def test_a_crash_looping_release_stops_the_rollout_at_its_first_wave(
        remote: Remote, kubesim, make_agent, tmp_path: Path) -> None:
    assert "CrashLoopBackOff" in CRASHING
    with _fleet(remote, kubesim, make_agent, tmp_path) as (work, sims):
        push(work, "web 1.26 (bad)", {"templates/web.yaml": CRASHING.format(tag="1.26")})
        wait_for(lambda: _image(sims["canary"]) == "nginx:1.26", timeout=40)
        text = wait_for(lambda: (t := _rollouts(remote)) and "phase: Paused" in t and t,
                        timeout=40)
        assert "reason: \"canary: app/app Degraded\"" in text, text
        assert _image(sims["rest"]) == "nginx:1.25"
        canary = status_of(remote, "canary")
        assert canary is not None
        (desc,) = canary.descriptions
        assert "container web: CrashLoopBackOff" in desc.message, desc


def test_a_release_mid_rollout_holds_the_wave_until_its_new_pods_are_available(
        remote: Remote, kubesim, make_agent, tmp_path: Path) -> None:
    with _fleet(remote, kubesim, make_agent, tmp_path) as (work, sims):
        push(work, "web 1.26 (slow)", {"templates/web.yaml": STARTING.format(tag="1.26")})
        wait_for(lambda: _image(sims["canary"]) == "nginx:1.26", timeout=40)

        def canary() -> tuple[str, str]:
            status = status_of(remote, "canary")
            if status is None or not status.descriptions:
                return "", ""
            return str(status.descriptions[0].phase), status.descriptions[0].message

        # the canary's Deployment is mid-rollout (old pods serve, new ones start): Progressing
        wait_for(lambda: canary()[0] == "Progressing" and "rollout" in canary()[1], timeout=20)
        time.sleep(3)  # many agent syncs and hub rounds: the wave must hold
        assert _image(sims["rest"]) == "nginx:1.25"
        assert canary()[0] == "Progressing"
        assert "phase: Progressing" in _rollouts(remote)

        sims["canary"].set_container_state("Deployment", "app", "web", "Running")
        wait_for(lambda: _image(sims["rest"]) == "nginx:1.26", timeout=40)
        assert canary()[0] == "Success"
