"""Dry runs (`dryRun=All`) and strict field validation, as a plan asks them (gitfleet.agent.
planreview): the server answers what the write would do - defaulted object, immutable field,
unknown field - and stores nothing. The expected codes and messages are those of a 1.30
kube-apiserver: an immutable selector is 422 Invalid naming `spec.selector` with Go's `%#v`
of the selector; an unknown field is 400 "strict decoding error: unknown field" on create and
update with fieldValidation=Strict, and 500 "failed to create typed patch object ... field not
declared in schema" on a server-side apply (kubernetes/kubernetes#118476: apply always fails
on unknown fields, with a 500)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, dynamic

from gitfleet.kube.client import KubeClient
from gitfleet.kube.errors import ApiError
from tests.harness import wait_for
from tests.kubesim.conftest import deployment


def _ssa(dyn: dynamic.DynamicClient, body: dict, **kwargs: object) -> dynamic.ResourceInstance:
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    return deployments.server_side_apply(body=body, name=body["metadata"]["name"],
                                         namespace=body["metadata"]["namespace"],
                                         field_manager="gitfleet", force_conflicts=True,
                                         **kwargs)


def _stored(apps: client.AppsV1Api, name: str = "web") -> tuple[str, str, int]:
    """The Deployment's uid, resourceVersion and replicas, once its controller has rolled it
    out (it writes the status on its own until then)."""
    def rolled_out() -> client.V1Deployment | None:
        live = apps.read_namespaced_deployment(name, "team-a")
        status = live.status
        done = status.observed_generation == live.metadata.generation and \
            status.updated_replicas == status.available_replicas == live.spec.replicas
        return live if done else None

    live = wait_for(rolled_out, what=f"Deployment {name} rolled out")
    return live.metadata.uid, live.metadata.resource_version, live.spec.replicas


def test_dry_run_apply_answers_the_defaulted_object_and_stores_nothing(
        dyn: dynamic.DynamicClient, apps: client.AppsV1Api, ns: str) -> None:
    _ssa(dyn, deployment(replicas=2))
    before = _stored(apps)
    out = _ssa(dyn, deployment(replicas=5), dry_run="All", field_validation="Strict")
    assert out.spec.replicas == 5
    assert out.spec.strategy.type == "RollingUpdate"        # defaulted, as it would be stored
    assert out.metadata.generation == 2                      # what the write would make it
    assert _stored(apps) == before


def test_dry_run_create_returns_a_new_object_that_never_exists(
        dyn: dynamic.DynamicClient, apps: client.AppsV1Api, ns: str) -> None:
    out = _ssa(dyn, deployment(name="api"), dry_run="All", field_validation="Strict")
    assert out.metadata.name == "api" and out.spec.revisionHistoryLimit == 10
    with pytest.raises(client.ApiException) as err:
        apps.read_namespaced_deployment("api", "team-a")
    assert err.value.status == 404


def test_dry_run_of_a_changed_selector_is_refused_as_immutable(
        dyn: dynamic.DynamicClient, apps: client.AppsV1Api, ns: str) -> None:
    _ssa(dyn, deployment())
    before = _stored(apps)
    moved = deployment()
    moved["spec"]["selector"]["matchLabels"] = {"app": "web", "tier": "front"}
    moved["spec"]["template"]["metadata"]["labels"] = {"app": "web", "tier": "front"}
    with pytest.raises(dynamic.exceptions.DynamicApiError) as err:
        _ssa(dyn, moved, dry_run="All", field_validation="Strict")
    status = json.loads(err.value.body)
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        'Deployment.apps "web" is invalid: spec.selector: Invalid value: '
        'v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"front"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable")
    assert status["details"]["causes"][0]["field"] == "spec.selector"
    assert _stored(apps) == before


def test_unknown_field_refused_by_a_dry_run_apply_and_a_strict_create(
        api: client.ApiClient, dyn: dynamic.DynamicClient, apps: client.AppsV1Api,
        ns: str) -> None:
    # gitfleet's adapter over the official ApiClient: the dynamic client drops fieldValidation
    kube = KubeClient(api)
    _ssa(dyn, deployment())
    before = _stored(apps)
    typo = deployment()
    typo["spec"]["replicaz"] = 3
    with pytest.raises(ApiError) as err:
        kube.apply(typo, dry_run=True)
    assert err.value.status == 500
    assert err.value.message == (
        "failed to create typed patch object (team-a/web; apps/v1, Kind=Deployment): "
        ".spec.replicaz: field not declared in schema")
    other = deployment(name="api")
    other["spec"]["replicaz"] = 3
    with pytest.raises(ApiError) as strict:
        kube.create(other, strict=True)
    assert strict.value.status == 400
    assert strict.value.message == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.replicaz"')
    assert _stored(apps) == before
    assert [d.metadata.name for d in apps.list_namespaced_deployment("team-a").items] == ["web"]


def test_dry_run_delete_leaves_the_object(api: client.ApiClient, apps: client.AppsV1Api,
                                          dyn: dynamic.DynamicClient, ns: str) -> None:
    _ssa(dyn, deployment())
    before = _stored(apps)
    apps.delete_namespaced_deployment("web", "team-a", dry_run="All",
                                      propagation_policy="Background")
    assert _stored(apps) == before
    assert KubeClient(api).delete_object("apps/v1", "Deployment", "team-a", "web",
                                         dry_run=True).existed
    assert _stored(apps) == before
