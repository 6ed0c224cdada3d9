"""An inventory written by an agent before 0.2.0 (hash format 1: a Helm hook's entry holds
its content hash, as any object's) is read by this agent as what it meant: a hook that ran is
not run again and no object is applied again for the change of hash scheme; new content still
runs the hook again (issue 30, item 5). The whole upgrade, from the previous release's own
code, is tests/upgrade/test_upgrade.py; this is the same promise in-process, in seconds."""

from __future__ import annotations

import json
from typing import Any

from gitfleet import yamlio
from gitfleet.agent.inventory import (
    INVENTORY_KEY,
    INVENTORY_NAME,
    INVENTORY_NAMESPACE,
    Inventory,
    InventoryEntry,
)
from gitfleet.agent.records import RECORD_MANAGER, InventoryRecord
from gitfleet.kube.client import KubeClient
from gitfleet.wire.inventory import FORMAT, LEGACY_FORMAT
from gitfleet.wire.objectref import ObjectRef
from gitfleet.wire.status import Phase
from tests.agent.fleetstate import annotated, configmap, description_files, job, publish
from tests.agent.memkube import MemKube
from tests.harness import person, status_of, wait_for

PRE = {"helm.sh/hook": "pre-install,pre-upgrade"}   # before-hook-creation: Helm's default
MIGRATE = "batch/Job/app/migrate"


def _app(value: str) -> dict[str, bytes]:
    return description_files("default", "app", [
        annotated(job("migrate", "app"), PRE), configmap("config", "app", {"value": value})])


def _uid(sim) -> str | None:
    live = person(sim).get("batch/v1", "Job", "app", "migrate")
    return live["metadata"]["uid"] if live else None


def _record(sim) -> dict[str, Any]:
    cm = person(sim).get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    assert cm is not None
    return json.loads(cm["data"][INVENTORY_KEY])


def _write_as_before_0_2(sim, files: dict[str, bytes]) -> None:
    """The record as an agent before 0.2.0 left it: no `format`, and every entry's hash the
    content hash the Description lists (a hook's too)."""
    listed = {f"{r['apiVersion'].rpartition('/')[0]}/{r['kind']}/{r['namespace']}/{r['name']}":
              r["hash"] for path, data in files.items() if path.endswith("description.yaml")
              for r in yamlio.load_one(data, path)["spec"]["resources"]}
    doc = _record(sim)
    assert doc.pop("format") == FORMAT
    for entry in doc["objects"]:
        key = f"{entry['apiVersion'].rpartition('/')[0]}/{entry['kind']}/" \
              f"{entry['namespace']}/{entry['name']}"
        entry["hash"] = listed[key]
    kube = KubeClient(sim.api_client())
    cm = kube.get("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_NAME)
    assert cm is not None
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": INVENTORY_NAME, "namespace": INVENTORY_NAMESPACE,
        "labels": cm["metadata"]["labels"], "annotations": cm["metadata"]["annotations"]},
        "data": {INVENTORY_KEY: json.dumps(doc)}}, field_manager=RECORD_MANAGER)


def test_a_hook_an_older_agent_ran_is_not_run_again(remote, kubesim, make_agent) -> None:
    sim = kubesim()
    files = _app("1")
    publish(remote.git, "c1", files)
    old = make_agent(remote, sim)
    wait_for(lambda: (s := status_of(remote)) and s.descriptions[0].phase is Phase.SUCCESS,
             step=old.step, what="the app applied")
    uid = _uid(sim)
    assert uid
    old.close()
    _write_as_before_0_2(sim, files)

    sim.reset_request_count()
    agent = make_agent(remote, sim)    # the upgraded agent: a new process, same cluster
    for _ in range(3):
        agent.step()
    assert _uid(sim) == uid, "the hook ran again"
    assert sim.request_count("delete") == 0
    # read as meant, then recorded so: one write of the record, no object applied again
    assert sim.request_count("patch") == 1
    assert _record(sim)["format"] == FORMAT
    status = status_of(remote)
    assert status is not None and status.descriptions[0].phase is Phase.SUCCESS

    publish(remote.git, "c1", _app("2"))   # new content: the hook runs again, as it should
    wait_for(lambda: _uid(sim) not in (None, uid), step=agent.step, what="the hook run again")


def test_new_content_since_the_older_agent_ran_the_hook_runs_it_again(remote, kubesim,
                                                                     make_agent) -> None:
    sim = kubesim()
    files = _app("1")
    publish(remote.git, "c1", files)
    old = make_agent(remote, sim)
    wait_for(lambda: (s := status_of(remote)) and s.descriptions[0].phase is Phase.SUCCESS,
             step=old.step, what="the app applied")
    uid = _uid(sim)
    old.close()
    _write_as_before_0_2(sim, files)
    publish(remote.git, "c1", _app("2"))   # changed while the agent was being upgraded
    agent = make_agent(remote, sim)
    wait_for(lambda: _uid(sim) not in (None, uid), step=agent.step, what="the hook run again")


def test_a_sharded_record_changes_format_as_a_whole() -> None:
    kube = MemKube()
    made = [InventoryEntry(ObjectRef("v1", "ConfigMap", "app", f"c-{i:03d}"), "default/app",
                           f"sha256:{i:064d}", f"u-{i}") for i in range(60)]
    hook = InventoryEntry(ObjectRef("batch/v1", "Job", "app", "migrate"), "default/app",
                          "sha256:" + "9" * 64, "u-job")
    legacy = Inventory({e.ref.key: e for e in [*made, hook]}, format=LEGACY_FORMAT)
    record = InventoryRecord(kube, namespace=INVENTORY_NAMESPACE, name=INVENTORY_NAME,
                             shard_bytes=2048)
    record.write(legacy)
    back = InventoryRecord(kube, namespace=INVENTORY_NAMESPACE, name=INVENTORY_NAME,
                           shard_bytes=2048).read()
    assert back == legacy and back.format == LEGACY_FORMAT
    meant = back.as_meant({MIGRATE})
    assert meant.get(MIGRATE) != hook and meant.get(MIGRATE).hash.startswith("sha256:")
    assert all(meant.get(e.ref.key) == e for e in made)
    assert meant.as_meant({MIGRATE}) is meant
    record.write(meant)
    shards = [o for o in kube.list_objects("v1", "ConfigMap", namespace=INVENTORY_NAMESPACE).items
              if o["metadata"]["name"] != INVENTORY_NAME]
    assert len(shards) > 1
    assert {json.loads(o["data"][INVENTORY_KEY]).get("format") for o in shards} == {FORMAT}
    again = InventoryRecord(kube, namespace=INVENTORY_NAMESPACE, name=INVENTORY_NAME,
                            shard_bytes=2048).read()
    assert again == meant
