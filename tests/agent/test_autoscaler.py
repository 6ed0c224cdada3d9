"""Autoscaler-aware apply and ignoreDifferences: the real agent against kubesim.

An HPA (or anyone named in `ignoreDifferences`) owns a field: the agent creates the object with
it, never applies it again, never reports it as drift, and Recovery never puts it back.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from gitfleet import yamlio
from gitfleet.clock import SystemClock
from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.wire.status import Phase
from tests.agent.fleetstate import configmap, deployment, description_files, publish
from tests.harness import person, running, status_of, wait_for


def hpa(target: str, namespace: str, *, api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": target, "namespace": namespace},
            "spec": {"scaleTargetRef": {"apiVersion": api_version, "kind": "Deployment",
                                        "name": target},
                     "minReplicas": 2, "maxReplicas": 10}}


def _branch(*objects: dict[str, Any], ignore: list[dict[str, Any]] | None = None
            ) -> dict[str, bytes]:
    files = description_files("default", "web", list(objects))
    if ignore is not None:
        files["cluster.yaml"] = yamlio.dump({"name": "c1", "syncMode": "Pull",
                                             "ignoreDifferences": ignore}).encode()
    return files


def _scale_as_hpa(sim, name: str, replicas: int) -> None:
    """What the HPA controller does: an update of the scale subresource, its own manager."""
    k8s.AppsV1Api(sim.api_client()).patch_namespaced_deployment_scale(
        name, "bar", {"spec": {"replicas": replicas}}, field_manager="horizontal-pod-autoscaler")


def _live(sim, kind: str, name: str) -> dict[str, Any]:
    api_version = "apps/v1" if kind == "Deployment" else "v1"
    return person(sim).get(api_version, kind, "bar", name)


def _drift_names(remote) -> list[tuple[str, list[str]]]:
    status = status_of(remote)
    assert status is not None
    return [(d.name, [f.path for f in d.fields]) for d in status.drift]


def _synced(remote, agent) -> None:
    wait_for(lambda: status_of(remote) and status_of(remote).descriptions[0].phase
             is Phase.SUCCESS, step=agent.step)


def test_hpa_target_is_created_with_replicas_then_left_to_the_hpa(remote, kubesim,
                                                                  make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3), hpa("web", "bar")))
    agent = make_agent(remote, sim)
    _synced(remote, agent)
    assert _live(sim, "Deployment", "web")["spec"]["replicas"] == 3  # the create carries it
    agent.step()
    # nobody else has written replicas yet: leaving them out must not reset them to 1
    assert _live(sim, "Deployment", "web")["spec"]["replicas"] == 3

    _scale_as_hpa(sim, "web", 7)
    agent.step()
    agent.step()
    assert _live(sim, "Deployment", "web")["spec"]["replicas"] == 7
    assert _drift_names(remote) == []

    # a new state commit (new image, still replicas 3) changes the image, not the replicas
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3, image="nginx:1.26"),
                                      hpa("web", "bar")))
    wait_for(lambda: _live(sim, "Deployment", "web")["spec"]["template"]["spec"]
             ["containers"][0]["image"] == "nginx:1.26", step=agent.step)
    assert _live(sim, "Deployment", "web")["spec"]["replicas"] == 7
    assert _drift_names(remote) == []


def test_without_an_hpa_replicas_stay_drift(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3),
                                      hpa("other", "bar")))
    agent = make_agent(remote, sim)
    _synced(remote, agent)
    _scale_as_hpa(sim, "web", 7)
    agent.step()
    assert _drift_names(remote) == [("web", ["spec.replicas"])]


def test_recovery_leaves_hpa_replicas_and_repairs_the_rest(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3), hpa("web", "bar")))
    agent = make_agent(remote, sim, clock=SystemClock(), recovery=True, interval=30.0)
    with running(agent):
        _synced(remote, agent)
        wait_for(lambda: agent.recovery is not None and len(agent.recovery._watches) == 2)
        _scale_as_hpa(sim, "web", 6)
        # a real drift after the scale: once Recovery has put it back, it has seen the scale
        person(sim).apply({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web", "namespace": "bar"},
                           "spec": {"template": {"spec": {"containers": [
                               {"name": "web", "image": "evil:1"}]}}}}, force=True)
        wait_for(lambda: _live(sim, "Deployment", "web")["spec"]["template"]["spec"]
                 ["containers"][0]["image"] == "nginx:1.25", timeout=60)
        assert _live(sim, "Deployment", "web")["spec"]["replicas"] == 6


def test_ignore_differences_json_pointer(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    ignore = [{"group": "", "kind": "ConfigMap", "name": "web-config",
               "jsonPointers": ["/data/mode"]}]
    publish(remote.git, "c1", _branch(configmap("web-config", "bar", {"mode": "blue", "x": "1"}),
                                      configmap("other", "bar", {"mode": "blue"}),
                                      ignore=ignore))
    agent = make_agent(remote, sim, clock=SystemClock(), recovery=True, interval=30.0)
    with running(agent):
        _synced(remote, agent)
        assert _live(sim, "ConfigMap", "web-config")["data"] == {"mode": "blue", "x": "1"}
        wait_for(lambda: agent.recovery is not None and len(agent.recovery._watches) == 1)
        for name in ("web-config", "other"):
            person(sim).apply({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name, "namespace": "bar"},
                               "data": {"mode": "green", "x": "2"}}, force=True)
        # the fields nobody ignores are put back; the ignored one stays as the person set it
        wait_for(lambda: _live(sim, "ConfigMap", "other")["data"]["mode"] == "blue")
        wait_for(lambda: _live(sim, "ConfigMap", "web-config")["data"]["x"] == "1")
        assert _live(sim, "ConfigMap", "web-config")["data"]["mode"] == "green"
    agent.step()
    assert _drift_names(remote) == []
    assert _live(sim, "ConfigMap", "web-config")["data"] == {"mode": "green", "x": "1"}


def test_ignore_differences_managed_fields_managers(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    ignore = [{"group": "apps", "kind": "Deployment",
               "managedFieldsManagers": ["rollouts-controller"]}]
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3), ignore=ignore))
    agent = make_agent(remote, sim)
    _synced(remote, agent)
    rollouts = KubeClient(sim.api_client(), KubeSettings(field_manager="rollouts-controller"))
    rollouts.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "bar"},
                    "spec": {"template": {"spec": {"containers": [
                        {"name": "web", "image": "nginx:canary"}]}}}}, force=True)
    _scale_as_hpa(sim, "web", 5)  # a manager nobody ignores: drift
    agent.step()
    assert _drift_names(remote) == [("web", ["spec.replicas"])]
    live = _live(sim, "Deployment", "web")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:canary"

    # a state change applies again: the rollout controller's image stays, the rest is applied
    changed = deployment("web", "bar", replicas=4)
    changed["metadata"]["labels"] = {**changed["metadata"]["labels"], "tier": "front"}
    publish(remote.git, "c1", _branch(changed, ignore=ignore))
    wait_for(lambda: _live(sim, "Deployment", "web")["spec"]["replicas"] == 4, step=agent.step)
    live = _live(sim, "Deployment", "web")
    assert live["metadata"]["labels"]["tier"] == "front"
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:canary"
    assert _drift_names(remote) == []


def test_federated_hpa_replicas_come_from_the_hub_and_are_never_drift(remote, kubesim,
                                                                      make_agent) -> None:
    """A FederatedHPA's decisions reach the cluster as rendered replicas (`owner: hub`): the
    agent applies a new value from Git, and a local scale is not drift."""
    sim = kubesim()
    ignore = [{"group": "apps", "kind": "Deployment", "namespace": "bar", "name": "web",
               "jsonPointers": ["/spec/replicas"], "owner": "hub"}]
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=3), ignore=ignore))
    agent = make_agent(remote, sim)
    _synced(remote, agent)
    assert _live(sim, "Deployment", "web")["spec"]["replicas"] == 3
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=5), ignore=ignore))
    wait_for(lambda: _live(sim, "Deployment", "web")["spec"]["replicas"] == 5, step=agent.step)
    _scale_as_hpa(sim, "web", 7)
    agent.step()
    assert _drift_names(remote) == []
    # another manager took the field: the hub's next total is left to it, still no drift
    publish(remote.git, "c1", _branch(deployment("web", "bar", replicas=4, image="nginx:1.26"),
                                      ignore=ignore))
    wait_for(lambda: _live(sim, "Deployment", "web")["spec"]["template"]["spec"]
             ["containers"][0]["image"] == "nginx:1.26", step=agent.step)
    assert _live(sim, "Deployment", "web")["spec"]["replicas"] == 7
    assert _drift_names(remote) == []
