"""The controller loop: workload status follows spec, nodes, metrics."""

from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes import client

from gitfleet.kubesim import KubeSim
from tests.kubesim.conftest import deployment


def _eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


def test_deployment_status_follows_spec(apps: client.AppsV1Api, ns: str) -> None:
    created = apps.create_namespaced_deployment(ns, deployment(replicas=3))
    assert not (created.status and created.status.ready_replicas)

    def ready(n: int, gen: int) -> bool:
        st = apps.read_namespaced_deployment_status("web", ns).status
        return (st.ready_replicas == n and st.available_replicas == n
                and st.updated_replicas == n and st.observed_generation == gen)

    assert _eventually(lambda: ready(3, 1))
    apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 5}})
    assert _eventually(lambda: ready(5, 2))
    conditions = {c.type: c.status for c in
                  apps.read_namespaced_deployment("web", ns).status.conditions}
    assert conditions == {"Available": "True", "Progressing": "True"}


def test_status_waits_for_the_configured_delay() -> None:
    with KubeSim(controller_delay=0.5) as sim:
        api = sim.api_client()
        try:
            apps = client.AppsV1Api(api)
            client.CoreV1Api(api).create_namespace({"metadata": {"name": "slow"}})
            apps.create_namespaced_deployment("slow", deployment(namespace="slow"))
            status = apps.read_namespaced_deployment("web", "slow").status
            assert not (status and status.ready_replicas)
            assert sim.settle(5)
            assert apps.read_namespaced_deployment("web", "slow").status.ready_replicas == 2
        finally:
            api.close()


def test_stalled_rollout_reports_unavailable(sim: KubeSim, apps: client.AppsV1Api,
                                             ns: str) -> None:
    sim.set_rollout_stalled("Deployment", ns, "web")
    apps.create_namespaced_deployment(ns, deployment(replicas=2))
    assert sim.settle()
    status = apps.read_namespaced_deployment("web", ns).status
    assert status.observed_generation == 1 and not status.ready_replicas
    assert status.unavailable_replicas == 2
    assert {c.type: c.reason for c in status.conditions}["Progressing"] == \
        "ProgressDeadlineExceeded"
    sim.set_rollout_stalled("Deployment", ns, "web", stalled=False)
    assert _eventually(lambda: apps.read_namespaced_deployment("web", ns).status
                       .ready_replicas == 2)


def test_statefulset_daemonset_replicaset_status(sim: KubeSim, apps: client.AppsV1Api,
                                                 ns: str) -> None:
    template = deployment()["spec"]
    apps.create_namespaced_stateful_set(ns, {
        "metadata": {"name": "db"}, "spec": dict(template, serviceName="db", replicas=2)})
    ds_spec = {k: v for k, v in template.items() if k != "replicas"}
    apps.create_namespaced_daemon_set(ns, {"metadata": {"name": "agent"}, "spec": ds_spec})
    apps.create_namespaced_replica_set(ns, {"metadata": {"name": "rs"}, "spec": template})
    assert sim.settle()
    assert apps.read_namespaced_stateful_set("db", ns).status.ready_replicas == 2
    ds = apps.read_namespaced_daemon_set("agent", ns).status
    assert ds.desired_number_scheduled == 2 and ds.number_ready == 2  # one per node
    assert apps.read_namespaced_replica_set("rs", ns).status.available_replicas == 2


def test_job_completes(sim: KubeSim, api: client.ApiClient, ns: str) -> None:
    batch = client.BatchV1Api(api)
    pod = deployment()["spec"]["template"]
    pod["spec"]["restartPolicy"] = "Never"
    batch.create_namespaced_job(ns, {"metadata": {"name": "once"}, "spec": {"template": pod}})
    assert sim.settle()
    job = batch.read_namespaced_job("once", ns)
    assert job.status.succeeded == 1
    assert "Complete" in {c.type for c in job.status.conditions}


def test_nodes_report_capacity_and_allocatable(core: client.CoreV1Api) -> None:
    nodes = core.list_node().items
    assert len(nodes) == 2
    for node in nodes:
        assert node.status.capacity["cpu"] == "4"
        assert node.status.allocatable["memory"] == "8Gi"
        assert {c.type: c.status for c in node.status.conditions}["Ready"] == "True"


def test_pod_metrics_set_by_the_test(sim: KubeSim, api: client.ApiClient, ns: str) -> None:
    sim.set_pod_metrics(ns, "web-1", cpu="250m", memory="128Mi")
    custom = client.CustomObjectsApi(api)
    listed = custom.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", ns, "pods")
    assert [(i["metadata"]["name"], i["containers"][0]["usage"]) for i in listed["items"]] == \
        [("web-1", {"cpu": "250m", "memory": "128Mi"})]
    one = custom.get_namespaced_custom_object("metrics.k8s.io", "v1beta1", ns, "pods", "web-1")
    assert one["kind"] == "PodMetrics"


def test_workloads_run_pods_when_asked() -> None:
    with KubeSim(nodes=2, pods=True, controller_delay=0.01) as sim:
        api = sim.api_client()
        try:
            core = client.CoreV1Api(api)
            apps = client.AppsV1Api(api)
            core.create_namespace({"metadata": {"name": "p"}})
            body = deployment(namespace="p", replicas=3)
            body["spec"]["template"]["spec"]["containers"][0]["resources"] = {
                "requests": {"cpu": "100m"}}
            apps.create_namespaced_deployment("p", body)
            assert sim.settle()
            pods = core.list_namespaced_pod("p", label_selector="app=web").items
            assert len(pods) == 3
            assert {p.status.phase for p in pods} == {"Running"}
            assert {p.spec.node_name for p in pods} == {"kubesim-node-0", "kubesim-node-1"}
            assert pods[0].spec.containers[0].resources.requests == {"cpu": "100m"}
            rs = apps.list_namespaced_replica_set("p").items
            assert [r.metadata.owner_references[0].name for r in rs] == ["web"]
            assert {p.metadata.owner_references[0].name for p in pods} == {rs[0].metadata.name}
            apps.patch_namespaced_deployment("web", "p", {"spec": {"template": {"spec": {
                "containers": [{"name": "app", "image": "nginx:1.26"}]}}}})
            assert sim.settle()
            images = {p.spec.containers[0].image for p in core.list_namespaced_pod("p").items}
            assert images == {"nginx:1.26"}
            apps.patch_namespaced_deployment("web", "p", {"spec": {"replicas": 1}})
            assert _eventually(lambda: len(core.list_namespaced_pod("p").items) == 1)
            apps.delete_namespaced_deployment("web", "p")
            assert _eventually(lambda: core.list_namespaced_pod("p").items == [])
        finally:
            api.close()


def test_load_balancer_gets_an_address_and_claims_bind(sim: KubeSim, core: client.CoreV1Api,
                                                      ns: str) -> None:
    core.create_namespaced_service(ns, {"metadata": {"name": "lb"}, "spec": {
        "type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 80}]}})
    created = core.create_namespaced_persistent_volume_claim(ns, {"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    # as created (a read-back races the controller's 50 ms delay on a loaded machine)
    assert created.status.phase == "Pending"
    assert sim.settle()
    assert core.read_namespaced_service("lb", ns).status.load_balancer.ingress[0].ip
    claim = core.read_namespaced_persistent_volume_claim("data", ns)
    assert claim.status.phase == "Bound" and claim.status.capacity == {"storage": "1Gi"}


def test_node_metrics_set_by_the_test(sim: KubeSim, api: client.ApiClient) -> None:
    sim.set_node_metrics("kubesim-node-1", cpu="1500m", memory="2Gi")
    custom = client.CustomObjectsApi(api)
    usage = {i["metadata"]["name"]: i["usage"] for i in
             custom.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")["items"]}
    assert usage == {"kubesim-node-0": {"cpu": "0", "memory": "0"},
                     "kubesim-node-1": {"cpu": "1500m", "memory": "2Gi"}}


def test_nodes_can_be_added_removed_and_made_not_ready(sim: KubeSim,
                                                       core: client.CoreV1Api) -> None:
    sim.add_node("big", cpu="16", memory="64Gi", labels={"zone": "b"})
    sim.set_node_ready("kubesim-node-0", False)
    sim.remove_node("kubesim-node-1")
    nodes = {n.metadata.name: n for n in core.list_node().items}
    assert sorted(nodes) == ["big", "kubesim-node-0"]
    assert nodes["big"].status.capacity["cpu"] == "16"
    assert nodes["big"].metadata.labels["zone"] == "b"
    ready = {name: {c.type: c.status for c in n.status.conditions}["Ready"]
             for name, n in nodes.items()}
    assert ready == {"big": "True", "kubesim-node-0": "Unknown"}


def test_daemonset_follows_the_node_count(sim: KubeSim, apps: client.AppsV1Api,
                                          ns: str) -> None:
    spec = {k: v for k, v in deployment()["spec"].items() if k != "replicas"}
    apps.create_namespaced_daemon_set(ns, {"metadata": {"name": "agent"}, "spec": spec})
    assert sim.settle()
    sim.add_node("third")
    assert sim.settle()
    assert apps.read_namespaced_daemon_set("agent", ns).status.desired_number_scheduled == 3
