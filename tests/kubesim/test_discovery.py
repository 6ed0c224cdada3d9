"""Discovery as the official client and a real server see it."""

from __future__ import annotations

import urllib.request

import pytest
from kubernetes import client, dynamic

from gitfleet.kubesim import KubeSim

EXPECTED = [
    # apiVersion, kind, plural, namespaced, a short name (or "")
    ("v1", "Namespace", "namespaces", False, "ns"),
    ("v1", "ConfigMap", "configmaps", True, "cm"),
    ("v1", "Secret", "secrets", True, ""),
    ("v1", "Service", "services", True, "svc"),
    ("v1", "ServiceAccount", "serviceaccounts", True, "sa"),
    ("v1", "Pod", "pods", True, "po"),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, "pvc"),
    ("v1", "Node", "nodes", False, "no"),
    ("v1", "Event", "events", True, "ev"),
    ("apps/v1", "Deployment", "deployments", True, "deploy"),
    ("apps/v1", "StatefulSet", "statefulsets", True, "sts"),
    ("apps/v1", "DaemonSet", "daemonsets", True, "ds"),
    ("apps/v1", "ReplicaSet", "replicasets", True, "rs"),
    ("batch/v1", "Job", "jobs", True, ""),
    ("batch/v1", "CronJob", "cronjobs", True, "cj"),
    ("networking.k8s.io/v1", "Ingress", "ingresses", True, "ing"),
    ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True, "netpol"),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, "hpa"),
    ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True, "pdb"),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", True, ""),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True, ""),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False, ""),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False, ""),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions",
     False, "crd"),
]


@pytest.mark.parametrize(("api_version", "kind", "plural", "namespaced", "short"), EXPECTED)
def test_dynamic_client_finds_each_builtin_kind(dyn: dynamic.DynamicClient, api_version: str,
                                                kind: str, plural: str, namespaced: bool,
                                                short: str) -> None:
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    assert resource.name == plural
    assert resource.namespaced is namespaced
    if short:
        assert short in resource.short_names
    assert {"get", "list", "watch", "create", "patch", "delete"} <= set(resource.verbs)


def test_groups_and_versions(api: client.ApiClient) -> None:
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    assert {"apps", "batch", "networking.k8s.io", "autoscaling", "policy",
            "rbac.authorization.k8s.io", "apiextensions.k8s.io", "metrics.k8s.io"} <= set(groups)
    assert groups["apps"].preferred_version.group_version == "apps/v1"
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    resources = client.AppsV1Api(api).get_api_resources()
    names = {r.name: r for r in resources.resources}
    assert names["deployments/scale"].kind == "Scale"
    assert names["deployments/status"].verbs == ["get", "patch", "update"]


def test_version_and_health_endpoints(sim: KubeSim, api: client.ApiClient) -> None:
    info = client.VersionApi(api).get_code()
    assert info.major == "1" and info.git_version.startswith("v1.")
    for path in ("/healthz", "/livez", "/readyz"):
        with urllib.request.urlopen(sim.url + path, timeout=5) as resp:
            assert resp.status == 200 and resp.read() == b"ok"


def test_unknown_group_is_404(sim: KubeSim) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(sim.url + "/apis/example.com/v1", timeout=5)
    assert err.value.code == 404
    err.value.close()


def _raw(sim: KubeSim, payload: bytes) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", sim.port), timeout=5) as sock:
        sock.sendall(payload)
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)


def test_http_1_0_and_pipelined_keep_alive_requests(sim: KubeSim) -> None:
    old = _raw(sim, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert old.startswith(b"HTTP/1.1 200") and old.endswith(b"ok")
    two = _raw(sim, b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"
                    b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert two.count(b"HTTP/1.1 200 OK") == 2
    bad = _raw(sim, b"GET / FOO/1.1\r\n\r\n")
    assert b"400" in bad  # the standard library answers a malformed request line
