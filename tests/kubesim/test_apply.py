"""Server-side apply: field ownership, conflicts, force, pruning, no-op applies."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, dynamic

from tests.kubesim.conftest import configmap, deployment


@pytest.fixture
def deployments(dyn: dynamic.DynamicClient) -> dynamic.Resource:
    return dyn.resources.get(api_version="apps/v1", kind="Deployment")


@pytest.fixture
def configmaps(dyn: dynamic.DynamicClient) -> dynamic.Resource:
    return dyn.resources.get(api_version="v1", kind="ConfigMap")


def _apply(resource: dynamic.Resource, body: dict, manager: str = "gitfleet",
           force: bool = False) -> dynamic.ResourceInstance:
    return resource.server_side_apply(body=body, name=body["metadata"]["name"],
                                      namespace=body["metadata"].get("namespace"),
                                      field_manager=manager, force_conflicts=force)


def _managers(obj: dynamic.ResourceInstance) -> dict[tuple[str, str], dict]:
    return {(m["manager"], m["operation"]): m["fieldsV1"]
            for m in obj.to_dict()["metadata"]["managedFields"]}


def test_apply_creates_and_records_fields_in_real_notation(deployments: dynamic.Resource,
                                                           ns: str) -> None:
    body = deployment()
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "MODE", "value": "x"}]
    out = _apply(deployments, body)
    fields = _managers(out)[("gitfleet", "Apply")]
    container = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}']
    assert container["."] == {}
    assert set(container) == {".", "f:name", "f:image", "f:ports", "f:env"}
    assert 'k:{"containerPort":8080,"protocol":"TCP"}' in container["f:ports"]
    assert 'k:{"name":"MODE"}' in container["f:env"]
    assert fields["f:spec"]["f:selector"] == {}  # label selectors are atomic
    assert fields["f:spec"]["f:replicas"] == {}
    # defaults are set by the server but owned by nobody
    assert "f:revisionHistoryLimit" not in fields["f:spec"]
    assert out.spec.revisionHistoryLimit == 10


def test_conflict_with_another_manager_then_force(deployments: dynamic.Resource,
                                                  ns: str) -> None:
    _apply(deployments, deployment(replicas=2))
    with pytest.raises(dynamic.exceptions.ConflictError) as err:
        _apply(deployments, deployment(replicas=4), manager="hpa-tool")
    status = json.loads(err.value.body)
    assert status["reason"] == "Conflict" and status["code"] == 409
    assert status["details"]["causes"] == [{
        "type": "FieldManagerConflict", "message": 'conflict with "gitfleet" using apps/v1',
        "field": ".spec.replicas"}]
    assert 'Apply failed with 1 conflict: conflict with "gitfleet"' in status["message"]
    out = _apply(deployments, deployment(replicas=4), manager="hpa-tool", force=True)
    assert out.spec.replicas == 4
    managers = _managers(out)
    assert "f:replicas" in managers[("hpa-tool", "Apply")]["f:spec"]
    assert "f:replicas" not in managers[("gitfleet", "Apply")]["f:spec"]


def test_same_value_is_shared_not_a_conflict(configmaps: dynamic.Resource, ns: str) -> None:
    _apply(configmaps, configmap(a="1", b="2"))
    out = _apply(configmaps, configmap(a="1"), manager="other")
    managers = _managers(out)
    assert managers[("other", "Apply")] == {"f:data": {"f:a": {}}}
    assert managers[("gitfleet", "Apply")] == {"f:data": {"f:a": {}, "f:b": {}}}


def test_fields_dropped_from_applied_config_are_removed_unless_owned(
        configmaps: dynamic.Resource, ns: str) -> None:
    _apply(configmaps, configmap(a="1", b="2", c="3"))
    _apply(configmaps, configmap(c="3"), manager="other")
    out = _apply(configmaps, configmap(a="1"))
    assert out.data.to_dict() == {"a": "1", "c": "3"}  # b pruned, c kept: "other" owns it


def test_dropped_list_item_is_removed(deployments: dynamic.Resource, ns: str) -> None:
    body = deployment()
    body["spec"]["template"]["spec"]["containers"].append({"name": "sidecar",
                                                           "image": "envoy:1"})
    _apply(deployments, body)
    out = _apply(deployments, deployment())
    names = [c["name"] for c in out.spec.template.spec.containers]
    assert names == ["app"]


def test_no_op_apply_writes_nothing(configmaps: dynamic.Resource, ns: str) -> None:
    first = _apply(configmaps, configmap(a="1"))
    second = _apply(configmaps, configmap(a="1"))
    assert second.metadata.resourceVersion == first.metadata.resourceVersion


def test_update_takes_ownership_and_apply_then_conflicts(
        deployments: dynamic.Resource, apps: client.AppsV1Api, ns: str) -> None:
    _apply(deployments, deployment(replicas=2))
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 7}},
                                           field_manager="kubectl")
    obj = deployments.get(name="web", namespace=ns)
    entries = {(m["manager"], m["operation"], m.get("subresource", ""))
               for m in obj.to_dict()["metadata"]["managedFields"]}
    assert ("kubectl", "Update", "scale") in entries
    assert obj.spec.replicas == 7
    with pytest.raises(dynamic.exceptions.ConflictError) as err:
        _apply(deployments, deployment(replicas=2))
    assert json.loads(err.value.body)["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas")


def test_apply_without_replicas_leaves_hpa_owned_replicas(deployments: dynamic.Resource,
                                                          apps: client.AppsV1Api,
                                                          ns: str) -> None:
    _apply(deployments, deployment(replicas=None))
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}},
                                           field_manager="hpa")
    out = _apply(deployments, deployment(replicas=None, image="nginx:1.26"))
    assert out.spec.replicas == 3
    assert out.spec.template.spec.containers[0].image == "nginx:1.26"


def test_apply_requires_field_manager_and_matching_kind(sim, ns: str) -> None:  # noqa: ANN001
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        f"{sim.url}/api/v1/namespaces/{ns}/configmaps/settings",
        data=json.dumps(configmap(a="1")).encode(), method="PATCH",
        headers={"Content-Type": "application/apply-patch+yaml"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 422
    err.value.close()


def test_apply_dry_run(configmaps: dynamic.Resource, ns: str) -> None:
    out = configmaps.server_side_apply(body=configmap(a="1"), name="settings", namespace=ns,
                                       field_manager="gitfleet", dry_run="All")
    assert out.data.a == "1"
    with pytest.raises(dynamic.exceptions.NotFoundError):
        configmaps.get(name="settings", namespace=ns)


def test_shared_quantity_in_another_spelling_is_not_a_conflict(deployments: dynamic.Resource,
                                                                ns: str) -> None:
    body = deployment()
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "500m"}}
    _apply(deployments, body)
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "0.5"}}
    _apply(deployments, body, manager="other")  # same value, other spelling: shared
    out = _apply(deployments, body)
    assert out.spec.template.spec.containers[0].resources.requests.cpu == "500m"


def test_typed_client_apply(core: client.CoreV1Api, ns: str) -> None:
    out = core.patch_namespaced_config_map(
        "settings", ns, configmap(a="1"), field_manager="gitfleet", force=True,
        _content_type="application/apply-patch+yaml")
    assert out.data == {"a": "1"}
    assert [(m.manager, m.operation) for m in out.metadata.managed_fields] == \
        [("gitfleet", "Apply")]


def test_switching_to_recreate_needs_rolling_update_removed(deployments: dynamic.Resource,
                                                            ns: str) -> None:
    _apply(deployments, deployment())  # the server defaults strategy.rollingUpdate
    body = deployment()
    body["spec"]["strategy"] = {"type": "Recreate"}
    with pytest.raises(dynamic.exceptions.UnprocessibleEntityError) as err:
        _apply(deployments, body)
    cause = json.loads(err.value.body)["details"]["causes"][0]
    assert cause["field"] == "spec.strategy.rollingUpdate"
    body["spec"]["strategy"] = {"type": "Recreate", "rollingUpdate": None}
    out = _apply(deployments, body)
    assert out.spec.strategy.to_dict() == {"type": "Recreate"}
