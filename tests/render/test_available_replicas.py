"""SEMANTICS "Available replicas": effective pod requests as Kubernetes computes them, extended
resources and the pod count; and the heartbeat that reports what they are compared with."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubernetes import client

from gitfleet.agent.heartbeat import build_heartbeat
from gitfleet.kube.client import KubeClient
from gitfleet.kubesim import KubeSim
from gitfleet.model.objects import Origin, Template
from gitfleet.podresources import effective_requests
from gitfleet.render.status import ClusterCapacity, available_replicas


def c(name: str, *, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
      restart: str = "") -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    out: dict[str, Any] = {"name": name, "image": "busybox", "resources": resources}
    if restart:
        out["restartPolicy"] = restart
    return out


def template(pod: dict[str, Any]) -> Template:
    body = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"replicas": 3, "template": {"spec": pod}}}
    return Template(api_version="apps/v1", kind="Deployment", namespace="apps", name="web",
                    body=body, origin=Origin("templates/web.yaml"))


def test_containers_add_up_and_a_limit_alone_is_the_request() -> None:
    pod = {"containers": [c("app", requests={"cpu": "500m", "memory": "1Gi"}),
                          c("log", limits={"cpu": "250m", "memory": "256Mi"})]}
    assert effective_requests(pod) == {"cpu": Fraction(3, 4), "memory": Fraction(1280 * 2**20)}


def test_a_request_wins_over_the_limit_of_the_same_resource() -> None:
    pod = {"containers": [c("app", requests={"cpu": "100m"}, limits={"cpu": "2", "memory": "1Gi"})]}
    assert effective_requests(pod) == {"cpu": Fraction(1, 10), "memory": Fraction(2**30)}


def test_the_largest_init_container_wins_when_larger_than_the_sum() -> None:
    pod = {"initContainers": [c("migrate", requests={"cpu": "2"}),
                              c("warm", requests={"cpu": "1"})],
           "containers": [c("app", requests={"cpu": "500m"}), c("side", requests={"cpu": "500m"})]}
    assert effective_requests(pod) == {"cpu": Fraction(2)}


def test_sidecars_add_to_the_sum_and_run_beside_later_init_containers() -> None:
    # the sidecar (restartPolicy Always) runs with the app: 1 + 0.5; the init container after
    # it runs beside it: 0.5 + 1.5 = 2 > 1.5
    pod = {"initContainers": [c("proxy", requests={"cpu": "500m"}, restart="Always"),
                              c("migrate", requests={"cpu": "1500m"})],
           "containers": [c("app", requests={"cpu": "1"})]}
    assert effective_requests(pod) == {"cpu": Fraction(2)}
    pod["initContainers"][1]["resources"] = {"requests": {"cpu": "100m"}}
    assert effective_requests(pod) == {"cpu": Fraction(3, 2)}


def test_overhead_is_added() -> None:
    pod = {"containers": [c("app", requests={"cpu": "1"})], "overhead": {"cpu": "250m"}}
    assert effective_requests(pod) == {"cpu": Fraction(5, 4)}


def test_room_is_the_smallest_fit_over_resources_and_pods() -> None:
    gpu = template({"containers": [c("train", requests={"cpu": "1"},
                                     limits={"nvidia.com/gpu": "2"})]})
    capacity = ClusterCapacity(
        allocatable={"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
        requested={"cpu": "4", "pods": "10", "nvidia.com/gpu": "3"})
    assert available_replicas(gpu, capacity) == 2  # (8 - 3) // 2 GPUs
    no_gpus = ClusterCapacity(allocatable={"cpu": "64", "pods": "110"})
    assert available_replicas(gpu, no_gpus) == 0
    crowded = ClusterCapacity(allocatable={"cpu": "64", "pods": "110", "nvidia.com/gpu": "8"},
                              requested={"pods": "109"})
    assert available_replicas(gpu, crowded) == 1


def test_a_template_asking_nothing_is_limited_by_the_pod_count_only() -> None:
    plain = template({"containers": [c("app")]})
    assert available_replicas(plain, ClusterCapacity(allocatable={"cpu": "1", "pods": "20"},
                                                     requested={"pods": "15"})) == 5
    assert available_replicas(plain, ClusterCapacity(allocatable={"cpu": "1"})) is None
    # a resource no cluster reports that is not cpu, memory or extended does not limit
    scratch = template({"containers": [c("app", requests={"ephemeral-storage": "1Gi"})]})
    assert available_replicas(scratch, ClusterCapacity(allocatable={"pods": "7"})) == 7


def test_heartbeat_reports_extended_resources_pods_and_running_pod_requests() -> None:
    with KubeSim(nodes=0, pods=True, controller_delay=0.01) as sim:
        sim.add_node("gpu-0", cpu="16", memory="64Gi", pods="30",
                     extended={"nvidia.com/gpu": "4"})
        sim.add_node("gpu-1", cpu="16", memory="64Gi", pods="30",
                     extended={"nvidia.com/gpu": "4"})
        api = sim.api_client()
        try:
            core = client.CoreV1Api(api)
            core.create_namespace({"metadata": {"name": "ml"}})
            pod = {"initContainers": [c("proxy", requests={"cpu": "250m"}, restart="Always")],
                   "containers": [c("train", requests={"cpu": "1", "memory": "2Gi"},
                                    limits={"nvidia.com/gpu": "1"})]}
            for i in range(3):
                core.create_namespaced_pod("ml", {"metadata": {"name": f"train-{i}"},
                                                  "spec": {**pod, "nodeName": "gpu-0"}})
            core.create_namespaced_pod("ml", {"metadata": {"name": "unbound"}, "spec": pod})
            facts = KubeClient(sim.api_client()).facts()
        finally:
            api.close()
    beat = build_heartbeat(time="2026-01-01T00:00:00Z", interval_seconds=60,
                           version=facts.version, healthz=True, livez=True, readyz=True,
                           nodes=facts.nodes, pods=facts.pods, cluster_id=facts.cluster_id,
                           app_pusher=False)
    assert beat.allocatable["nvidia.com/gpu"] == "8"
    assert beat.allocatable["gpu"] == "8"
    assert beat.allocatable["pods"] == "60"
    # three bound pods, each 1 cpu + a 250m sidecar, 2Gi, one GPU; the unbound one holds nothing
    assert beat.requested["cpu"] == "3750m"
    assert beat.requested["memory"] == "6Gi"
    assert beat.requested["nvidia.com/gpu"] == "3"
    assert beat.requested["pods"] == "3"
    capacity = ClusterCapacity(allocatable=beat.allocatable, requested=beat.requested)
    one = template(pod)
    assert available_replicas(one, capacity) == 5  # 8 - 3 GPUs
