"""A Progressing workload is Degraded by its first Degraded pod (gitfleet.health.owned)."""

from __future__ import annotations

from typing import Any

from gitfleet.health import Verdict, pod_selector, with_pods
from gitfleet.wire.status import Health

ROLLING = Verdict(Health.PROGRESSING, "rollout: 1 of 2 replicas updated")


def _pod(name: str, reason: str = "") -> dict[str, Any]:
    state = {"waiting": {"reason": reason, "message": "x"}} if reason else {"running": {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "status": {"phase": "Running" if not reason else "Pending",
                       "containerStatuses": [{"name": "web", "state": state}]}}


def test_the_first_degraded_pod_names_the_cause() -> None:
    pods = [_pod("web-2", "ImagePullBackOff"), _pod("web-1"), _pod("web-3", "ErrImagePull")]
    assert with_pods(ROLLING, pods, now=None) == Verdict(
        Health.DEGRADED, "pod web-2: container web: ImagePullBackOff: x")


def test_starting_pods_keep_the_rollout_progressing_and_settled_verdicts_stand() -> None:
    assert with_pods(ROLLING, [_pod("web-1"), _pod("web-2", "ContainerCreating")],
                     now=None) is ROLLING
    healthy = Verdict(Health.HEALTHY)
    assert with_pods(healthy, [_pod("web-1", "CrashLoopBackOff")], now=None) is healthy


def test_pod_selector_as_a_label_query() -> None:
    live = {"spec": {"selector": {
        "matchLabels": {"app": "web", "tier": "front"},
        "matchExpressions": [{"key": "track", "operator": "In", "values": ["a", "b"]},
                             {"key": "canary", "operator": "DoesNotExist"}]}}}
    assert pod_selector(live) == "app=web,tier=front,track in (a,b),!canary"
    assert pod_selector({"spec": {}}) is None
