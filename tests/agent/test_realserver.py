"""The agent against a server that behaves like a real one where it matters (kubesim, issue
21): a field the server does not know is an apply error naming its path, never silent drift;
an object held by a finalizer is Terminating, not gone, until the finalizer is removed."""

from __future__ import annotations

from gitfleet.agent.inventory import INVENTORY_NAME, INVENTORY_NAMESPACE, Inventory
from gitfleet.wire.status import Change, Phase
from tests.agent.fleetstate import configmap, deployment, description_files, publish
from tests.harness import person, status_of


def test_unknown_field_is_an_apply_error_with_its_path(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    typo = deployment("web", "bar")
    typo["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    publish(remote.git, "c1", description_files("default", "web", [
        typo, configmap("web-config", "bar", {"mode": "blue"})]))
    agent = make_agent(remote, sim)
    agent.step()
    desc = status_of(remote).descriptions[0]
    assert desc.phase is Phase.FAILURE
    objects = {o.name: o for o in desc.objects}
    assert objects["web"].change is Change.FAILED
    assert '.spec.template.spec.containers[name="web"].imagePullPolicyy: field not declared ' \
           "in schema" in objects["web"].error
    assert objects["web-config"].change is Change.CREATED  # the rest of the state applied
    assert person(sim).get("apps/v1", "Deployment", "bar", "web") is None

    publish(remote.git, "c1", description_files("default", "web", [
        deployment("web", "bar"), configmap("web-config", "bar", {"mode": "blue"})]))
    agent.step()
    assert {o.name: o.change for o in status_of(remote).descriptions[0].objects}["web"] \
        is Change.CREATED


def test_object_held_by_a_finalizer_is_terminating_until_released(remote, kubesim,
                                                                  make_agent) -> None:
    sim = kubesim()
    held = configmap("held", "bar", {"k": "v"})
    held["metadata"]["finalizers"] = ["example.com/hold"]
    publish(remote.git, "c1", description_files("default", "web", [
        held, configmap("web-config", "bar", {"mode": "blue"})]))
    agent = make_agent(remote, sim)
    agent.step()
    kube = person(sim)
    assert kube.get("v1", "ConfigMap", "bar", "held") is not None

    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"mode": "blue"})]))
    for _ in range(2):  # each sync finds it Terminating, held: never reported gone
        agent.step()
        live = kube.get("v1", "ConfigMap", "bar", "held")
        assert live["metadata"]["deletionTimestamp"]
        assert live["metadata"]["finalizers"] == ["example.com/hold"]
        assert {o.name: o.change for o in status_of(remote).pruned}.get("held") \
            is not Change.DELETED
        assert "core/ConfigMap/bar/held" in _inventory(kube)

    kube.merge_patch("v1", "ConfigMap", "bar", "held", {"metadata": {"finalizers": None}})
    assert kube.get("v1", "ConfigMap", "bar", "held") is None
    agent.step()
    assert [(o.name, o.change) for o in status_of(remote).pruned] == [
        ("held", Change.DELETED)]
    assert "core/ConfigMap/bar/held" not in _inventory(kube)


def _inventory(kube) -> set[str]:  # noqa: ANN001
    found = kube.get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    return set(Inventory.from_text(found["data"]["inventory.json"]).entries)
