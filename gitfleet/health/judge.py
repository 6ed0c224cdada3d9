"""One judge for every live object: the rule for its group and kind, else the conventions.

The lookup is by API group and kind, never kind alone (an OpenKruise `StatefulSet` or a
Volcano `Job` is not the core one): a health rule from the fleet repo first, then the built-in
judge of the kind, then the status conventions. An object being deleted is Progressing
whatever its kind (both peers agree). Pure: the live object, the rules and the time in; a
verdict out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gitfleet.health import (
    apis,
    autoscaling,
    batch,
    network,
    pods,
    policy,
    storage,
    workflows,
    workloads,
)
from gitfleet.health.conventions import judge_by_conventions
from gitfleet.health.rules import NO_RULES, HealthRules, judge_by_rule
from gitfleet.health.verdict import Obj, Verdict, degraded, progressing, said

Judge = Callable[[Obj, float | None], Verdict]

BUILT_IN: dict[tuple[str, str], Judge] = {
    ("apps", "Deployment"): workloads.deployment,
    ("apps", "StatefulSet"): workloads.statefulset,
    ("apps", "DaemonSet"): workloads.daemonset,
    ("apps", "ReplicaSet"): workloads.replicaset,
    ("", "Pod"): pods.pod,
    ("batch", "Job"): batch.job,
    ("batch", "CronJob"): batch.cronjob,
    ("", "PersistentVolumeClaim"): storage.claim,
    ("", "Service"): network.service,
    ("networking.k8s.io", "Ingress"): network.ingress,
    ("extensions", "Ingress"): network.ingress,
    ("autoscaling", "HorizontalPodAutoscaler"): autoscaling.hpa,
    ("policy", "PodDisruptionBudget"): policy.pdb,
    ("apiregistration.k8s.io", "APIService"): apis.apiservice,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): apis.crd,
    ("argoproj.io", "Workflow"): workflows.workflow,
}


_GROUPS: dict[str, str] = {}
_STANDARD = frozenset({"Stalled", "Reconciling"})


def group_of(api_version: object) -> str:
    """`apps/v1` -> `apps`; `v1` -> "" (the core group)."""
    if not isinstance(api_version, str):
        return ""
    group = _GROUPS.get(api_version)
    if group is None:
        if len(_GROUPS) > 10_000:
            _GROUPS.clear()
        group = _GROUPS[api_version] = api_version.rpartition("/")[0]
    return group


def judge(live: Obj, *, rules: HealthRules = NO_RULES, now: float | None = None) -> Verdict:
    """The health of one live object. `now` (seconds since the epoch) lets time-bound judgements
    (an unschedulable pod, a Ready=False past its progress timeout) conclude; without it they
    stay Progressing."""
    meta = live.get("metadata")
    if (type(meta) is dict or isinstance(meta, Mapping)) and meta.get("deletionTimestamp"):
        return progressing("being deleted" + (
            f" (waiting for finalizers: {', '.join(map(str, meta['finalizers']))})"
            if meta.get("finalizers") else ""))
    key = (group_of(live.get("apiVersion")), str(live.get("kind", "")))
    rule = rules.for_kind(*key)
    if rule is not None:
        return judge_by_rule(rule, live)
    built_in = BUILT_IN.get(key)
    if built_in is not None:
        status = live.get("status")
        if type(status) is dict and status.get("conditions"):
            said_so = _standard_conditions(status["conditions"])
            if said_so is not None:
                return said_so
        return built_in(live, now)
    return judge_by_conventions(live, now, rules.progress_timeout)


def _standard_conditions(found: Any) -> Verdict | None:
    """kstatus reads `Stalled=True` (Failed) and `Reconciling=True` (InProgress) on every kind
    before the kind's own rules: a controller or a person that set them meant them."""
    if type(found) is not list:
        return None
    for c in found:
        if type(c) is dict and c.get("type") in _STANDARD and c.get("status") == "True":
            kind = c.get("type")
            if kind == "Stalled":
                return degraded(f"stalled: {said(c, 'no reason given')}")
            if kind == "Reconciling":
                return progressing(f"reconciling: {said(c, 'no reason given')}")
    return None
