"""`metrics.yaml` as data: what the agent writes reads back the same, malformed files are
errors naming the file, and the pieces the report is built from (selectors, requests)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gitfleet.agent.metrics import container_requests, selector_text
from gitfleet.errors import InputError
from gitfleet.wire.metrics import (
    ClusterMetrics,
    PodReport,
    WorkloadReport,
    format_amount,
)
from gitfleet.wire.metrics import pod_samples_of as pod_samples
from gitfleet.wire.objectref import ObjectRef

WEB = ObjectRef("apps/v1", "Deployment", "shop", "web")


def _report() -> ClusterMetrics:
    pods = (PodReport(name="web-a", ready=True, phase="Running", started="2026-01-01T00:00:00Z",
                      ready_changed="2026-01-01T00:00:04Z",
                      usage={"cpu": Fraction(12, 100), "memory": Fraction(80 * 2**20)},
                      requests={"cpu": Fraction(1, 5), "memory": Fraction(128 * 2**20)},
                      usage_time="2026-01-01T00:00:58Z", usage_window="30s"),
            PodReport(name="web-b", ready=False, phase="Pending",
                      requests={"cpu": Fraction(1, 5)}))
    return ClusterMetrics(cluster="child-1", time="2026-01-01T00:01:00Z",
                          workloads=(WorkloadReport(ref=WEB, replicas=2, pods=pods),))


def test_round_trip_and_the_shape_a_person_reads() -> None:
    report = _report()
    text = report.to_yaml().decode()
    assert "usage:\n      cpu: 120m\n      memory: 80Mi" in text
    assert ClusterMetrics.from_yaml(report.to_yaml()) == report
    assert report.workload("apps/v1", "Deployment", "shop", "web") is not None
    # a pod without a usage figure has no `usage` key at all
    assert text.count("usage:") == 1


def test_pod_samples_carry_times_as_seconds() -> None:
    samples = pod_samples("child-1", _report().workloads[0])
    a, b = samples
    assert (a.cluster, a.name, a.ready, a.phase) == ("child-1", "web-a", True, "Running")
    assert a.started == 1_767_225_600.0 and a.ready_changed == 1_767_225_604.0
    assert a.metric_time == 1_767_225_658.0 and a.metric_window == 30.0
    assert a.usage == {"cpu": Fraction(12, 100), "memory": Fraction(80 * 2**20)}
    assert b.usage is None and b.started is None and b.phase == "Pending"


@pytest.mark.parametrize("text", [
    b"kind: Something\n",
    b"kind: ClusterMetrics\nworkloads: []\n",  # no cluster
    b"kind: ClusterMetrics\ncluster: c\nworkloads:\n- {kind: Deployment, name: web}\n",
    b"kind: ClusterMetrics\ncluster: c\nworkloads:\n- {apiVersion: apps/v1, kind: Deployment,"
    b" name: web, replicas: 1, pods: [{name: p, ready: true, phase: Running,"
    b" usage: {cpu: lots}}]}\n",
])
def test_malformed_files_are_input_errors(text: bytes) -> None:
    with pytest.raises(InputError, match="metrics.yaml"):
        ClusterMetrics.from_yaml(text)


def test_selector_text() -> None:
    assert selector_text({"matchLabels": {"app": "web", "tier": "front"}}) == \
        "app=web,tier=front"
    assert selector_text({"matchExpressions": [
        {"key": "env", "operator": "In", "values": ["a", "b"]},
        {"key": "canary", "operator": "DoesNotExist"},
        {"key": "zone", "operator": "NotIn", "values": ["x"]},
        {"key": "app", "operator": "Exists"}]}) == \
        "env in (a,b),!canary,zone notin (x),app"
    with pytest.raises(ValueError, match="selects every pod"):
        selector_text({})
    with pytest.raises(ValueError, match="no spec.selector"):
        selector_text(None)


def test_requests_are_the_containers_sum_and_only_when_all_request() -> None:
    pod = {"spec": {"initContainers": [{"resources": {"requests": {"cpu": "4"}}}],
                    "containers": [
                        {"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                        {"resources": {"limits": {"cpu": "250m"}}}]}}
    # cpu: 100m + 250m (a limit stands for a missing request, as the API server defaults it);
    # memory: the second container requests none, so there is no memory request to report
    assert container_requests(pod) == {"cpu": Fraction(35, 100)}


@pytest.mark.parametrize(("resource", "amount", "text"), [
    ("cpu", Fraction(1), "1"), ("cpu", Fraction(1201, 10000), "121m"),
    ("memory", Fraction(3 * 2**30), "3Gi"), ("memory", Fraction(1000), "1000"),
])
def test_format_amount(resource: str, amount: Fraction, text: str) -> None:
    assert format_amount(resource, amount) == text
