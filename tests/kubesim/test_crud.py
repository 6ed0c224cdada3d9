"""Create, read, update, delete, list with selectors, resourceVersion and generation."""

from __future__ import annotations

import json
import re

import pytest
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

from tests.kubesim.conftest import configmap, deployment, ours


def _status(exc: ApiException) -> dict:
    return json.loads(exc.body)


def test_namespaced_object_needs_its_namespace(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("nowhere", configmap(namespace="nowhere", a="1"))
    assert err.value.status == 404
    body = _status(err.value)
    assert body["reason"] == "NotFound"
    assert body["details"] == {"name": "nowhere", "kind": "namespaces"}


def test_create_sets_server_fields(core: client.CoreV1Api, ns: str) -> None:
    created = core.create_namespaced_config_map(ns, configmap(a="1"))
    meta = created.metadata
    assert meta.uid and meta.creation_timestamp and meta.resource_version
    assert meta.managed_fields[0].operation == "Update"
    again = core.read_namespaced_config_map("settings", ns)
    assert again.metadata.uid == meta.uid and again.data == {"a": "1"}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, configmap(a="2"))
    assert err.value.status == 409 and _status(err.value)["reason"] == "AlreadyExists"


def test_update_with_stale_resource_version_conflicts(core: client.CoreV1Api, ns: str) -> None:
    first = core.create_namespaced_config_map(ns, configmap(a="1"))
    first.data = {"a": "2"}
    second = core.replace_namespaced_config_map("settings", ns, first)
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    first.data = {"a": "3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("settings", ns, first)
    assert err.value.status == 409 and _status(err.value)["reason"] == "Conflict"


def test_generation_moves_on_spec_changes_only(apps: client.AppsV1Api, ns: str) -> None:
    created = apps.create_namespaced_deployment(ns, deployment())
    assert created.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment(
        "web", ns, {"metadata": {"labels": {"tier": "front"}}})
    assert labelled.metadata.generation == 1
    assert labelled.metadata.resource_version != created.metadata.resource_version
    scaled = apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 5}})
    assert scaled.metadata.generation == 2


def test_list_with_label_and_field_selectors(core: client.CoreV1Api, ns: str) -> None:
    for name, tier in (("a", "front"), ("b", "back"), ("c", "front")):
        body = configmap(name)
        body["metadata"]["labels"] = {"tier": tier}
        core.create_namespaced_config_map(ns, body)
    names = lambda items: sorted(i.metadata.name for i in items)  # noqa: E731
    assert names(core.list_namespaced_config_map(ns, label_selector="tier=front").items) == \
        ["a", "c"]
    assert names(core.list_namespaced_config_map(
        ns, label_selector="tier in (back),tier!=front").items) == ["b"]
    assert names(core.list_namespaced_config_map(ns, field_selector="metadata.name=b").items) \
        == ["b"]
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map(ns, field_selector="data.x=1")
    assert err.value.status == 400


def test_list_pages_with_limit_and_continue(core: client.CoreV1Api, ns: str) -> None:
    for i in range(5):
        core.create_namespaced_config_map(ns, configmap(f"cm-{i}"))
    page = core.list_namespaced_config_map(ns, limit=2)
    seen = [i.metadata.name for i in ours(page.items)]
    core.delete_namespaced_config_map(seen[0], ns)  # a deletion between pages skips nothing
    while page.metadata._continue:
        page = core.list_namespaced_config_map(ns, limit=2, _continue=page.metadata._continue)
        seen += [i.metadata.name for i in ours(page.items)]
    assert sorted(seen) == [f"cm-{i}" for i in range(5)]


def test_invalid_name_is_422_with_status_causes(core: client.CoreV1Api, ns: str) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, configmap("Bad_Name"))
    body = _status(err.value)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["details"]["kind"] == "ConfigMap"


def test_missing_required_fields_are_422(dyn: dynamic.DynamicClient, ns: str) -> None:
    broken = deployment()
    del broken["spec"]["selector"]
    broken["spec"]["template"]["spec"]["containers"][0].pop("image")
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    with pytest.raises(dynamic.exceptions.UnprocessibleEntityError) as err:
        deployments.create(body=broken, namespace=ns)
    fields = {c["field"] for c in json.loads(err.value.body)["details"]["causes"]}
    assert {"spec.selector", "spec.template.spec.containers[0].image"} <= fields


def test_dry_run_stores_nothing(core: client.CoreV1Api, ns: str) -> None:
    out = core.create_namespaced_config_map(ns, configmap(a="1"), dry_run="All")
    assert out.metadata.uid
    assert ours(core.list_namespaced_config_map(ns).items) == []


def test_delete_and_cluster_scoped_objects(dyn: dynamic.DynamicClient) -> None:
    roles = dyn.resources.get(api_version="rbac.authorization.k8s.io/v1", kind="ClusterRole")
    roles.create(body={"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "reader"},
                       "rules": [{"apiGroups": [""], "resources": ["pods"],
                                  "verbs": ["get"]}]})
    assert roles.get(name="reader").rules[0].verbs == ["get"]
    roles.delete(name="reader")
    with pytest.raises(dynamic.exceptions.NotFoundError):
        roles.get(name="reader")


def test_dry_run_update_patch_and_delete_change_nothing(core: client.CoreV1Api,
                                                        ns: str) -> None:
    created = core.create_namespaced_config_map(ns, configmap(a="1"))
    patched = core.patch_namespaced_config_map("settings", ns, {"data": {"a": "2"}},
                                               dry_run="All")
    assert patched.data == {"a": "2"}
    created.data = {"a": "3"}
    replaced = core.replace_namespaced_config_map("settings", ns, created, dry_run="All")
    assert replaced.data == {"a": "3"}
    core.delete_namespaced_config_map("settings", ns, dry_run="All")
    live = core.read_namespaced_config_map("settings", ns)
    assert live.data == {"a": "1"}
    assert live.metadata.resource_version == created.metadata.resource_version


def test_access_reviews_are_allowed(api: client.ApiClient) -> None:
    review = client.AuthorizationV1Api(api).create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "create", "group": "apps",
                                         "resource": "deployments", "namespace": "x"}}})
    assert review.status.allowed is True


@pytest.mark.parametrize(("kind", "name"), [("Service", "1st-service"),
                                            ("Namespace", "a" * 64),
                                            ("ConfigMap", "-leading-dash")])
def test_names_follow_each_kinds_rule(dyn: dynamic.DynamicClient, ns: str, kind: str,
                                      name: str) -> None:
    resource = dyn.resources.get(api_version="v1", kind=kind)
    body: dict = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}
    if kind == "Service":
        body["spec"] = {"ports": [{"port": 80}]}
    with pytest.raises(dynamic.exceptions.UnprocessibleEntityError) as err:
        resource.create(body=body, namespace=ns if kind != "Namespace" else None)
    assert json.loads(err.value.body)["details"]["causes"][0]["field"] == "metadata.name"


def test_generate_name_as_a_real_server_fills_it(api: client.ApiClient, ns: str) -> None:
    """Argo CD and Helm create hook Jobs with generateName (POST, never apply)."""
    jobs = client.BatchV1Api(api)
    body = {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"generateName": "presync-migrate-"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "migrate", "image": "busybox:1.36"}]}}}}
    names = {jobs.create_namespaced_job(ns, body).metadata.name for _ in range(3)}
    assert len(names) == 3
    assert all(re.fullmatch(r"presync-migrate-[bcdfghjklmnpqrstvwxz2456789]{5}", n)
               for n in names)
    long = dict(body, metadata={"generateName": "x" * 70})
    name = jobs.create_namespaced_job(ns, long).metadata.name
    assert len(name) == 63 and name.startswith("x" * 58)
