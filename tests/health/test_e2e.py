"""Health through a real agent against kubesim: custom resources judged by the conventions and
by a CEL rule from `cluster.yaml`, phases and log lines following them."""

from __future__ import annotations

import logging
from typing import Any

import kubernetes
import pytest

from gitfleet import yamlio
from gitfleet.wire.status import Health, Phase
from tests.agent.fleetstate import description_files, publish
from tests.harness import status_of


def _crd(kind: str, plural: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}}


NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bar"}}


def _widget(size: int) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "bar"}, "spec": {"size": size}}


def _controller_writes(sim: Any, plural: str, name: str, status: dict[str, Any]) -> None:
    """What the custom resource's controller does: a write of the status subresource."""
    kubernetes.client.CustomObjectsApi(sim.api_client()).patch_namespaced_custom_object_status(
        "example.com", "v1", "bar", plural, name, {"status": status})


def _description(remote: Any) -> Any:
    status = status_of(remote)
    assert status is not None
    (desc,) = status.descriptions
    return desc


def _until_success(agent: Any, remote: Any) -> None:
    """Sync until the Description is Success (the CRD is judged Established by a later sync
    than the one that created it); a few syncs at most."""
    for _ in range(5):
        agent.step()
        if _description(remote).phase is Phase.SUCCESS:
            return
    raise AssertionError(f"not Success: {_description(remote)}")


def _ready(status: str, reason: str, generation: int) -> dict[str, Any]:
    return {"observedGeneration": generation, "conditions": [
        {"type": "Ready", "status": status, "reason": reason, "message": f"{reason} widget",
         "lastTransitionTime": "2026-11-01T00:00:00Z"}]}


def test_a_custom_resource_not_ready_keeps_its_description_progressing(
        remote, kubesim, make_agent, caplog: pytest.LogCaptureFixture) -> None:
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "widgets",
                                                [_crd("Widget", "widgets"), NAMESPACE,
                                                 _widget(1)], source_commit="1" * 40))
    agent = make_agent(remote, sim)
    _until_success(agent, remote)  # a Widget without conditions: nothing to wait for
    _controller_writes(sim, "widgets", "w1", _ready("True", "Ready", 1))

    # a new spec: the controller has not seen it yet, then says Ready=False while it works
    publish(remote.git, "c1", description_files("default", "widgets",
                                                [_crd("Widget", "widgets"), NAMESPACE,
                                                 _widget(2)], source_commit="2" * 40))
    caplog.set_level(logging.INFO, logger="gitfleet.agent.health")
    agent.step()
    desc = _description(remote)
    assert desc.phase is Phase.PROGRESSING
    assert "generation 2 not observed yet" in desc.message
    _controller_writes(sim, "widgets", "w1", _ready("False", "Resizing", 2))
    for _ in range(3):  # however many syncs see it: Progressing, never Success or Degraded
        agent.step()
        desc = _description(remote)
        assert desc.phase is Phase.PROGRESSING
        assert desc.message == "not ready: Resizing: Resizing widget"
        widget = next(o for o in desc.objects if o.kind == "Widget")
        assert widget.health is Health.PROGRESSING

    _controller_writes(sim, "widgets", "w1", _ready("True", "Ready", 2))
    agent.step()
    assert _description(remote).phase is Phase.SUCCESS
    lines = [(r.getMessage(), getattr(r, "fields", {})) for r in caplog.records
             if r.name == "gitfleet.agent.health"]
    # one line per change, as it happened: the Widget Healthy -> Progressing -> Healthy, the
    # Description Success -> Progressing -> Success; none for the syncs that changed nothing
    assert [(m, f.get("object") or f.get("description"), f["was"], f["now"])
            for m, f in lines] == [
        ("health", "Widget/bar/w1", "Healthy", "Progressing"),
        ("phase", "default/widgets", "Success", "Progressing"),
        ("health", "Widget/bar/w1", "Progressing", "Healthy"),
        ("phase", "default/widgets", "Progressing", "Success")]


def test_a_cel_rule_from_cluster_yaml_decides_a_custom_kind(remote, kubesim,
                                                            make_agent) -> None:
    sim = kubesim()
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget",
              "metadata": {"name": "g1", "namespace": "bar"}, "spec": {"mode": "fast"}}
    files = description_files("default", "gadgets", [_crd("Gadget", "gadgets"), NAMESPACE,
                                                     gadget])
    files["cluster.yaml"] = yamlio.dump({"name": "c1", "healthRules": [
        {"group": "example.com", "kind": "Gadget",
         "current": "status.phase == 'Running'",
         "failed": "status.phase == 'Broken' || status.restarts > 3"}]}).encode()
    publish(remote.git, "c1", files)
    agent = make_agent(remote, sim)
    agent.step()
    agent.step()
    desc = _description(remote)
    # by the conventions a Gadget without conditions would be Healthy; the rule waits for it
    assert desc.phase is Phase.PROGRESSING
    assert desc.message.startswith("health rule example.com/Gadget: ")

    _controller_writes(sim, "gadgets", "g1", {"phase": "Running", "restarts": 0})
    agent.step()
    assert _description(remote).phase is Phase.SUCCESS

    _controller_writes(sim, "gadgets", "g1", {"phase": "Running", "restarts": 5})
    agent.step()
    desc = _description(remote)
    assert desc.phase is Phase.DEGRADED
    assert desc.message == "health rule example.com/Gadget: failed holds"


def _deployment(image: str, state: str = "") -> dict[str, Any]:
    labels = {"app": "web"}
    template: dict[str, Any] = {"metadata": {"labels": labels},
                                "spec": {"containers": [{"name": "web", "image": image}]}}
    if state:  # how kubesim is told what the new pods' containers do (its podstates)
        template["metadata"]["annotations"] = {"kubesim.gitfleet.io/container-state": state}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "bar", "labels": labels},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": template}}


def test_a_deployment_whose_new_pods_crash_loop_is_degraded_within_one_sync(
        remote, kubesim, make_agent) -> None:
    sim = kubesim(pods=True)
    publish(remote.git, "c1", description_files("bar", "web", [NAMESPACE,
                                                               _deployment("shop:1")],
                                                source_commit="1" * 40))
    agent = make_agent(remote, sim)
    _until_success(agent, remote)

    publish(remote.git, "c1", description_files(
        "bar", "web", [NAMESPACE, _deployment("shop:2", "CrashLoopBackOff")],
        source_commit="2" * 40))
    agent.step()  # applies the new template: the rollout starts
    assert _description(remote).phase is Phase.PROGRESSING
    assert sim.settle()  # the controller has made the new pods; they crash
    agent.step()  # the first sync that can see them
    desc = _description(remote)
    assert desc.phase is Phase.DEGRADED, desc
    assert desc.message.startswith("pod web-"), desc.message
    assert "container web: CrashLoopBackOff: back-off" in desc.message
    (deployment,) = [o for o in desc.objects if o.kind == "Deployment"]
    assert deployment.health is Health.DEGRADED

    # the fix: a good template again; the rollout completes and the phase recovers
    publish(remote.git, "c1", description_files("bar", "web", [NAMESPACE,
                                                               _deployment("shop:3")],
                                                source_commit="3" * 40))
    agent.step()
    assert sim.settle()
    _until_success(agent, remote)
