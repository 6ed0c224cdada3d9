"""The agent applies its cluster branch, prunes only what it owns, and never more than it may."""

from __future__ import annotations

import pytest

from gitfleet.agent.agent import PushModeRefused
from gitfleet.agent.inventory import INVENTORY_NAME, INVENTORY_NAMESPACE, Inventory
from gitfleet.agent.marks import ANNOTATION_STATE_COMMIT, LABEL_CLUSTER, LABEL_DESCRIPTION
from gitfleet.clock import FakeClock, SystemClock
from gitfleet.wire.status import Change, Phase, SyncResult
from tests.agent.fleetstate import configmap, deployment, description_files, publish
from tests.harness import person, status_log, status_of, wait_for

WRITE_VERBS = ("create", "update", "patch", "delete")


def _web(*extra_configs: str, replicas: int = 3, **kwargs) -> dict[str, bytes]:
    objects = [deployment("web", "bar", replicas=replicas),
               configmap("web-config", "bar", {"mode": "blue"}),
               *[configmap(n, "bar", {"n": n}) for n in extra_configs]]
    return description_files("default", "web", objects, **kwargs)


def _names(kube, kind="ConfigMap", ns="bar", api_version="v1") -> list[str]:
    return sorted(o["metadata"]["name"] for o in kube.list_objects(
        api_version, kind, namespace=ns).items)


def test_apply_labels_inventory_status_and_quiet_noop(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    commit = publish(remote.git, "c1", _web("extra"))
    agent = make_agent(remote, sim)
    agent.step()
    kube = person(sim)
    assert _names(kube) == ["extra", "web-config"]  # namespace bar was created for them
    live = kube.get("apps/v1", "Deployment", "bar", "web")
    assert live["metadata"]["labels"][LABEL_CLUSTER] == "c1"
    assert live["metadata"]["labels"][LABEL_DESCRIPTION] == "default.web"
    assert live["metadata"]["annotations"][ANNOTATION_STATE_COMMIT] == commit
    inventory_cm = kube.get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    inventory = Inventory.from_text(inventory_cm["data"]["inventory.json"])
    assert len(inventory) == 3

    status = status_of(remote)
    assert status.sync.cluster_commit == commit and status.sync.result is SyncResult.SYNCED
    assert {o.name: o.change for o in status.descriptions[0].objects} == {
        "web": Change.CREATED, "web-config": Change.CREATED, "extra": Change.CREATED}
    wait_for(lambda: status_of(remote).descriptions[0].phase is Phase.SUCCESS, step=agent.step)
    web = {o.name: o for o in status_of(remote).descriptions[0].objects}["web"]
    assert web.replicas["readyReplicas"] == web.replicas["availableReplicas"] == 3

    before = {v: sim.request_count(v) for v in (*WRITE_VERBS, "list")}
    outcome_commit = status_of(remote).sync.cluster_commit
    agent.step()
    writes = sum(sim.request_count(v) - before[v] for v in WRITE_VERBS)
    lists = sim.request_count("list") - before["list"]
    assert writes == 0
    assert lists <= 2  # one per owned kind: ConfigMap, Deployment
    assert agent.last.status_written == "nothing"
    assert status_of(remote).sync.cluster_commit == outcome_commit
    assert "c1: applied state" in status_log(remote)


def test_removed_object_is_pruned_and_hand_made_objects_are_never_touched(
        remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    kube.ensure_namespace("bar")
    kube.create(configmap("hand-made", "bar", {"mine": "yes"}))
    publish(remote.git, "c1", _web("extra"))
    agent = make_agent(remote, sim)
    agent.step()
    assert _names(kube) == ["extra", "hand-made", "web-config"]

    publish(remote.git, "c1", _web())
    agent.step()
    assert _names(kube) == ["hand-made", "web-config"]
    status = status_of(remote)
    assert [(o.name, o.change) for o in status.pruned] == [("extra", Change.DELETED)]
    assert "deleted ConfigMap bar/extra" in status_log(remote)
    assert kube.get("v1", "ConfigMap", "bar", "hand-made")["data"] == {"mine": "yes"}


def test_existing_object_not_owned_is_not_taken_over(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    kube.ensure_namespace("bar")
    kube.create(configmap("web-config", "bar", {"mode": "theirs"}))
    publish(remote.git, "c1", _web())
    agent = make_agent(remote, sim)
    agent.step()
    assert kube.get("v1", "ConfigMap", "bar", "web-config")["data"] == {"mode": "theirs"}
    assert kube.get("apps/v1", "Deployment", "bar", "web") is not None  # the rest applied
    desc = status_of(remote).descriptions[0]
    skipped = {o.name: o for o in desc.objects}["web-config"]
    assert skipped.change is Change.SKIPPED and "not managed by gitfleet" in skipped.error
    assert desc.phase is Phase.FAILURE

    publish(remote.git, "c1", _web(conflict_resolution="Overwrite"))
    agent.step()
    assert kube.get("v1", "ConfigMap", "bar", "web-config")["data"] == {"mode": "blue"}


def test_render_error_keeps_everything(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _web("a", "b"))
    agent = make_agent(remote, sim)
    agent.step()
    # the hub keeps the last good content and marks it; even a state listing less prunes nothing
    publish(remote.git, "c1", description_files(
        "default", "web", [deployment("web", "bar")],
        render_errors=["templates/web.yaml:3: invalid YAML"]))
    agent.step()
    assert _names(person(sim)) == ["a", "b", "web-config"]
    desc = status_of(remote).descriptions[0]
    assert desc.render_errors == 1 and "nothing pruned" in desc.message


def test_mass_prune_is_refused_and_reported(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    extra = [f"c{i:02}" for i in range(11)]     # past the agent's floor of 10 deletions
    publish(remote.git, "c1", _web(*extra))
    agent = make_agent(remote, sim)
    agent.step()
    publish(remote.git, "c1", description_files("default", "web", [deployment("web", "bar")]))
    agent.step()
    assert _names(person(sim)) == [*extra, "web-config"]
    status = status_of(remote)
    assert status.sync.result is SyncResult.PRUNE_REFUSED
    assert "refusing to prune 12 of 13" in status.sync.message
    assert "Gitfleet-Approve-Deletions" in status.sync.message

    bold = make_agent(remote, sim, allow_mass_prune=True)
    bold.step()
    assert _names(person(sim)) == []


def test_api_faults_are_isolated_then_recovered(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _web())
    agent = make_agent(remote, sim)
    sim.down()
    agent.step()
    status = status_of(remote)
    assert status.sync.result is SyncResult.UNREACHABLE
    assert status.heartbeat is not None and not status.heartbeat.ready
    sim.up()
    sim.set_error_rate(verbs={"patch"}, rate=1.0, status=500)
    agent.step()
    # Every write fails, so the sync cannot even record its intent: it stops before acting.
    assert status_of(remote).sync.result is SyncResult.FAILED
    assert "500" in status_of(remote).sync.message
    assert _names(person(sim)) == []
    sim.set_error_rate(verbs={"list"}, rate=1.0, status=503)
    agent.step()
    assert status_of(remote).sync.result is SyncResult.FAILED
    assert "503" in status_of(remote).sync.message
    sim.clear_faults()
    agent.step()
    assert _names(person(sim)) == ["web-config"]
    assert status_of(remote).sync.result is SyncResult.SYNCED


def _crd(kind: str) -> dict:
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object",
                                         "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def test_crd_and_its_objects_apply_in_one_sync(remote, kubesim, make_agent) -> None:
    sim = kubesim(crd_delay=0.3)
    crd = _crd("Widget")
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w1", "namespace": "bar"}, "spec": {"size": 3}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bar"}}
    publish(remote.git, "c1", description_files("default", "widgets", [widget, crd, namespace]))
    # kubesim establishes the CRD in real time, so the agent waits on a real clock here
    agent = make_agent(remote, sim, clock=SystemClock())
    agent.step()
    changes = {o.kind: o.change for o in status_of(remote).descriptions[0].objects}
    assert changes == {"Widget": Change.CREATED, "CustomResourceDefinition": Change.CREATED,
                       "Namespace": Change.CREATED}
    assert person(sim).get("example.com/v1", "Widget", "bar", "w1")["spec"] == {"size": 3}


def test_crd_wait_runs_on_the_agents_clock(remote, kubesim, make_agent) -> None:
    """A CRD that is never Established is waited for on the injected clock (the sync does
    not sleep 30 real seconds), and its objects fail as not served until it is."""
    sim = kubesim(crd_delay=3600)
    crd = _crd("Gadget")
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget",
              "metadata": {"name": "g1", "namespace": "bar"}, "spec": {"size": 1}}
    publish(remote.git, "c1", description_files("default", "gadgets", [gadget, crd]))
    clock = FakeClock()
    agent = make_agent(remote, sim, clock=clock)
    start = clock.now()
    agent.step()
    assert clock.now() - start >= agent.kube.settings.crd_established_timeout
    objects = {o.kind: o for o in status_of(remote).descriptions[0].objects}
    assert objects["CustomResourceDefinition"].change is Change.CREATED
    assert objects["Gadget"].change is Change.FAILED
    assert "does not serve Gadget" in objects["Gadget"].error


def test_push_mode_is_left_to_the_hub_and_refused_without_app_pusher(
        remote, kubesim, make_agent) -> None:
    sim = kubesim()
    files = _web()
    files["cluster.yaml"] = b"name: c1\nsyncMode: Push\nclusterId: x\n"
    publish(remote.git, "c1", files)
    pusher = make_agent(remote, sim, app_pusher=True)
    pusher.step()
    assert person(sim).get("apps/v1", "Deployment", "bar", "web") is None
    assert "the hub applies" in status_of(remote).sync.message
    assert status_of(remote).heartbeat.app_pusher

    refusing = make_agent(remote, sim)
    with pytest.raises(PushModeRefused):
        refusing.step()
    assert person(sim).get("apps/v1", "Deployment", "bar", "web") is None
    assert "refuses" in status_of(remote).sync.message


def test_namespace_creation_is_a_setting(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", _web())
    agent = make_agent(remote, sim, create_namespaces=False)
    agent.step()
    objects = {o.name: o for o in status_of(remote).descriptions[0].objects}
    assert objects["web-config"].change is Change.FAILED
    assert "bar" in objects["web-config"].error
    assert person(sim).get("v1", "Namespace", "", "bar") is None
