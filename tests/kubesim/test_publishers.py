"""What a real controller manager writes without being asked: the CA bundle in every
namespace, a StatefulSet's claims."""

from __future__ import annotations

from collections.abc import Callable
from subprocess import CompletedProcess

from cryptography import x509
from kubernetes import client

from tests.harness import wait_for
from tests.kubesim.conftest import KUBECTL

CA = "kube-root-ca.crt"


def _bundle(core: client.CoreV1Api, ns: str) -> str | None:
    try:
        found = core.read_namespaced_config_map(CA, ns)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return (found.data or {}).get("ca.crt")


def test_every_namespace_gets_the_ca_bundle_back(core: client.CoreV1Api, ns: str) -> None:
    pem = wait_for(lambda: _bundle(core, ns), what="kube-root-ca.crt in the new namespace")
    assert x509.load_pem_x509_certificate(pem.encode()).subject.rfc4514_string() == \
        "CN=kubernetes"
    assert wait_for(lambda: _bundle(core, "kube-system")) == pem
    core.delete_namespaced_config_map(CA, ns)
    assert wait_for(lambda: _bundle(core, ns), what="the bundle put back") == pem
    core.patch_namespaced_config_map(CA, ns, {"data": {"ca.crt": "edited"}})
    wait_for(lambda: _bundle(core, ns) == pem, what="the edit undone")


STATEFULSET = {
    "apiVersion": "apps/v1", "kind": "StatefulSet",
    "metadata": {"name": "db"},
    "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
             "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
                 {"name": "db", "image": "postgres:16",
                  "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql"}]}]}},
             "volumeClaimTemplates": [{
                 "metadata": {"name": "data", "labels": {"tier": "storage"}},
                 "spec": {"accessModes": ["ReadWriteOnce"],
                          "resources": {"requests": {"storage": "1Gi"}}}}]}}


def _claims(core: client.CoreV1Api, ns: str) -> dict[str, client.V1PersistentVolumeClaim]:
    return {c.metadata.name: c for c in core.list_namespaced_persistent_volume_claim(ns).items}


def test_a_statefulset_makes_a_claim_per_replica(apps: client.AppsV1Api,
                                                core: client.CoreV1Api, ns: str) -> None:
    apps.create_namespaced_stateful_set(ns, STATEFULSET)
    claims = wait_for(lambda: len(_claims(core, ns)) == 2 and _claims(core, ns))
    assert sorted(claims) == ["data-db-0", "data-db-1"]
    assert claims["data-db-0"].metadata.labels == {"app": "db", "tier": "storage"}
    assert claims["data-db-1"].spec.resources.requests == {"storage": "1Gi"}
    wait_for(lambda: {c.status.phase for c in _claims(core, ns).values()} == {"Bound"})
    apps.patch_namespaced_stateful_set("db", ns, {"spec": {"replicas": 3}})
    wait_for(lambda: "data-db-2" in _claims(core, ns), what="a claim for the new replica")
    apps.patch_namespaced_stateful_set("db", ns, {"spec": {"replicas": 1}})
    apps.delete_namespaced_stateful_set("db", ns)
    wait_for(lambda: not apps.list_namespaced_stateful_set(ns).items)
    assert sorted(_claims(core, ns)) == ["data-db-0", "data-db-1", "data-db-2"]  # retained


def test_claims_of_a_set_deleting_them_go_with_it(apps: client.AppsV1Api,
                                                  core: client.CoreV1Api, ns: str) -> None:
    body = dict(STATEFULSET, spec=dict(STATEFULSET["spec"], replicas=1,
                                       persistentVolumeClaimRetentionPolicy={
                                           "whenDeleted": "Delete", "whenScaled": "Retain"}))
    apps.create_namespaced_stateful_set(ns, body)
    claim = wait_for(lambda: _claims(core, ns).get("data-db-0"))
    assert claim.metadata.owner_references[0].kind == "StatefulSet"
    apps.delete_namespaced_stateful_set("db", ns)
    wait_for(lambda: not _claims(core, ns), what="the claims deleted with their set")


def test_kubectl_sees_the_bundle(kubectl: Callable[..., CompletedProcess[str]]) -> None:
    assert KUBECTL
    kubectl("create", "namespace", "shop")
    wait_for(lambda: kubectl("get", "configmap", CA, "-n", "shop", check=False).returncode == 0)
    shown = kubectl("get", "configmap", CA, "-n", "shop", "-o", "jsonpath={.data.ca\\.crt}")
    assert shown.stdout.startswith("-----BEGIN CERTIFICATE-----")
