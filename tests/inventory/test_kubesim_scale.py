"""6,000 objects in one cluster through kubesim's real HTTP API, the official client and the
real size limits: more than one ConfigMap can hold. The old single-ConfigMap inventory is
refused by the server; the sharded one holds them in shards well under the limit, migrates
from the single ConfigMap on upgrade, rewrites one shard per changed object, and shrinking
deletes only the shards gitfleet wrote. Scale is judged by counting writes, not by clocks."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator

import pytest

from gitfleet.agent.desired import DesiredState, parse_cluster_tree
from gitfleet.agent.engine import Engine, EngineSettings
from gitfleet.agent.inventory import INVENTORY_KEY, INVENTORY_NAME, INVENTORY_NAMESPACE, Inventory
from gitfleet.agent.records import ANNOTATION_RECORD, LABEL_SHARD_OF, RECORD_MANAGER
from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.kube.errors import ApiError
from gitfleet.kubesim import KubeSim
from tests.agent.fleetstate import configmap, description_files

NS, NAME = INVENTORY_NAMESPACE, INVENTORY_NAME
WRITES = ("create", "update", "patch", "delete")
LIMIT = 1024 * 1024


@functools.cache
def _set(first: int, last: int, version: int, changed: int) -> dict[str, bytes]:
    """The Description folder of ConfigMaps `first`..`last`-1 (`changed`: the one a version
    ahead). Cached: the states below share all their folders but one."""
    objs = [configmap(f"cm-{i:05d}", "app", {"v": str(version + (i == changed))})
            for i in range(first, last)]
    return description_files("default", f"set-{first // 50:03d}", objs)


@functools.cache
def _state(n: int, *, version: int = 1, changed: int = -1) -> DesiredState:
    """The cluster branch of `n` ConfigMaps, parsed. Cached: the agent parses a commit once and
    syncs the same DesiredState in every round (gitfleet.agent.clusterbranch), and writing
    6,000 objects' YAML and parsing it again for every sync was most of this module's CPU."""
    files: dict[str, bytes] = {}
    for d in range(0, n, 50):
        last = min(n, d + 50)
        files |= _set(d, last, version, changed if d <= changed < last else -1)
    return parse_cluster_tree(files, cluster_commit=f"{version:040d}")


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    with KubeSim() as server:
        yield server


def _engine(sim: KubeSim) -> Engine:
    return Engine(KubeClient(sim.api_client()), EngineSettings(cluster="c1",
                                                               max_prune_share=1.0))


def _person(sim: KubeSim) -> KubeClient:
    return KubeClient(sim.api_client(), KubeSettings(field_manager="kubectl"))


def _records(sim: KubeSim) -> dict[str, dict]:
    return {cm["metadata"]["name"]: cm for cm in _person(sim).list_objects(
        "v1", "ConfigMap", namespace=NS).items}


def _writes(sim: KubeSim) -> dict[str, int]:
    return {v: sim.request_count(v) for v in WRITES}


def _delta(sim: KubeSim, before: dict[str, int]) -> dict[str, int]:
    return {v: n - before[v] for v, n in _writes(sim).items() if n - before[v]}


def test_the_old_single_configmap_cannot_hold_6000_objects(sim: KubeSim) -> None:
    entries = _state(6000).objects.values()
    text = Inventory.from_doc({"objects": [
        {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "app", "name": o.ref.name,
         "description": o.description, "hash": o.hash,
         "uid": "0b6a3f53-5f0e-4b1e-9a8c-0123456789ab"} for o in entries]}).to_text()
    assert len(text) > LIMIT
    kube = _person(sim)
    kube.ensure_namespace(NS)
    with pytest.raises(ApiError) as err:
        kube.apply({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": NAME, "namespace": NS},
                    "data": {INVENTORY_KEY: text}}, field_manager=RECORD_MANAGER)
    assert err.value.status == 422
    assert "Too long: may not be more than 1048576 bytes" in str(err.value)


@pytest.mark.slow
def test_upgrade_grow_change_and_shrink_at_6000_objects(sim: KubeSim) -> None:
    person = _person(sim)
    person.ensure_namespace(NS)
    lookalike = configmap(f"{NAME}-7-0", NS, {"mine": "yes"})
    lookalike["metadata"]["labels"] = {LABEL_SHARD_OF: NAME}
    person.apply(lookalike)

    # Today's layout: 3,000 objects applied, their inventory in one ConfigMap (version 2),
    # written as the agent before this change wrote it.
    engine = _engine(sim)
    engine.sync(_state(3000))
    old = engine.inventory
    for name in _records(sim):
        if name not in (NAME, lookalike["metadata"]["name"]):
            person.delete("v1", "ConfigMap", NS, name)
    person.apply({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": NAME, "namespace": NS,
                               "labels": {"app.kubernetes.io/managed-by": "gitfleet"},
                               "annotations": {ANNOTATION_RECORD: "inventory"}},
                  "data": {INVENTORY_KEY: old.to_text()}}, field_manager=RECORD_MANAGER)
    assert set(_records(sim)) == {NAME, f"{NAME}-7-0"}

    # The upgraded agent reads it as it is: a no-op sync writes nothing.
    upgraded = _engine(sim)
    before = _writes(sim)
    assert upgraded.sync(_state(3000)).writes == 0 and _delta(sim, before) == {}
    assert upgraded.inventory == old

    # 6,000 objects: the inventory moves to shards, each well under the limit.
    report = upgraded.sync(_state(6000))
    assert sum(r.change == "created" for r in report.objects.values()) == 3000
    records = _records(sim)
    index = json.loads(records[NAME]["data"][INVENTORY_KEY])
    shards = [f"{NAME}-{index['generation']}-{i}" for i in range(index["shards"])]
    assert index["version"] == 3 and index["objects"] == 6000 and len(shards) >= 3
    assert set(records) == {NAME, f"{NAME}-7-0", *shards}
    assert all(len(records[s]["data"][INVENTORY_KEY]) <= LIMIT // 2 for s in shards)
    restarted = _engine(sim)
    inventory = restarted.inventory
    assert set(inventory.entries) == set(_state(6000).objects) and not inventory.interrupted

    # A no-op sync of 6,000 objects writes nothing; one changed object costs its own apply
    # and one shard written twice (journal, then record), never the index.
    before = _writes(sim)
    assert restarted.sync(_state(6000)).writes == 0 and _delta(sim, before) == {}
    index_version = records[NAME]["metadata"]["resourceVersion"]
    before = _writes(sim)
    report = restarted.sync(_state(6000, changed=4321))
    assert report.objects["core/ConfigMap/app/cm-04321"].change == "configured"
    assert _delta(sim, before) == {"patch": 3}
    assert _records(sim)[NAME]["metadata"]["resourceVersion"] == index_version

    # Shrinking to 100 objects deletes the shards gitfleet wrote, and only those.
    restarted.sync(_state(100, changed=4321))
    records = _records(sim)
    assert set(records) == {NAME, f"{NAME}-7-0"}
    assert records[f"{NAME}-7-0"]["data"] == {"mine": "yes"}
    inline = json.loads(records[NAME]["data"][INVENTORY_KEY])
    assert inline["version"] == 2 and len(inline["objects"]) == 100
    assert len(person.list_objects("v1", "ConfigMap", namespace="app").items) == 100
