"""Clusternet's dynamic-dividing example (shared/conformance, unchanged) reaches two clusters
as upstream places it: the clusters are registered as an agent registers them (clusterId = the
UID of their kube-system namespace, so the example's `cluster-id Exists` selects them), their
room comes from real heartbeats (per node), and the rendered objects run there.

Cluster "pair" has two nodes with 750m cpu, "big" one node with 2 cores; the example's 6
replicas of 500m go 2 and 4 (upstream counts room per node: 1 + 1 and 4), not 3 and 3."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from kubernetes import client

from gitfleet.agent.heartbeat import build_heartbeat
from gitfleet.hub.capacity import Capacity
from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim
from gitfleet.model.loader import load_fleet
from gitfleet.registration.request import Request, cluster_file
from gitfleet.render.core import RenderResult, render
from gitfleet.render.status import StatusSnapshot
from gitfleet.wire.status import ClusterStatus, Heartbeat
from tests.harness import wait_for
from tests.render.test_conformance import example_files

pytestmark = pytest.mark.slow

NODES = {"pair": [("pair-1", "750m"), ("pair-2", "750m")], "big": [("big-1", "2")]}
FOLDER = "default/dynamic-dividing-scheduling-demo"


@pytest.fixture
def sims() -> Iterator[dict[str, KubeSim]]:
    with ExitStack() as stack:
        found = {}
        for name, nodes in NODES.items():
            sim = stack.enter_context(KubeSim(nodes=0, pods=True, controller_delay=0.01,
                                              name=name))
            for node, cpu in nodes:
                sim.add_node(node, cpu=cpu, memory="4Gi", pods="110")
            found[name] = sim
        yield found


def facts_of(sim: KubeSim) -> Any:
    api = sim.api_client()
    try:
        return KubeClient(api).facts()
    finally:
        api.close()


def heartbeat(sim: KubeSim) -> Heartbeat:
    facts = facts_of(sim)
    beat = build_heartbeat(time="2026-01-01T00:00:00Z", interval_seconds=60,
                           version=facts.version, healthz=True, livez=True, readyz=True,
                           nodes=facts.nodes, pods=facts.pods, cluster_id=facts.cluster_id,
                           app_pusher=False)
    return Heartbeat.from_dict(yaml.safe_load(yaml.safe_dump(beat.to_dict())))


def apply_description(sim: KubeSim, result: RenderResult, cluster: str) -> dict[str, Any]:
    """Create every object of the cluster's Description; the Deployment's body is returned."""
    prefix = f"clusters/{cluster}/{FOLDER}/"
    desc = yaml.safe_load(result.files[prefix + "description.yaml"])
    bodies = [yaml.safe_load(result.files[prefix + r["file"]])
              for r in desc["spec"]["resources"]]
    api = sim.api_client()
    try:
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        order = {"Namespace": 0, "Service": 1, "Deployment": 2}
        for body in sorted(bodies, key=lambda b: order[b["kind"]]):
            ns = body["metadata"].get("namespace", "")
            if body["kind"] == "Namespace":
                core.create_namespace(body)
            elif body["kind"] == "Service":
                core.create_namespaced_service(ns, body)
            else:
                apps.create_namespaced_deployment(ns, body)
        return next(b for b in bodies if b["kind"] == "Deployment")
    finally:
        api.close()


def running_pods(sim: KubeSim) -> int:
    api = sim.api_client()
    try:
        pods = client.CoreV1Api(api).list_namespaced_pod("qux").items
        return sum(1 for p in pods if p.status.phase == "Running")
    finally:
        api.close()


def test_the_dynamic_dividing_example_runs_two_and_four(sims: dict[str, KubeSim]) -> None:
    files = example_files("clusternet/dynamic-dividing-scheduling")
    for name, sim in sims.items():
        files[f"clusters/{name}.yaml"] = cluster_file(Request(name, facts_of(sim).cluster_id))
    fleet = load_fleet(files)
    assert fleet.errors == () and fleet.warnings == ()
    statuses = {n: ClusterStatus(cluster=n, heartbeat=heartbeat(sim)) for n, sim in sims.items()}
    inputs: Any = SimpleNamespace(status=SimpleNamespace(statuses=statuses))
    capacity = Capacity().plan(inputs).snapshot["capacity"]
    result = render(fleet, status=StatusSnapshot(capacity=capacity))
    assert list(result.errors) == [] and list(result.warnings) == []
    want = {"pair": 2, "big": 4}
    for name, sim in sims.items():
        deployment = apply_description(sim, result, name)
        assert deployment["spec"]["replicas"] == want[name]
    wait_for(lambda: {n: running_pods(sim) for n, sim in sims.items()} == want,
             what="2 pods running in pair, 4 in big")
