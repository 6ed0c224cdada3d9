"""Ownership that cannot be spoofed: reserved names, the inventory's origin, uids, adoption."""

from __future__ import annotations

from gitfleet.agent.inventory import INVENTORY_NAME, INVENTORY_NAMESPACE, Inventory
from gitfleet.agent.marks import ANNOTATION_ADOPTED, LABEL_CLUSTER, LABEL_DESCRIPTION
from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.wire.status import Change, SyncResult
from tests.agent.fleetstate import configmap, description_files, publish
from tests.harness import person, status_of


def _objects(remote, sim):
    return {o["metadata"]["name"]: o
            for o in person(sim).list_objects("v1", "ConfigMap", namespace="bar").items}


def _spoof_inventory(listing: str) -> dict:
    text = Inventory.from_text(
        '{"version":2,"objects":[{"apiVersion":"v1","kind":"ConfigMap","namespace":"bar",'
        f'"name":"{listing}","description":"default/web","hash":"x"}}]}}').to_text()
    return configmap(INVENTORY_NAME, INVENTORY_NAMESPACE, {"inventory.json": text})


def test_fleet_object_named_like_the_inventory_is_refused(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    kube.ensure_namespace("bar")
    kube.apply(configmap("precious", "bar", {"hand": "made"}))
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "1"})]))
    make_agent(remote, sim).step()
    # The fleet now ships a ConfigMap named like the agent's inventory, listing a hand-made one.
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "1"}), _spoof_inventory("precious")]))
    agent = make_agent(remote, sim)
    agent.step()
    assert "precious" in _objects(remote, sim)
    status = status_of(remote)
    objects = {(o.namespace, o.name): o for o in status.descriptions[0].objects}
    refused = objects[(INVENTORY_NAMESPACE, INVENTORY_NAME)]
    assert refused.change is Change.FAILED
    assert "reserved for the gitfleet agent's own records" in refused.error
    assert status.sync.result is SyncResult.FAILED
    agent.step()
    assert "precious" in _objects(remote, sim)


def test_inventory_not_written_by_the_agent_is_neither_read_nor_overwritten(
        remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    kube.ensure_namespace("bar")
    kube.apply(configmap("precious", "bar", {"hand": "made"}))
    kube.ensure_namespace(INVENTORY_NAMESPACE)
    kube.apply(_spoof_inventory("precious"))
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "1"})]))
    make_agent(remote, sim).step()
    assert "precious" in _objects(remote, sim)
    status = status_of(remote)
    assert status.sync.result is SyncResult.FAILED
    assert "was not written by the gitfleet agent" in status.sync.message
    cm = kube.get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    assert "precious" in cm["data"]["inventory.json"]  # left as the person wrote it


def test_abort_never_takes_over_an_object_recreated_by_hand(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "1"}), configmap("other", "bar", {"b": "1"})]))
    agent = make_agent(remote, sim)
    agent.step()
    kube.delete("v1", "ConfigMap", "bar", "web-config")
    kube.apply(configmap("web-config", "bar", {"a": "mine"}))
    # The desired content changes, so the agent wants to write the object again.
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "2"}), configmap("other", "bar", {"b": "1"})]))
    agent.step()
    live = _objects(remote, sim)["web-config"]
    assert live["data"] == {"a": "mine"} and LABEL_CLUSTER not in (live["metadata"].get(
        "labels") or {})
    status = status_of(remote)
    failed = {o.name: o for o in status.descriptions[0].objects}["web-config"]
    assert failed.change is Change.SKIPPED and "re-created outside gitfleet" in failed.error
    # When it leaves the fleet it is not deleted: it is not the object gitfleet wrote.
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("other", "bar", {"b": "1"})]))
    agent.step()
    assert _objects(remote, sim)["web-config"]["data"] == {"a": "mine"}
    cm = kube.get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    assert "web-config" not in cm["data"]["inventory.json"]


def test_overwrite_adopts_and_releases_unless_prune_adopted(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    kube.ensure_namespace("bar")
    kube.apply(configmap("kept", "bar", {"hand": "made", "extra": "x"}))
    kube.apply(configmap("dropped", "bar", {"hand": "made"}))
    dropped = configmap("dropped", "bar", {"hand": "fleet"})
    dropped["metadata"]["annotations"] = {"gitfleet.io/prune-adopted": "true"}
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("kept", "bar", {"hand": "fleet"}), dropped, configmap("anchor", "bar", {})],
        conflict_resolution="Overwrite"))
    agent = make_agent(remote, sim)
    agent.step()
    live = _objects(remote, sim)
    assert live["kept"]["data"]["hand"] == "fleet"
    assert live["kept"]["metadata"]["annotations"][ANNOTATION_ADOPTED] == "true"
    assert live["anchor"]["metadata"].get("annotations", {}).get(ANNOTATION_ADOPTED) is None
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("anchor", "bar", {})], conflict_resolution="Overwrite"))
    agent.step()
    live = _objects(remote, sim)
    assert "dropped" not in live  # its template said prune-adopted
    kept = live["kept"]
    labels = kept["metadata"].get("labels") or {}
    assert LABEL_CLUSTER not in labels and LABEL_DESCRIPTION not in labels
    assert ANNOTATION_ADOPTED not in (kept["metadata"].get("annotations") or {})
    assert kept["data"]["extra"] == "x"
    pruned = {o.name: o.change for o in status_of(remote).pruned}
    assert pruned == {"kept": Change.RELEASED, "dropped": Change.DELETED}
    inventory = kube.get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    assert sorted(e.ref.name for e in Inventory.from_text(
        inventory["data"]["inventory.json"]).entries.values()) == ["anchor"]


def test_preserve_resources_on_deletion_releases(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "1"})], preserve_resources_on_deletion=True))
    publish(remote.git, "c1", {
        **description_files("default", "web", [configmap("web-config", "bar", {"a": "1"})],
                            preserve_resources_on_deletion=True),
        **description_files("default", "api", [configmap("api-config", "bar", {"a": "1"})])})
    agent = make_agent(remote, sim)
    agent.step()
    publish(remote.git, "c1", description_files("default", "api", [
        configmap("api-config", "bar", {"a": "1"})]))
    agent.step()
    live = _objects(remote, sim)
    assert live["web-config"]["data"] == {"a": "1"}
    assert LABEL_CLUSTER not in (live["web-config"]["metadata"].get("labels") or {})
    assert {o.name: o.change for o in status_of(remote).pruned} == {
        "web-config": Change.RELEASED}


def test_labelled_object_in_no_inventory_is_pruned_only_if_gitfleet_wrote_it(
        remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("a", "bar", {"a": "1"}), configmap("b", "bar", {"b": "1"}),
        configmap("c", "bar", {"c": "1"})]))
    agent = make_agent(remote, sim)
    agent.step()
    # The inventory loses "c" (as after a sync killed before it recorded it), and a person
    # copies gitfleet's label onto an object of their own.
    cm = kube.get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    inventory = Inventory.from_text(cm["data"]["inventory.json"])
    text = inventory.without([k for k in inventory.entries if k.endswith("/c")]).to_text()
    cm["data"]["inventory.json"] = text
    agent.kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": INVENTORY_NAME, "namespace": INVENTORY_NAMESPACE,
        "annotations": cm["metadata"]["annotations"]}, "data": cm["data"]},
        field_manager="gitfleet-agent")
    copied = configmap("copied", "bar", {"x": "1"})
    copied["metadata"]["labels"] = {LABEL_CLUSTER: "c1"}
    kube.apply(copied)
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("a", "bar", {"a": "1"}), configmap("b", "bar", {"b": "1"})]))
    make_agent(remote, sim).step()
    assert sorted(_objects(remote, sim)) == ["a", "b", "copied"]


def test_standing_abort_conflict_makes_no_write(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    kube.ensure_namespace("bar")
    kube.apply(configmap("theirs", "bar", {"hand": "made"}))
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("theirs", "bar", {"hand": "fleet"}), configmap("mine", "bar", {"a": "1"})]))
    agent = make_agent(remote, sim)
    agent.step()
    agent.step()
    sim.reset_request_count()
    agent.step()
    assert sum(sim.request_count(v) for v in ("create", "update", "patch", "delete")) == 0
    assert _objects(remote, sim)["theirs"]["data"] == {"hand": "made"}
    skipped = {o.name: o for o in status_of(remote).descriptions[0].objects}["theirs"]
    assert skipped.change is Change.SKIPPED and "Abort leaves it alone" in skipped.error


def test_object_recreated_by_recovery_stays_gitfleets(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("a", "bar", {"v": "1"}), configmap("b", "bar", {"v": "1"})]))
    agent = make_agent(remote, sim)
    agent.step()
    old_uid = _objects(remote, sim)["a"]["metadata"]["uid"]
    kube.delete("v1", "ConfigMap", "bar", "a")
    key = next(k for k in agent.engine.known_inventory.entries if k.endswith("/a"))
    assert agent.engine.repair(key).change is Change.CREATED
    new_uid = _objects(remote, sim)["a"]["metadata"]["uid"]
    assert new_uid != old_uid
    assert agent.engine.known_inventory.get(key).uid == new_uid
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("a", "bar", {"v": "2"}), configmap("b", "bar", {"v": "1"})]))
    make_agent(remote, sim).step()  # a fresh agent reads the recorded uid from the cluster
    assert _objects(remote, sim)["a"]["data"] == {"v": "2"}
    assert {o.name: o.change for o in status_of(remote).descriptions[0].objects}["a"] \
        is Change.CONFIGURED


def test_abort_never_takes_over_a_recreated_copy_with_gitfleets_labels(
        remote, kubesim, make_agent) -> None:
    sim = kubesim()
    kube = person(sim)
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("a", "bar", {"v": "1"}), configmap("b", "bar", {"v": "1"})]))
    agent = make_agent(remote, sim)
    agent.step()
    exported = kube.get("v1", "ConfigMap", "bar", "a")
    kube.delete("v1", "ConfigMap", "bar", "a")
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        exported["metadata"].pop(key, None)
    exported["data"] = {"v": "theirs"}
    kube.create(exported)  # labels and annotations copied, someone else's object
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("a", "bar", {"v": "2"}), configmap("b", "bar", {"v": "1"})]))
    agent.step()
    assert _objects(remote, sim)["a"]["data"] == {"v": "theirs"}
    skipped = {o.name: o for o in status_of(remote).descriptions[0].objects}["a"]
    assert skipped.change is Change.SKIPPED and "re-created outside gitfleet" in skipped.error
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("b", "bar", {"v": "1"})]))
    agent.step()
    assert _objects(remote, sim)["a"]["data"] == {"v": "theirs"}  # not pruned either


def test_inventory_written_before_the_record_mark_is_read_and_prunes(
        remote, kubesim, make_agent) -> None:
    """An agent upgraded from before the record mark keeps its inventory: what it wrote then
    (managed-by gitfleet, its own field manager, no cluster label) is read, so an object that
    left the fleet while it was down is still pruned."""
    sim = kubesim()
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "1"}), configmap("old", "bar", {"b": "1"})]))
    make_agent(remote, sim).step()
    kube = person(sim)
    live = kube.get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    text = live["data"]["inventory.json"]
    kube.delete("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    earlier = configmap(INVENTORY_NAME, INVENTORY_NAMESPACE, {"inventory.json": text})
    earlier["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "gitfleet"}
    KubeClient(sim.api_client(), KubeSettings(field_manager="gitfleet")).apply(earlier)
    publish(remote.git, "c1", description_files("default", "web", [
        configmap("web-config", "bar", {"a": "1"})]))
    make_agent(remote, sim).step()
    assert status_of(remote).sync.result is not SyncResult.FAILED
    assert set(_objects(remote, sim)) == {"web-config"}
