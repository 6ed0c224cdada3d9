"""Object lifecycle: finalizers, owner references (garbage collection), preconditions."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

from tests.kubesim.conftest import configmap
from tests.kubesim.test_crds import CRD


def _eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


def _exists(core: client.CoreV1Api, name: str, ns: str) -> bool:
    try:
        core.read_namespaced_config_map(name, ns)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def test_finalizer_holds_deletion_until_removed(core: client.CoreV1Api, ns: str) -> None:
    body = configmap()
    body["metadata"]["finalizers"] = ["example.com/cleanup"]
    core.create_namespaced_config_map(ns, body)
    core.delete_namespaced_config_map("settings", ns)
    held = core.read_namespaced_config_map("settings", ns)
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("settings", ns, {"metadata": {"finalizers": None}},
                                     _content_type="application/merge-patch+json")
    assert not _exists(core, "settings", ns)


def test_dependents_are_garbage_collected(core: client.CoreV1Api, ns: str) -> None:
    owner = core.create_namespaced_config_map(ns, configmap("owner"))
    child = configmap("child")
    child["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                             "name": "owner", "uid": owner.metadata.uid}]
    core.create_namespaced_config_map(ns, child)
    core.delete_namespaced_config_map("owner", ns)
    assert _eventually(lambda: not _exists(core, "child", ns))


def test_delete_preconditions(core: client.CoreV1Api, ns: str) -> None:
    created = core.create_namespaced_config_map(ns, configmap())
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map("settings", ns, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="not-the-uid")))
    assert err.value.status == 409
    core.delete_namespaced_config_map("settings", ns, body=client.V1DeleteOptions(
        preconditions=client.V1Preconditions(resource_version=created.metadata.resource_version)))
    assert not _exists(core, "settings", ns)


def test_dynamic_client_discovers_a_crd_added_after_it_started(api: client.ApiClient, ns: str,
                                                               tmp_path: Path) -> None:
    dyn = dynamic.DynamicClient(api, cache_file=str(tmp_path / "cache.json"))
    with pytest.raises(dynamic.exceptions.ResourceNotFoundError):
        dyn.resources.get(api_version="example.com/v1", kind="Widget")
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1",
                             kind="CustomResourceDefinition")
    crds.create(body=CRD)

    def established() -> bool:
        conditions = crds.get(name="widgets.example.com").to_dict()["status"].get(
            "conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    assert _eventually(established)
    widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    assert widgets.create(namespace=ns, body={
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1}}).metadata.name == "w"


def test_orphan_propagation_keeps_dependents(sim, core: client.CoreV1Api,  # noqa: ANN001
                                             ns: str) -> None:
    owner = core.create_namespaced_config_map(ns, configmap("owner"))
    child = configmap("child")
    child["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                             "name": "owner", "uid": owner.metadata.uid}]
    core.create_namespaced_config_map(ns, child)
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Orphan")
    assert sim.settle()
    kept = core.read_namespaced_config_map("child", ns)
    assert not kept.metadata.owner_references
