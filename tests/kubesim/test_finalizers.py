"""Finalizers in every deletion path, as a real API server and its garbage collector handle
them: an object holding a finalizer is Terminating (deletionTimestamp set) until the last one
is removed; foreground deletion waits for the dependents; orphan releases them; a namespace
stays Terminating while its content does and takes nothing new meanwhile."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from gitfleet.kubesim import KubeSim

HOLD = "example.com/hold"


def _cm(name: str, ns: str = "team-a", *, finalizers: list[str] | None = None,
        owner: dict[str, Any] | None = None, block: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if finalizers:
        meta["finalizers"] = finalizers
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                    "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"],
                                    "blockOwnerDeletion": block}]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def _eventually(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def _get(sim: KubeSim, name: str, ns: str = "team-a") -> dict[str, Any] | None:
    return sim.get_object("v1", "ConfigMap", name, ns)


def _release(core: client.CoreV1Api, name: str, ns: str = "team-a") -> None:
    core.patch_namespaced_config_map(name, ns, {"metadata": {"finalizers": None}})


def test_a_finalizer_holds_the_object_terminating_until_removed(core: client.CoreV1Api, ns: str,
                                                                 sim: KubeSim) -> None:
    core.create_namespaced_config_map(ns, _cm("held", finalizers=[HOLD]))
    core.delete_namespaced_config_map("held", ns)
    live = core.read_namespaced_config_map("held", ns)
    assert live.metadata.deletion_timestamp is not None and live.metadata.finalizers == [HOLD]
    again = core.delete_namespaced_config_map("held", ns)  # still there: the object again
    assert again["metadata"]["name"] == "held" and again["kind"] == "ConfigMap"
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("held", ns, {"metadata": {
            "finalizers": [HOLD, "example.com/more"]}})
    assert err.value.status == 422
    assert ('metadata.finalizers: Forbidden: no new finalizers can be added if the object is '
            'being deleted, found new finalizers []string{"example.com/more"}') in json.loads(
        err.value.body)["message"]
    _release(core, "held")
    assert _get(sim, "held") is None


def test_foreground_deletion_waits_for_the_dependents(core: client.CoreV1Api, ns: str,
                                                      sim: KubeSim) -> None:
    owner = core.create_namespaced_config_map(ns, _cm("owner")).to_dict()
    core.create_namespaced_config_map(ns, _cm("dep", owner=owner, finalizers=[HOLD]))
    core.create_namespaced_config_map(ns, _cm("free", owner=owner))
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Foreground")
    terminating = core.read_namespaced_config_map("owner", ns).metadata
    assert terminating.deletion_timestamp and "foregroundDeletion" in terminating.finalizers
    _eventually(lambda: _get(sim, "free") is None)
    dep = _eventually(lambda: (_get(sim, "dep") or {}).get("metadata", {}).get(
        "deletionTimestamp"))
    assert dep
    sim.settle()
    assert _get(sim, "owner") is not None  # still waiting for `dep`
    _release(core, "dep")
    _eventually(lambda: _get(sim, "dep") is None and _get(sim, "owner") is None)


def test_orphan_releases_and_background_collects(core: client.CoreV1Api, ns: str,
                                                 sim: KubeSim) -> None:
    owner = core.create_namespaced_config_map(ns, _cm("owner")).to_dict()
    core.create_namespaced_config_map(ns, _cm("kept", owner=owner))
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Orphan")
    _eventually(lambda: _get(sim, "owner") is None)
    assert "ownerReferences" not in _get(sim, "kept")["metadata"]

    owner = core.create_namespaced_config_map(ns, _cm("owner2")).to_dict()
    core.create_namespaced_config_map(ns, _cm("gone", owner=owner))
    core.create_namespaced_config_map(ns, _cm("stuck", owner=owner, finalizers=[HOLD]))
    core.delete_namespaced_config_map("owner2", ns)  # background: the owner goes at once
    assert _get(sim, "owner2") is None
    _eventually(lambda: _get(sim, "gone") is None)
    stuck = _eventually(lambda: _get(sim, "stuck") if (_get(sim, "stuck") or {}).get(
        "metadata", {}).get("deletionTimestamp") else None)
    assert stuck["metadata"]["finalizers"] == [HOLD]


def test_namespace_stays_terminating_while_its_content_does(core: client.CoreV1Api, ns: str,
                                                            sim: KubeSim) -> None:
    core.create_namespaced_config_map(ns, _cm("held", finalizers=[HOLD]))
    core.create_namespaced_config_map(ns, _cm("plain"))
    core.delete_namespace(ns)
    _eventually(lambda: _get(sim, "plain") is None)
    sim.settle()
    namespace = core.read_namespace(ns)
    assert namespace.status.phase == "Terminating"
    conditions = {c.type: c for c in namespace.status.conditions}
    assert "configmaps has 1 resource instances" in \
        conditions["NamespaceContentRemaining"].message
    assert f"{HOLD} in 1 resource instances" in conditions["NamespaceFinalizersRemaining"].message
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, _cm("late"))
    assert err.value.status == 403 and "is being terminated" in err.value.body
    _release(core, "held")
    _eventually(lambda: sim.get_object("v1", "Namespace", ns) is None)
