"""Workload health with its pods: a Progressing Deployment (StatefulSet, DaemonSet, Job) whose
pods crash-loop or cannot pull their image is Degraded now, not after its progress deadline
(`gitfleet.health.with_pods`). Pods are listed for such workloads only, so a settled cluster
lists none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gitfleet.agent.changes import ObjectResult
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.health import WITH_PODS, Verdict, group_of, pod_selector, with_pods
from gitfleet.kube.errors import ApiError
from gitfleet.wire.status import Health


def judged_with_pods(kube: ClusterApi, results: Mapping[str, ObjectResult],
                     desired: DesiredState, *, now: float) -> dict[str, ObjectResult]:
    """The results of Progressing workloads that their pods judge otherwise."""
    out: dict[str, ObjectResult] = {}
    for key, r in results.items():
        obj = desired.objects.get(key)
        if r.health is not Health.PROGRESSING or obj is None or \
                (group_of(r.ref.api_version), r.ref.kind) not in WITH_PODS:
            continue
        selector = pod_selector(obj.body)
        if selector is None:
            continue
        try:
            pods = kube.list_objects("v1", "Pod", namespace=r.ref.namespace,
                                     label_selector=selector).items
        except ApiError:
            continue
        verdict = with_pods(Verdict(r.health, r.message), pods, now=now)
        if verdict.health is not r.health:
            out[key] = replace(r, health=verdict.health, message=verdict.message)
    return out
