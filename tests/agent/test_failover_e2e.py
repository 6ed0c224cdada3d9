"""End to end cluster failover: the real hub (a subprocess on the fleet repo), two kubesim
clusters with real agents, a remote fleet repo (`file://`). One agent stops; the hub judges its
cluster Unknown, taints it, and once the policy's short toleration passes, its Divided replicas
run in the other cluster, labelled with the value its state-preservation rule took from the old
copy's live status (as the stopped agent last reported it); with purge mode Gracefully its old
copy leaves the state only once the new placement reports healthy. Waits are bounded; nothing is
asserted about how long it took (bench/bench_failover.py measures that)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitfleet.clock import SystemClock
from tests.fleetfixtures import managed_cluster
from tests.harness import (
    Remote,
    clone,
    hub_process,
    person,
    push,
    running,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.slow

FLEET = """apiVersion: gitfleet.io/v1alpha1
kind: FleetSettings
failover:
  evictionTimeout: 1s
  tolerationSeconds: 1
  purgeMode: Gracefully
  gracePeriodSeconds: 600
"""

POLICY = """apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: app
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: web}
  failover:
    cluster:
      statePreservation:
        rules:
          - {aliasLabelName: failover.example.com/available, jsonPath: "{.availableReplicas}"}
  placement:
    clusterAffinity:
      labelSelector:
        matchLabels: {env: test}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: app-namespace
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: Namespace, name: app}
"""

TEMPLATES = """apiVersion: v1
kind: Namespace
metadata:
  name: app
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
spec:
  replicas: 4
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.25
"""


def _replicas(sim) -> int | None:
    dep = person(sim).get("apps/v1", "Deployment", "app", "web")
    return None if dep is None else int(dep["spec"]["replicas"])


def _state(remote: Remote, path: str) -> bytes | None:
    return remote.git.read_blob("refs/heads/gitfleet/state", path) \
        if remote.git.resolve("refs/heads/gitfleet/state") else None


WEB = "app/web/apps_Deployment_app_web.yaml"


def _preserved(remote: Remote, cluster: str) -> dict[str, str]:
    status = status_of(remote, cluster)
    for d in status.descriptions if status else ():
        for o in d.objects:
            if o.kind == "Deployment":
                return dict(o.preserved)
    return {}


def test_a_stopped_agents_share_moves_and_its_old_copy_is_purged_gracefully(
        remote: Remote, kubesim, make_agent, tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    files = {"fleet.yaml": FLEET, "policies/web.yaml": POLICY, "templates/web.yaml": TEMPLATES,
             **{f"clusters/{c}.yaml": managed_cluster(c, uid, namespace=False, sync_mode=None)
                for c, uid in (("c1", "11111111-1111-4111-8111-111111111111"),
                               ("c2", "22222222-2222-4222-8222-222222222222"))}}
    push(work, "web divided over c1 and c2", files)

    one, two = kubesim(), kubesim()
    with hub_process("--repo", str(remote.git.path), "--interval", "0.3s", "--no-fleet-status"):
        a1 = make_agent(remote, one, cluster="c1", clock=SystemClock(), interval=0.3,
                        heartbeat_interval=1.0)
        a2 = make_agent(remote, two, cluster="c2", clock=SystemClock(), interval=0.3,
                        heartbeat_interval=1.0)
        with running(a1):
            with running(a2):
                wait_for(lambda: (_replicas(one), _replicas(two)) == (2, 2), timeout=30)
                # the agent reports what the rule selects from the live object
                wait_for(lambda: _preserved(remote, "c2") == {
                    "failover.example.com/available": "2"}, timeout=30)
            # c2's agent is gone: Unknown after 3 heartbeat intervals, NoExecute 1 s later,
            # its share moves 1 s after that
            wait_for(lambda: _replicas(one) == 4, timeout=60)
            labels = person(one).get("apps/v1", "Deployment", "app", "web")["metadata"]["labels"]
            assert labels["failover.example.com/available"] == "2"
            cluster_file = yaml.safe_load(_state(remote, "clusters/c2/cluster.yaml") or b"")
            assert {(t["key"], t["effect"]) for t in cluster_file["taints"]} == {
                ("cluster.gitfleet.io/unreachable", "NoSchedule"),
                ("cluster.gitfleet.io/unreachable", "NoExecute")}
            # Gracefully: the old copy leaves the state once c1 reports the 4 healthy
            wait_for(lambda: _state(remote, f"clusters/c2/{WEB}") is None, timeout=60)
            [task] = yaml.safe_load(_state(remote, "evictions.yaml") or b"")["evictions"]
            assert (task["cluster"], task["purgeMode"], task["purged"]) == (
                "c2", "Gracefully", True)
            log = remote.git.run("log", "--format=%B", "refs/heads/gitfleet/state").decode()
            assert "old copy of apps/Deployment/app/web in c2 purged: the new placements " \
                   "are healthy (c1)" in log
        # nothing gitfleet did touched c2 itself: its agent is down, its copy still runs
        assert _replicas(two) == 2
