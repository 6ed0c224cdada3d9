"""Every built-in kind of the claimed Kubernetes version is served, as the official client and
a real kubectl know it (the list is derived from the client: `clientkinds`)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml
from kubernetes import client, dynamic

from gitfleet.kubesim import builtinkinds
from tests.harness import wait_for
from tests.kubesim import clientkinds

SERVED = clientkinds.served()


def test_the_served_table_is_what_the_client_and_the_version_say() -> None:
    """A newer client, or another claimed version, must regenerate `builtinkinds`."""
    assert Path(builtinkinds.__file__).read_text(encoding="utf-8") == clientkinds.module_text()
    names = {(k.group, k.version, k.kind) for k in SERVED}
    assert ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration") in names
    assert ("autoscaling", "v1", "HorizontalPodAutoscaler") in names
    assert not any("alpha" in v for _, v, _ in names)


def test_each_kind_is_discovered_with_its_scope_and_lists(dyn: dynamic.DynamicClient) -> None:
    wrong = []
    for kind in SERVED:
        api_version = f"{kind.group}/{kind.version}" if kind.group else kind.version
        found = dyn.resources.get(api_version=api_version, kind=kind.kind)
        if (found.name, found.namespaced) != (kind.plural, kind.namespaced):
            wrong.append((api_version, kind.kind, found.name, found.namespaced))
        elif "list" in kind.verbs and found.get().kind != f"{kind.kind}List":
            wrong.append((api_version, kind.kind, "list"))
    assert wrong == []
    assert len(SERVED) > 55


WEBHOOK = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
    "metadata": {"name": "ingress-nginx-admission"},
    "webhooks": [{"name": "validate.nginx.ingress.kubernetes.io", "matchPolicy": "Equivalent",
                  "rules": [{"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"],
                             "operations": ["CREATE", "UPDATE"], "resources": ["ingresses"]}],
                  "failurePolicy": "Fail", "sideEffects": "None",
                  "admissionReviewVersions": ["v1"],
                  "clientConfig": {"service": {"namespace": "ingress-nginx",
                                               "name": "ingress-nginx-controller-admission",
                                               "path": "/networking/v1/ingresses"}}}]}


def test_a_validating_webhook_configuration_is_stored(api: client.ApiClient) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    admission.create_validating_webhook_configuration(WEBHOOK)
    read = admission.read_validating_webhook_configuration("ingress-nginx-admission")
    assert read.webhooks[0].client_config.service.name == "ingress-nginx-controller-admission"
    names = [w.metadata.name for w in admission.list_validating_webhook_configuration().items]
    assert names == ["ingress-nginx-admission"]


def test_kubectl_applies_a_webhook_and_lists_the_resources(
        kubectl: Callable[..., CompletedProcess[str]]) -> None:
    applied = kubectl("apply", "-f", "-", stdin=yaml.safe_dump(WEBHOOK))
    assert "validatingwebhookconfiguration.admissionregistration.k8s.io/ingress-nginx-" \
           "admission created" in applied.stdout
    table = kubectl("api-resources", "--no-headers").stdout
    rows = {line.split()[0]: line.split() for line in table.splitlines()}
    assert rows["validatingwebhookconfigurations"][-2:] == ["false",
                                                            "ValidatingWebhookConfiguration"]
    assert rows["componentstatuses"][1] == "cs"
    assert rows["endpointslices"][-2:] == ["true", "EndpointSlice"]
    versions = kubectl("api-versions").stdout.split()
    assert {"autoscaling/v1", "autoscaling/v2", "flowcontrol.apiserver.k8s.io/v1beta3",
            "admissionregistration.k8s.io/v1"} <= set(versions)


def test_an_hpa_reads_through_both_versions(api: client.ApiClient, ns: str) -> None:
    v2 = client.AutoscalingV2Api(api)
    v1 = client.AutoscalingV1Api(api)
    v1.create_namespaced_horizontal_pod_autoscaler(ns, {
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"},
                 "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}})
    read = v2.read_namespaced_horizontal_pod_autoscaler("web", ns)
    assert read.spec.metrics[0].resource.name == "cpu"
    assert read.spec.metrics[0].resource.target.average_utilization == 70
    v2.patch_namespaced_horizontal_pod_autoscaler("web", ns, {"spec": {"metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 50}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {
            "type": "Utilization", "averageUtilization": 80}}}]}})
    old = v1.read_namespaced_horizontal_pod_autoscaler("web", ns)
    assert old.api_version == "autoscaling/v1"
    assert old.spec.target_cpu_utilization_percentage == 50
    assert [h.metadata.name for h in
            v1.list_namespaced_horizontal_pod_autoscaler(ns).items] == ["web"]
    # a v1 update keeps what v1 cannot say (the memory metric), as a real server does
    v1.patch_namespaced_horizontal_pod_autoscaler("web", ns, {"spec": {"maxReplicas": 9}})
    again = v2.read_namespaced_horizontal_pod_autoscaler("web", ns)
    assert again.spec.max_replicas == 9
    assert [m.resource.name for m in again.spec.metrics] == ["cpu", "memory"]
    assert not (again.metadata.annotations or {})


def test_reviews_answer_as_for_an_admin(kubectl: Callable[..., CompletedProcess[str]]) -> None:
    assert kubectl("auth", "can-i", "delete", "validatingwebhookconfigurations").stdout \
        .strip() == "yes"
    assert "kubernetes-admin" in kubectl("auth", "whoami").stdout


def test_a_deprecated_version_warns_as_a_real_server_does(
        kubectl: Callable[..., CompletedProcess[str]]) -> None:
    old = kubectl("get", "flowschemas.v1beta3.flowcontrol.apiserver.k8s.io")
    assert "Warning: flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is deprecated in " \
           "v1.29+, unavailable in v1.32+; use flowcontrol.apiserver.k8s.io/v1 FlowSchema" \
           in old.stderr
    assert "Warning" not in kubectl("get", "flowschemas").stderr


def test_an_event_is_one_object_in_both_groups(api: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api)
    events = client.EventsV1Api(api)
    core.create_namespaced_event(ns, {
        "metadata": {"name": "web.1"},
        "involvedObject": {"kind": "Deployment", "namespace": ns, "name": "web"},
        "reason": "ScalingReplicaSet", "message": "Scaled up to 2", "type": "Normal",
        "source": {"component": "deployment-controller"}, "count": 1,
        # the client's events.k8s.io model requires an eventTime (a real server answers null
        # for an Event written without one, which the client cannot read either)
        "eventTime": "2026-12-07T06:00:00.000000Z", "reportingComponent": "deployment-controller",
        "reportingInstance": "kubesim"})
    read = events.read_namespaced_event("web.1", ns)
    assert (read.regarding.name, read.note, read.deprecated_source.component,
            read.deprecated_count) == ("web", "Scaled up to 2", "deployment-controller", 1)
    events.patch_namespaced_event("web.1", ns, {"note": "Scaled up to 3"})
    assert core.read_namespaced_event("web.1", ns).message == "Scaled up to 3"
    assert [e.metadata.name for e in events.list_namespaced_event(ns).items] == ["web.1"]
    events.delete_namespaced_event("web.1", ns)
    assert core.list_namespaced_event(ns).items == []


def test_service_account_tokens(api: client.ApiClient, ns: str,
                                kubectl: Callable[..., CompletedProcess[str]]) -> None:
    core = client.CoreV1Api(api)
    wait_for(lambda: core.list_namespaced_service_account(ns).items)
    answer = core.create_namespaced_service_account_token("default", ns, {
        "spec": {"audiences": ["gitfleet"], "expirationSeconds": 600}})
    claims = json.loads(base64.urlsafe_b64decode(answer.status.token.split(".")[1] + "=="))
    assert (claims["sub"], claims["aud"], claims["exp"] - claims["iat"]) == (
        f"system:serviceaccount:{ns}:default", ["gitfleet"], 600)
    printed = kubectl("create", "token", "default", "-n", ns).stdout.strip()
    assert printed.count(".") == 2
    with pytest.raises(client.ApiException) as missing:
        core.create_namespaced_service_account_token("nobody", ns, {"spec": {}})
    assert missing.value.status == 404
