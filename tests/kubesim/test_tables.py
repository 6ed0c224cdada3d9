"""The columns a real server prints, as a real kubectl shows them (`kubectl get`, `-o wide`):
the server's Table answers decide them, kubectl only lays them out."""

from __future__ import annotations

from collections.abc import Callable
from subprocess import CompletedProcess

import pytest
import yaml
from kubernetes import client

from gitfleet.kubesim import KubeSim
from gitfleet.kubesim.tables import human_duration
from tests.kubesim.conftest import KUBECTL, deployment

pytestmark = pytest.mark.skipif(not KUBECTL, reason="kubectl is not installed on this machine")
Kubectl = Callable[..., CompletedProcess[str]]

CRONJOB = {
    "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "report",
                                                              "namespace": "shop"},
    "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "report", "image": "busybox:1.36"}]}}}}}}
HPA = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
             "minReplicas": 2, "maxReplicas": 6, "metrics": [{"type": "Resource", "resource": {
                 "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]}}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "databases.example.io"},
    "spec": {"group": "example.io", "scope": "Namespaced",
             "names": {"plural": "databases", "singular": "database", "kind": "Database"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                           "additionalPrinterColumns": [
                               {"name": "Engine", "type": "string", "jsonPath": ".spec.engine"},
                               {"name": "Size", "type": "integer", "jsonPath": ".spec.size",
                                "priority": 1}]}]}}


def _table(kubectl: Kubectl, *args: str) -> list[list[str]]:
    text = kubectl("get", *args).stdout
    return [line.split() for line in text.splitlines()]


def _apply(kubectl: Kubectl, *objects: dict) -> None:
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))


def test_workload_columns_wide(kubectl: Kubectl, sim: KubeSim) -> None:
    kubectl("create", "namespace", "shop")
    _apply(kubectl, deployment(namespace="shop"), CRONJOB, HPA)
    assert sim.settle()
    rows = _table(kubectl, "deployments", "-n", "shop", "-o", "wide")
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS",
                       "IMAGES", "SELECTOR"]
    assert rows[1][0:4] + rows[1][5:] == ["web", "2/2", "2", "2", "app", "nginx:1.25",
                                          "app=web"]
    rows = _table(kubectl, "cronjobs", "-n", "shop")
    assert rows[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE",
                       "AGE"]
    assert rows[1][:6] == ["report", "*/5", "*", "*", "*", "*"]
    assert rows[1][6:10] == ["<none>", "False", "0", "<none>"]
    rows = _table(kubectl, "hpa", "-n", "shop")
    assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1][:6] == ["web", "Deployment/web", "cpu:", "<unknown>/70%", "2", "6"]


def test_service_and_node_columns(kubectl: Kubectl, sim: KubeSim) -> None:
    rows = _table(kubectl, "services", "-n", "default", "-o", "wide")
    assert rows[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE",
                       "SELECTOR"]
    assert rows[1][:5] == ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    rows = _table(kubectl, "nodes", "-o", "wide")
    assert rows[0][:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]
    assert rows[1][1:3] == ["Ready", "<none>"] and rows[1][4:6] == ["v1.31.0", "172.18.0.2"]


def test_events_print_as_kubectl_get_events_shows_them(kubectl: Kubectl,
                                                       core: client.CoreV1Api) -> None:
    core.create_namespaced_event("default", {
        "metadata": {"name": "web.17f"},
        "involvedObject": {"kind": "Deployment", "namespace": "default", "name": "web"},
        "reason": "ScalingReplicaSet", "message": "Scaled up replica set web-5d to 2",
        "type": "Normal", "source": {"component": "deployment-controller"}, "count": 3,
        "firstTimestamp": "2026-12-07T05:00:00Z", "lastTimestamp": "2026-12-07T05:00:00Z"})
    rows = _table(kubectl, "events", "-n", "default")
    assert rows[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert rows[1][1:] == ["Normal", "ScalingReplicaSet", "deployment/web", "Scaled", "up",
                           "replica", "set", "web-5d", "to", "2"]
    wide = _table(kubectl, "events", "-n", "default", "-o", "wide")
    assert wide[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE",
                       "MESSAGE", "FIRST", "SEEN", "COUNT", "NAME"]
    assert wide[1][-2:] == ["3", "web.17f"]


def test_component_statuses(kubectl: Kubectl) -> None:
    shown = kubectl("get", "componentstatuses")
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in shown.stderr
    rows = [line.split() for line in shown.stdout.splitlines()]
    assert rows[0] == ["NAME", "STATUS", "MESSAGE", "ERROR"]
    assert [row[:3] for row in rows[1:]] == [["controller-manager", "Healthy", "ok"],
                                             ["etcd-0", "Healthy", "ok"],
                                             ["scheduler", "Healthy", "ok"]]


def test_custom_resources_print_their_crd_columns(kubectl: Kubectl, sim: KubeSim) -> None:
    _apply(kubectl, CRD)
    assert sim.settle()
    kubectl("wait", "--for=condition=Established", "crd/databases.example.io")
    _apply(kubectl, {"apiVersion": "example.io/v1", "kind": "Database",
                     "metadata": {"name": "orders", "namespace": "default"},
                     "spec": {"engine": "postgres", "size": 3}})
    assert _table(kubectl, "databases") == [["NAME", "ENGINE"], ["orders", "postgres"]]
    assert _table(kubectl, "databases", "-o", "wide") == [["NAME", "ENGINE", "SIZE"],
                                                          ["orders", "postgres", "3"]]


@pytest.mark.parametrize(("seconds", "shown"), [
    (59, "59s"), (119, "119s"), (312, "5m12s"), (600, "10m"), (10_000, "166m"),
    (12_600, "3h30m"), (30 * 3600, "30h"), (98 * 3600, "4d2h"), (400 * 86400, "400d"),
    (800 * 86400, "2y70d")])
def test_ages_read_as_kubectl_users_know_them(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown
