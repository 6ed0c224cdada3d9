"""fieldValidation as a real API server does it: Strict refuses a field the kind has no place
for, naming its path; Warn (the default) answers with a `Warning` header per field; Ignore
drops them quietly. Whatever the directive, an unknown field is never stored, and server-side
apply refuses one outright (a real 1.30 server answers 500 with structured-merge-diff's text).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from gitfleet.kubesim import KubeSim
from tests.kubesim.conftest import deployment
from tests.kubesim.test_crds import _wait_established

TYPO_PATHS = ('unknown field "spec.template.spec.containers[0].imagee"',  # in body order
              'unknown field "spec.replica"')


def _typo(name: str = "web") -> dict[str, Any]:
    body = deployment(name)
    body["spec"]["replica"] = 3
    body["spec"]["template"]["spec"]["containers"][0]["imagee"] = "nginx:1.26"
    return body


def _call(api: client.ApiClient, method: str, path: str, body: Any = None, *,
          query: str = "", content_type: str = "application/json") -> tuple[int, Any, list[str]]:
    """One raw request through the official client's REST layer: status, body, warnings."""
    url = f"{api.configuration.host}{path}" + (f"?{query}" if query else "")
    headers = {"Content-Type": content_type, "Accept": "application/json"}
    if isinstance(body, str):  # bytes as written (the client would JSON-encode a str)
        raw = api.rest_client.pool_manager.request(method, url, body=body.encode(),
                                                   headers=headers)
        return raw.status, json.loads(raw.data or b"{}"), list(raw.headers.getlist("Warning"))
    resp = api.rest_client.request(method, url, headers=headers, body=body)
    data = json.loads(resp.read() or b"{}")
    return resp.status, data, list(resp.headers.getlist("Warning"))


DEPLOYMENTS = "/apis/apps/v1/namespaces/team-a/deployments"


def test_strict_create_names_every_unknown_path_and_stores_nothing(
        api: client.ApiClient, ns: str, sim: KubeSim) -> None:
    status, body, _ = _call(api, "POST", DEPLOYMENTS, _typo(), query="fieldValidation=Strict")
    assert status == 400 and body["reason"] == "BadRequest", body
    assert body["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: '
                               "strict decoding error: " + ", ".join(TYPO_PATHS))
    assert sim.get_object("apps/v1", "Deployment", "web", ns) is None


@pytest.mark.parametrize("query", ["", "fieldValidation=Warn"])
def test_warn_is_the_default_and_drops_the_fields(api: client.ApiClient, ns: str, sim: KubeSim,
                                                  query: str) -> None:
    status, body, warnings = _call(api, "POST", DEPLOYMENTS, _typo(), query=query)
    assert status == 201
    assert [w.split(" - ", 1)[1] for w in warnings] == [
        json.dumps(t) for t in TYPO_PATHS]
    stored = sim.get_object("apps/v1", "Deployment", "web", ns)
    assert "replica" not in stored["spec"] and stored["spec"]["replicas"] == 2
    assert "imagee" not in stored["spec"]["template"]["spec"]["containers"][0]


def test_ignore_drops_quietly(api: client.ApiClient, ns: str, sim: KubeSim) -> None:
    status, _, warnings = _call(api, "POST", DEPLOYMENTS, _typo(), query="fieldValidation=Ignore")
    assert (status, warnings) == (201, [])
    assert "replica" not in sim.get_object("apps/v1", "Deployment", "web", ns)["spec"]


def test_patches_under_strict(api: client.ApiClient, ns: str, sim: KubeSim) -> None:
    assert _call(api, "POST", DEPLOYMENTS, deployment())[0] == 201
    status, body, _ = _call(api, "PATCH", f"{DEPLOYMENTS}/web", {"spec": {"replica": 1}},
                            query="fieldValidation=Strict",
                            content_type="application/merge-patch+json")
    assert (status, body["message"]) == (400, 'strict decoding error: unknown field "spec.replica"')
    status, body, _ = _call(api, "PATCH", f"{DEPLOYMENTS}/web", {"spec": {"replica": 1}},
                            query="fieldValidation=Strict",
                            content_type="application/strategic-merge-patch+json")
    assert status == 422 and body["details"]["causes"][0]["field"] == "patch"
    assert body["message"].endswith(': "map[spec:map[replica:1]]": strict decoding error: '
                                    'unknown field "spec.replica"')
    assert sim.get_object("apps/v1", "Deployment", "web", ns)["spec"]["replicas"] == 2


@pytest.mark.parametrize("query", ["fieldManager=me", "fieldManager=me&fieldValidation=Ignore"])
def test_server_side_apply_refuses_unknown_fields_whatever_the_directive(
        api: client.ApiClient, ns: str, sim: KubeSim, query: str) -> None:
    status, body, _ = _call(api, "PATCH", f"{DEPLOYMENTS}/web", json.dumps(_typo()),
                            query=query, content_type="application/apply-patch+yaml")
    assert status == 500 and "reason" not in body
    assert body["message"] == (
        "failed to create typed patch object (team-a/web; apps/v1, Kind=Deployment): errors:\n"
        "  .spec.replica: field not declared in schema\n"
        '  .spec.template.spec.containers[name="app"].imagee: field not declared in schema')
    assert sim.get_object("apps/v1", "Deployment", "web", ns) is None


WIDGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                     "type": "object", "properties": {
                         "size": {"type": "integer"},
                         "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                   "x-kubernetes-list-map-keys": ["name"],
                                   "items": {"type": "object", "required": ["name"],
                                             "properties": {"name": {"type": "string"}}}},
                         "extra": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}}}}}]},
}


def test_custom_resources_follow_their_structural_schema(api: client.ApiClient, ns: str,
                                                         sim: KubeSim) -> None:
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(WIDGETS_CRD)
    _wait_established(ext, "gadgets.example.com")
    path = "/apis/example.com/v1/namespaces/team-a/gadgets"
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget",
              "metadata": {"name": "g", "namespace": ns},
              "spec": {"size": 1, "colour": "red", "ports": [{"name": "http", "port": 80}],
                       "extra": {"anything": {"goes": True}}}}
    status, body, _ = _call(api, "POST", path, gadget, query="fieldValidation=Strict")
    assert status == 400 and body["message"] == (
        'Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: '
        'unknown field "spec.colour", unknown field "spec.ports[0].port"')
    status, body, warnings = _call(api, "POST", path, gadget)
    assert status == 201 and len(warnings) == 2
    assert body["spec"] == {"size": 1, "ports": [{"name": "http"}],
                            "extra": {"anything": {"goes": True}}}
    status, body, _ = _call(api, "PATCH", f"{path}/g", json.dumps(gadget),
                            query="fieldManager=me", content_type="application/apply-patch+yaml")
    assert status == 500 and body["message"].endswith(
        '.spec.ports[name="http"].port: field not declared in schema')


def test_duplicate_fields_in_a_json_body(api: client.ApiClient, ns: str, sim: KubeSim) -> None:
    body = json.dumps(deployment()).replace('"replicas": 2', '"replicas": 2, "replicas": 5')
    status, answer, _ = _call(api, "POST", DEPLOYMENTS, body, query="fieldValidation=Strict")
    assert status == 400 and answer["message"].endswith(
        'strict decoding error: duplicate field "replicas"')
    status, _, warnings = _call(api, "POST", DEPLOYMENTS, body)
    assert status == 201 and warnings == ['299 - "duplicate field \\"replicas\\""']
    assert sim.get_object("apps/v1", "Deployment", "web", ns)["spec"]["replicas"] == 5
