"""JSON merge patch, strategic merge patch (built-in list keys) and JSON patch."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from gitfleet.kubesim import KubeSim
from tests.kubesim.conftest import deployment


@pytest.fixture
def two_containers(apps: client.AppsV1Api, ns: str) -> None:
    body = deployment()
    body["spec"]["template"]["spec"]["containers"].append(
        {"name": "sidecar", "image": "envoy:1", "ports": [{"containerPort": 9901}]})
    apps.create_namespaced_deployment(ns, body)


def _containers(apps: client.AppsV1Api, ns: str) -> list[tuple[str, str]]:
    dep = apps.read_namespaced_deployment("web", ns)
    return [(c.name, c.image) for c in dep.spec.template.spec.containers]


def test_strategic_merge_patch_merges_containers_by_name(apps: client.AppsV1Api, ns: str,
                                                         two_containers: None) -> None:
    apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {
        "containers": [{"name": "sidecar", "image": "envoy:2"}]}}}})
    assert _containers(apps, ns) == [("app", "nginx:1.25"), ("sidecar", "envoy:2")]


def test_strategic_merge_patch_delete_directive(apps: client.AppsV1Api, ns: str,
                                                two_containers: None) -> None:
    apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {
        "containers": [{"name": "sidecar", "$patch": "delete"}]}}}})
    assert _containers(apps, ns) == [("app", "nginx:1.25")]


def test_merge_patch_replaces_lists_whole(apps: client.AppsV1Api, ns: str,
                                          two_containers: None) -> None:
    apps.patch_namespaced_deployment(
        "web", ns, {"spec": {"template": {"spec": {"containers": [
            {"name": "only", "image": "busybox:1"}]}}}},
        _content_type="application/merge-patch+json")
    assert _containers(apps, ns) == [("only", "busybox:1")]


def test_merge_patch_null_removes_a_key(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"},
                                           "data": {"a": "1", "b": "2"}})
    out = core.patch_namespaced_config_map("c", ns, {"data": {"a": None}},
                                           _content_type="application/merge-patch+json")
    assert out.data == {"b": "2"}


def test_json_patch(apps: client.AppsV1Api, ns: str, two_containers: None) -> None:
    apps.patch_namespaced_deployment("web", ns, [
        {"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "envoy:3"},
        {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}],
        _content_type="application/json-patch+json")
    assert _containers(apps, ns)[1] == ("sidecar", "envoy:3")
    with pytest.raises(ApiException) as err:
        apps.patch_namespaced_deployment("web", ns, [
            {"op": "test", "path": "/spec/replicas", "value": 99}],
            _content_type="application/json-patch+json")
    assert err.value.status == 422


def test_patch_of_missing_object_is_404(core: client.CoreV1Api, ns: str) -> None:
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("missing", ns, {"data": {"a": "1"}})
    assert err.value.status == 404


def test_immutable_selector(apps: client.AppsV1Api, ns: str, two_containers: None) -> None:
    with pytest.raises(ApiException) as err:
        apps.patch_namespaced_deployment("web", ns, {"spec": {"selector": {
            "matchLabels": {"app": "other"}}, "template": {"metadata": {
                "labels": {"app": "other"}}}}})
    assert err.value.status == 422 and "field is immutable" in err.value.body


def test_scale_subresource_read_and_replace(apps: client.AppsV1Api, ns: str,
                                            two_containers: None, sim: KubeSim) -> None:
    sim.settle()  # the controller's status write would make the read below stale
    scale = apps.read_namespaced_deployment_scale("web", ns)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web"
    scale.spec.replicas = 6
    apps.replace_namespaced_deployment_scale("web", ns, scale)
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 6
    scale.spec.replicas = 1  # stale resourceVersion
    with pytest.raises(ApiException) as err:
        apps.replace_namespaced_deployment_scale("web", ns, scale)
    assert err.value.status == 409
