"""Issue 9: with allocatable cpu 9 and 3 and 6 one-cpu replicas, three hub rounds with no fleet
change went 5/1, 4/2, 5/1, because a workload's own running pods counted against its room.

Here the room comes from real heartbeats: two kubesim clusters run the rendered Deployment's
pods, each agent-side heartbeat sums their requests, and the next render reads that room with
the previous state beside it. Placement must not change."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import yaml
from kubernetes import client

from gitfleet.agent.heartbeat import build_heartbeat
from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim
from gitfleet.render import division
from gitfleet.render.core import RenderResult, render
from gitfleet.render.status import ClusterCapacity, StatusSnapshot
from tests.render.conftest import cluster, deployment, feed, fleet_of, subscription

CPUS = {"a": "9", "b": "3"}
FILE = "clusters/{c}/apps/s/apps_Deployment_apps_web.yaml"


@pytest.fixture
def sims() -> Iterator[dict[str, KubeSim]]:
    with ExitStack() as stack:
        found = {}
        for name, cpu in CPUS.items():
            sim = stack.enter_context(KubeSim(nodes=1, cpu=cpu, memory="32Gi", pods=True,
                                              controller_delay=0.01, name=name))
            api = sim.api_client()
            stack.callback(api.close)
            client.CoreV1Api(api).create_namespace({"metadata": {"name": "apps"}})
            found[name] = sim
        yield found


def heartbeat_room(sim: KubeSim) -> tuple[ClusterCapacity, dict[str, Any]]:
    """The cluster's capacity as the hub reads it from the agent's heartbeat."""
    facts = KubeClient(sim.api_client()).facts()
    beat = build_heartbeat(time="2026-01-01T00:00:00Z", interval_seconds=60,
                           version=facts.version, healthz=True, livez=True, readyz=True,
                           nodes=facts.nodes, pods=facts.pods, cluster_id=facts.cluster_id,
                           app_pusher=False).to_dict()
    return ClusterCapacity(allocatable=beat["allocatable"], requested=beat["requested"]), beat


def apply(sim: KubeSim, result: RenderResult, name: str) -> None:
    body = yaml.safe_load(result.files[FILE.format(c=name)])
    api = sim.api_client()
    try:
        apps = client.AppsV1Api(api)
        if apps.list_namespaced_deployment("apps").items:
            apps.patch_namespaced_deployment("web", "apps", {"spec": body["spec"]})
        else:
            apps.create_namespaced_deployment("apps", body)
        core = client.CoreV1Api(api)
        wanted = body["spec"]["replicas"]
        deadline = time.monotonic() + 60   # bounded generously: a busy machine is slow
        while time.monotonic() < deadline:  # the pods run shortly after the Deployment
            pods = core.list_namespaced_pod("apps").items
            if len(pods) == wanted and all(p.status.phase == "Running" for p in pods):
                return
            time.sleep(0.02)
        raise AssertionError(f"{name}: {wanted} pods did not start")
    finally:
        api.close()


def test_three_rounds_without_fleet_change_keep_the_placement(sims: dict[str, KubeSim]) -> None:
    fleet = fleet_of(cluster("a", {"env": "prod"}), cluster("b", {"env": "prod"}),
                     ("templates/d.yaml", deployment("web", replicas=6, cpu="1")),
                     ("policies/s.yaml", subscription(
                         "s", [feed("Deployment", "web")], [{"clusterAffinity": {
                             "matchLabels": {"env": "prod"}}}],
                         schedulingStrategy="Dividing", dividingScheduling={"type": "Dynamic"})))
    previous: dict[str, bytes] | None = None
    rounds = []
    beats = []
    for _ in range(3):
        status = {}
        for name, sim in sims.items():
            status[name], beat = heartbeat_room(sim)
            beats.append(beat)
        result = render(fleet, previous_files=previous, status=StatusSnapshot(capacity=status))
        rounds.append({c: yaml.safe_load(result.files[FILE.format(c=c)])["spec"]["replicas"]
                       for c in sims})
        for name, sim in sims.items():
            apply(sim, result, name)
        previous = result.files
    assert rounds == [{"a": 5, "b": 1}] * 3
    # After the first round the heartbeats carry the workload's own pods...
    second_a, second_b = beats[2], beats[3]
    assert (second_a["requested"]["cpu"], second_b["requested"]["cpu"]) == ("5", "1")
    assert (second_a["requested"]["pods"], second_b["requested"]["pods"]) == ("5", "1")
    assert second_a["allocatable"]["pods"] == "110"
    # ...so a division from free room alone is the one that went 4/2 before.
    assert division.divide_dynamic(6, {"a": 4, "b": 2}) == {"a": 4, "b": 2}
