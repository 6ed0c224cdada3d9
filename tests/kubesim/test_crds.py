"""CRDs: a kind is unknown (404) until its CRD is Established; deleting the CRD removes it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

from gitfleet.kubesim import KubeSim

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                       "shortNames": ["wd"]},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def _widget(name: str, ns: str, size: int = 1) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": ns}, "spec": {"size": size}}


def _wait_established(ext: client.ApiextensionsV1Api, name: str) -> None:
    deadline = time.monotonic() + 60   # bounded generously: a busy machine is slow, not wrong
    while time.monotonic() < deadline:
        crd = ext.read_custom_resource_definition(name)
        conditions = {c.type: c.status for c in (crd.status.conditions or [])}
        if conditions.get("Established") == "True":
            return
        time.sleep(0.01)
    raise AssertionError("CRD never became Established")


def test_custom_resource_lifecycle(api: client.ApiClient, ns: str, tmp_path: Path) -> None:
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object("example.com", "v1", ns, "widgets",
                                               _widget("w1", ns))
    assert err.value.status == 404
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(CRD)
    _wait_established(ext, "widgets.example.com")
    created = custom.create_namespaced_custom_object("example.com", "v1", ns, "widgets",
                                                     _widget("w1", ns))
    assert created["metadata"]["generation"] == 1
    dyn = dynamic.DynamicClient(api, cache_file=str(tmp_path / "cache.json"))
    widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    assert widgets.namespaced and "wd" in widgets.short_names
    out = widgets.server_side_apply(body=_widget("w1", ns, size=3), name="w1", namespace=ns,
                                    field_manager="gitfleet", force_conflicts=True)
    assert out.spec.size == 3 and out.metadata.generation == 2
    listed = custom.list_namespaced_custom_object("example.com", "v1", ns, "widgets")
    assert [i["kind"] for i in listed["items"]] == ["Widget"]  # CR list items keep their kind
    ext.delete_custom_resource_definition("widgets.example.com")
    with pytest.raises(ApiException) as err:
        custom.get_namespaced_custom_object("example.com", "v1", ns, "widgets", "w1")
    assert err.value.status == 404


def test_status_subresource_of_custom_resource(api: client.ApiClient, ns: str) -> None:
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(CRD)
    _wait_established(ext, "widgets.example.com")
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object("example.com", "v1", ns, "widgets",
                                           dict(_widget("w1", ns), status={"ok": True}))
    obj = custom.get_namespaced_custom_object("example.com", "v1", ns, "widgets", "w1")
    assert "status" not in obj  # status is ignored on the main resource
    custom.patch_namespaced_custom_object_status("example.com", "v1", ns, "widgets", "w1",
                                                 {"status": {"ok": True}})
    obj = custom.get_namespaced_custom_object("example.com", "v1", ns, "widgets", "w1")
    assert obj["status"] == {"ok": True} and obj["metadata"]["generation"] == 1


def test_crd_name_must_match_group_and_plural(api: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(api)
    bad = dict(CRD, metadata={"name": "gadgets.example.com"})
    with pytest.raises(ApiException) as err:
        ext.create_custom_resource_definition(bad)
    assert err.value.status == 422


def test_crd_is_not_established_immediately() -> None:
    with KubeSim(crd_delay=0.3) as sim:
        api = sim.api_client()
        try:
            ext = client.ApiextensionsV1Api(api)
            ext.create_custom_resource_definition(CRD)
            crd = ext.read_custom_resource_definition("widgets.example.com")
            assert not (crd.status and crd.status.conditions)
            _wait_established(ext, "widgets.example.com")
        finally:
            api.close()


TYPED_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {
                               "type": "object",
                               "properties": {"spec": {
                                   "type": "object", "required": ["size"],
                                   "properties": {
                                       "size": {"type": "integer", "minimum": 1},
                                       "color": {"type": "string", "default": "blue",
                                                 "enum": ["blue", "red"]}}}}}}}]},
}


def test_custom_resources_follow_their_schema(api: client.ApiClient, ns: str) -> None:
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(TYPED_CRD)
    _wait_established(ext, "gadgets.example.com")
    custom = client.CustomObjectsApi(api)
    made = custom.create_namespaced_custom_object(
        "example.com", "v1", ns, "gadgets",
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
         "spec": {"size": 2, "unknown": "dropped"}})
    assert made["spec"] == {"size": 2, "color": "blue"}  # pruned and defaulted
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(
            "example.com", "v1", ns, "gadgets",
            {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "h"},
             "spec": {"size": "big", "color": "green"}})
    assert err.value.status == 422
    fields = {c["field"] for c in json.loads(err.value.body)["details"]["causes"]}
    assert fields == {"spec.size", "spec.color"}
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(
            "example.com", "v1", ns, "gadgets",
            {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "i"},
             "spec": {}})
    assert json.loads(err.value.body)["details"]["causes"][0]["field"] == "spec.size"


def test_a_second_served_version_reads_the_same_objects(api: client.ApiClient, ns: str) -> None:
    two = json.loads(json.dumps(CRD))
    v1 = two["spec"]["versions"][0]
    two["spec"]["versions"] = [dict(v1, name="v1beta1", storage=False), v1]
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(two)
    _wait_established(ext, "widgets.example.com")
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object("example.com", "v1", ns, "widgets",
                                           _widget("w1", ns))
    old = custom.get_namespaced_custom_object("example.com", "v1beta1", ns, "widgets", "w1")
    assert old["apiVersion"] == "example.com/v1beta1" and old["spec"] == {"size": 1}
