"""Pod container states a test sets (crash loop, image pull failure, ...) and ReplicaSet
revisions: what a health judge and a rollout gate read on a real cluster."""

from __future__ import annotations

import pytest
from kubernetes import client

from gitfleet.kubesim import KubeSim
from gitfleet.kubesim.podstates import ANNOTATION, UnknownState
from tests.kubesim.conftest import deployment


@pytest.fixture
def podsim():  # noqa: ANN201
    with KubeSim(nodes=2, controller_delay=0.02, pods=True) as sim:
        client.CoreV1Api(sim.api_client()).create_namespace({"metadata": {"name": "team-a"}})
        yield sim


def _settled(sim: KubeSim) -> None:
    for _ in range(3):
        assert sim.settle(5.0)


def _pods(sim: KubeSim) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in sim.store.items(("", "pods"), "team-a")}


def _waiting(pod: dict) -> list[str]:
    return [(c["state"].get("waiting") or {}).get("reason", "")
            for c in pod["status"].get("containerStatuses", [])]


def test_template_annotation_crash_loops_new_pods_and_holds_the_rollout(podsim) -> None:  # noqa: ANN001
    apps = client.AppsV1Api(podsim.api_client())
    body = deployment(replicas=4)
    apps.create_namespaced_deployment("team-a", body)
    _settled(podsim)
    live = apps.read_namespaced_deployment("web", "team-a")
    assert live.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
    assert live.status.available_replicas == 4

    body["spec"]["template"]["metadata"]["annotations"] = {ANNOTATION: "CrashLoopBackOff"}
    apps.patch_namespaced_deployment("web", "team-a", body)
    _settled(podsim)
    live = apps.read_namespaced_deployment("web", "team-a")
    assert live.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    # mid-rollout: one surge pod of the new template, the old ReplicaSet still serves 3
    assert (live.status.replicas, live.status.updated_replicas,
            live.status.available_replicas) == (4, 1, 3)
    progressing = next(c for c in live.status.conditions if c.type == "Progressing")
    assert progressing.reason == "ReplicaSetUpdated"
    sets = {rs.metadata.annotations["deployment.kubernetes.io/revision"]: rs.spec.replicas
            for rs in apps.list_namespaced_replica_set("team-a").items}
    assert sets == {"1": 3, "2": 1}
    crashing = [p for p in _pods(podsim).values() if _waiting(p) == ["CrashLoopBackOff"]]
    assert len(crashing) == 1
    status = crashing[0]["status"]
    assert status["phase"] == "Running" and status["containerStatuses"][0]["restartCount"] > 0
    assert "back-off" in status["containerStatuses"][0]["state"]["waiting"]["message"]


def test_set_container_state_at_run_time_and_back(podsim) -> None:  # noqa: ANN001
    apps = client.AppsV1Api(podsim.api_client())
    apps.create_namespaced_deployment("team-a", deployment(replicas=2, image="nginx:nope"))
    podsim.set_container_state("Deployment", "team-a", "web", "ImagePullBackOff")
    _settled(podsim)
    pods = _pods(podsim)
    assert [_waiting(p) for p in pods.values()] == [["ImagePullBackOff"]] * 2
    assert all(p["status"]["phase"] == "Pending" for p in pods.values())
    assert 'pulling image "nginx:nope"' in next(iter(pods.values()))["status"][
        "containerStatuses"][0]["state"]["waiting"]["message"]
    live = apps.read_namespaced_deployment("web", "team-a")
    assert not live.status.available_replicas
    assert next(c for c in live.status.conditions if c.type == "Available").status == "False"

    podsim.set_container_state("Deployment", "team-a", "web", None)
    _settled(podsim)
    assert all(p["status"]["phase"] == "Running" for p in _pods(podsim).values())
    assert apps.read_namespaced_deployment("web", "team-a").status.available_replicas == 2
    with pytest.raises(UnknownState, match="CrashLoopBackOff"):
        podsim.set_container_state("Deployment", "team-a", "web", "Crashing")


def test_unschedulable_pods_have_no_node(podsim) -> None:  # noqa: ANN001
    apps = client.AppsV1Api(podsim.api_client())
    podsim.set_container_state("StatefulSet", "team-a", "db", "Unschedulable")
    body = deployment("db", replicas=1)
    body["kind"] = "StatefulSet"
    body["spec"]["serviceName"] = "db"
    apps.create_namespaced_stateful_set("team-a", body)
    _settled(podsim)
    pod = _pods(podsim)["db-0"]
    assert "nodeName" not in pod["spec"] and pod["status"]["phase"] == "Pending"
    scheduled = pod["status"]["conditions"][0]
    assert (scheduled["type"], scheduled["status"], scheduled["reason"]) == (
        "PodScheduled", "False", "Unschedulable")


def test_another_process_sets_states_over_http(podsim) -> None:  # noqa: ANN001
    import urllib.error

    from gitfleet.kubesim.podstates import post_container_state

    apps = client.AppsV1Api(podsim.api_client())
    apps.create_namespaced_deployment("team-a", deployment(replicas=1))
    post_container_state(podsim.url, "Deployment", "team-a", "web", "ErrImagePull")
    _settled(podsim)
    assert [_waiting(p) for p in _pods(podsim).values()] == [["ErrImagePull"]]
    with pytest.raises(urllib.error.HTTPError) as err:
        post_container_state(podsim.url, "Deployment", "team-a", "web", "Broken")
    assert err.value.code == 400 and b"unknown container state" in err.value.read()
    post_container_state(podsim.url, "Deployment", "team-a", "web", None)
    _settled(podsim)
    assert [p["status"]["phase"] for p in _pods(podsim).values()] == ["Running"]


def test_an_annotation_kubesim_does_not_know_never_reads_as_running(podsim) -> None:  # noqa: ANN001
    apps = client.AppsV1Api(podsim.api_client())
    body = deployment(replicas=1)
    body["spec"]["template"]["metadata"]["annotations"] = {ANNOTATION: "CrashLoopBackof"}
    apps.create_namespaced_deployment("team-a", body)
    _settled(podsim)
    assert [_waiting(p) for p in _pods(podsim).values()] == [["CreateContainerConfigError"]]
    assert not apps.read_namespaced_deployment("web", "team-a").status.available_replicas
