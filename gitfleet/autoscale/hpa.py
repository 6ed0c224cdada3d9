"""The Kubernetes HPA algorithm, for one workload spread over many clusters.

A FederatedHPA (Karmada) makes one decision for the whole fleet from the pods of every Ready
cluster. This module is that decision and nothing else: plain data in (the pods the agents
reported, the spec, the remembered history, `now`), plain data out. No Git, no Kubernetes
client, no clock, so the hub can run it in virtual time and persist what it returns.

Written from Kubernetes' `pkg/controller/podautoscaler` (replica calculator and controller),
as Karmada's FederatedHPA controller uses it:

- per metric: pods are grouped — deleted or `Failed` pods are ignored; `Pending` pods, and for
  CPU pods still initialising (`cpu_initialization_period` since start, or never Ready within
  `initial_readiness_delay`) are *unready*; pods without a usage figure are *missing*. The
  ratio `usage / target` over the ready pods decides; within `tolerance` of 1 nothing changes.
  With missing or unready pods the ratio is computed again, treating missing pods as using
  100 % of their request (or the target, when it is above 100 %) on a scale-down and 0 % on a
  scale-up, and unready pods as 0 % on a scale-up; if that flips the direction or lands within
  tolerance, nothing changes. Proposal = ceil(ratio × pods counted / calibration).
- over metrics: the largest proposal wins; when every metric fails, or some fail and the rest
  would scale down, nothing changes (`ScalingActive` False).
- then `behavior`: stabilization (up: the lowest recommendation in its window, down: the
  highest in its window) and rate policies (`Pods` / `Percent` per period, `selectPolicy`
  Max / Min / Disabled), and finally min/max.

Arithmetic follows Kubernetes' integer milli-units (usage and requests rounded up to whole
millicores / millibytes, utilisation truncated to a whole percent) but compares with exact
fractions, not floats: a ratio of exactly 1 ± tolerance counts as within tolerance.

API for the hub (h7):

    targets = MetricTarget.from_spec(spec.get("metrics"), path=..., obj=...)
    behavior = Behavior.from_spec(spec.get("behavior"), path=..., obj=...)
    d = decide(now=..., current=<total spec replicas>, pods=[PodSample(...), ...],
               metrics=targets, min_replicas=..., max_replicas=..., behavior=behavior,
               history=AutoscaleHistory.from_data(<persisted>))
    d.desired, d.changed, d.reason, d.metrics (value, target, proposal per metric),
    d.conditions (AbleToScale / ScalingActive / ScalingLimited set by this evaluation; a type
    not listed keeps its earlier value), d.history.to_data()  (persist it with the decision)

`calibration` is Karmada's correction when some clusters' pods could not be counted: the
share of the workload's replicas whose pods are in `pods` (1 = all).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from gitfleet.autoscale.history import AutoscaleHistory, Recommendation, ScaleEvent
from gitfleet.autoscale.spec import Behavior, MetricTarget, Policy, ScalingRules
from gitfleet.errors import InputError

__all__ = [
    "AutoscaleHistory", "Behavior", "Condition", "Decision", "MetricStatus", "MetricTarget",
    "PodSample", "Policy", "Recommendation", "ScaleEvent", "ScalingRules", "decide",
]

DEFAULT_TOLERANCE = Fraction(1, 10)
DEFAULT_CPU_INITIALIZATION_PERIOD = 300.0
DEFAULT_INITIAL_READINESS_DELAY = 30.0
DEFAULT_METRIC_WINDOW = 30.0


@dataclass(frozen=True)
class PodSample:
    """One pod of the workload as an agent reported it.

    `ready` is the pod's Ready condition and `ready_changed` that condition's last transition
    (None: the pod has no Ready condition yet); `started` is the pod's start time. `usage` is
    None when metrics-server had no figure for the pod; `requests` holds the sum of the
    containers' requests per resource (a resource a container does not request is absent).
    `metric_time` / `metric_window` are when and over how long usage was sampled (None: now)."""

    cluster: str
    name: str
    ready: bool
    phase: str = "Running"
    started: float | None = None
    ready_changed: float | None = None
    usage: Mapping[str, Fraction] | None = None
    requests: Mapping[str, Fraction] = field(default_factory=dict)
    deleting: bool = False
    metric_time: float | None = None
    metric_window: float = DEFAULT_METRIC_WINDOW

    @property
    def key(self) -> tuple[str, str]:
        return (self.cluster, self.name)


@dataclass(frozen=True)
class MetricStatus:
    """One metric's evaluation: `value` is the current utilisation in percent (`Utilization`)
    or the average per pod in cores / bytes (`AverageValue`); `proposed` the replicas it asks
    for, None with `error` when it could not be computed."""

    target: MetricTarget
    value: Fraction | None = None
    proposed: int | None = None
    error: str = ""

    def describe(self) -> str:
        """`cpu 90%/50%`, `memory 300Mi-ish` as numbers: short text for commit messages."""
        unit = "%" if self.target.type == "Utilization" else ""
        if self.value is None:
            return f"{self.target.resource} unknown/{_num(self.target.value)}{unit} ({self.error})"
        return f"{self.target.resource} {_num(self.value)}{unit}/{_num(self.target.value)}{unit}"


def _num(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class Decision:
    current: int
    desired: int
    reason: str
    metrics: tuple[MetricStatus, ...]
    conditions: tuple[Condition, ...]
    history: AutoscaleHistory

    @property
    def changed(self) -> bool:
        return self.desired != self.current

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)


class _MetricFailed(Exception):
    pass


def _milli(amount: Fraction) -> int:
    return math.ceil(amount * 1000)


@dataclass(frozen=True)
class _Groups:
    ready: int
    unready: frozenset[tuple[str, str]]
    missing: frozenset[tuple[str, str]]
    usage: dict[tuple[str, str], int]  # milli-units, ready pods only


def _group(pods: Sequence[PodSample], resource: str, *, now: float, cpu_init: float,
           readiness_delay: float) -> _Groups:
    ready = 0
    unready: set[tuple[str, str]] = set()
    missing: set[tuple[str, str]] = set()
    usage: dict[tuple[str, str], int] = {}
    for pod in pods:
        if pod.deleting or pod.phase == "Failed":
            continue
        if pod.phase == "Pending":
            unready.add(pod.key)
            continue
        if pod.usage is None or resource not in pod.usage:
            missing.add(pod.key)
            continue
        if resource == "cpu" and _cpu_unready(pod, now=now, cpu_init=cpu_init,
                                              readiness_delay=readiness_delay):
            unready.add(pod.key)
            continue
        usage[pod.key] = _milli(pod.usage[resource])
        ready += 1
    return _Groups(ready=ready, unready=frozenset(unready), missing=frozenset(missing),
                   usage=usage)


def _cpu_unready(pod: PodSample, *, now: float, cpu_init: float, readiness_delay: float) -> bool:
    """A CPU sample is not trusted while the pod warms up: during the initialisation period
    unless Ready and sampled a full window after turning Ready; after it, only if the pod was
    never Ready since shortly after start."""
    if pod.ready_changed is None or pod.started is None:
        return True
    if pod.started + cpu_init > now:
        sampled = pod.metric_time if pod.metric_time is not None else now
        return not pod.ready or sampled < pod.ready_changed + pod.metric_window
    return not pod.ready and pod.started + readiness_delay > pod.ready_changed


def _requests(pods: Sequence[PodSample], resource: str) -> dict[tuple[str, str], int]:
    out = {}
    for pod in pods:
        amount = pod.requests.get(resource)
        if amount is None:
            raise _MetricFailed(f"missing request for {resource} in pod {pod.cluster}/{pod.name}")
        out[pod.key] = _milli(amount)
    return out


def _ratio(target: MetricTarget, usage: Mapping[tuple[str, str], int],
           requests: Mapping[tuple[str, str], int]) -> tuple[Fraction, Fraction]:
    """(usage ratio, current value) as Kubernetes computes them, in integer milli-units."""
    total = sum(usage.values())
    if target.type == "Utilization":
        requested = sum(requests[k] for k in usage)
        if requested == 0:
            raise _MetricFailed(f"the pods request no {target.resource}")
        utilization = Fraction(total * 100 // requested)
        return utilization / target.value, utilization
    average = total // len(usage)
    return Fraction(average, _milli(target.value)), Fraction(average, 1000)


def _evaluate(target: MetricTarget, *, current: int, pods: Sequence[PodSample], now: float,
              tolerance: Fraction, cpu_init: float, readiness_delay: float,
              calibration: Fraction) -> MetricStatus:
    try:
        return _proposal(target, current=current, pods=pods, now=now, tolerance=tolerance,
                         cpu_init=cpu_init, readiness_delay=readiness_delay,
                         calibration=calibration)
    except _MetricFailed as exc:
        return MetricStatus(target=target, error=str(exc))


def _proposal(target: MetricTarget, *, current: int, pods: Sequence[PodSample], now: float,
              tolerance: Fraction, cpu_init: float, readiness_delay: float,
              calibration: Fraction) -> MetricStatus:
    if not pods:
        raise _MetricFailed("no pods of the workload were reported")
    groups = _group(pods, target.resource, now=now, cpu_init=cpu_init,
                    readiness_delay=readiness_delay)
    requests = _requests(pods, target.resource) if target.type == "Utilization" else {}
    if not groups.usage:
        raise _MetricFailed(f"did not receive {target.resource} metrics for any ready pods")
    ratio, value = _ratio(target, groups.usage, requests)

    def keep() -> MetricStatus:
        return MetricStatus(target=target, value=value, proposed=current)

    scale_up_with_unready = bool(groups.unready) and ratio > 1
    if not scale_up_with_unready and not groups.missing:
        if abs(1 - ratio) <= tolerance:
            return keep()
        return MetricStatus(target=target, value=value,
                            proposed=math.ceil(ratio * groups.ready / calibration))
    usage = dict(groups.usage)
    if groups.missing and ratio < 1:
        for key in groups.missing:
            if target.type == "Utilization":
                usage[key] = requests[key] * max(100, int(target.value)) // 100
            else:
                usage[key] = _milli(target.value)
    elif groups.missing and ratio > 1:
        for key in groups.missing:
            usage[key] = 0
    if scale_up_with_unready:
        for key in groups.unready:
            usage[key] = 0
    new_ratio, _ = _ratio(target, usage, requests)
    if abs(1 - new_ratio) <= tolerance or (ratio < 1 < new_ratio) or (new_ratio < 1 < ratio):
        return keep()
    proposed = math.ceil(new_ratio * len(usage) / calibration)
    if (new_ratio < 1 and proposed > current) or (new_ratio > 1 and proposed < current):
        return keep()
    return MetricStatus(target=target, value=value, proposed=proposed)


def _changed_within(events: Sequence[ScaleEvent], period: int, now: float) -> int:
    return sum(e.change for e in events if e.time > now - period)


def _period_start(current: int, history: AutoscaleHistory, period: int, now: float) -> int:
    """The replica count at the start of a policy's period (the changes within it undone)."""
    return (current - _changed_within(history.scale_up_events, period, now)
            + _changed_within(history.scale_down_events, period, now))


def _scale_up_limit(current: int, history: AutoscaleHistory, rules: ScalingRules,
                    now: float) -> int:
    if rules.select_policy == "Disabled":
        return current
    proposals = []
    for policy in rules.policies:
        start = _period_start(current, history, policy.period_seconds, now)
        if policy.type == "Pods":
            proposals.append(start + policy.value)
        else:
            proposals.append(math.ceil(start * (1 + Fraction(policy.value, 100))))
    return min(proposals) if rules.select_policy == "Min" else max(proposals)


def _scale_down_limit(current: int, history: AutoscaleHistory, rules: ScalingRules,
                      now: float) -> int:
    if rules.select_policy == "Disabled":
        return current
    proposals = []
    for policy in rules.policies:
        start = _period_start(current, history, policy.period_seconds, now)
        if policy.type == "Pods":
            proposals.append(start - policy.value)
        else:
            proposals.append(math.trunc(start * (1 - Fraction(policy.value, 100))))
    # the smallest change: for a scale-down, the highest floor
    return max(proposals) if rules.select_policy == "Min" else min(proposals)


def _stabilize(*, now: float, current: int, desired: int, behavior: Behavior,
               history: AutoscaleHistory) -> tuple[int, str, str, AutoscaleHistory]:
    up_cutoff = now - behavior.scale_up.stabilization_seconds
    down_cutoff = now - behavior.scale_down.stabilization_seconds
    up, down = desired, desired
    kept = []
    for rec in history.recommendations:
        if rec.time > up_cutoff:
            up = min(up, rec.replicas)
        if rec.time > down_cutoff:
            down = max(down, rec.replicas)
        if rec.time > up_cutoff or rec.time > down_cutoff:
            kept.append(rec)
    recommendation = min(max(current, up), down)
    kept.append(Recommendation(time=now, replicas=desired))
    if desired >= current:
        reason = "ScaleUpStabilized"
        message = ("recent recommendations were lower than current one, applying the lowest "
                   "recent recommendation")
    else:
        reason = "ScaleDownStabilized"
        message = ("recent recommendations were higher than current one, applying the highest "
                   "recent recommendation")
    return recommendation, reason, message, AutoscaleHistory(
        recommendations=tuple(kept), scale_up_events=history.scale_up_events,
        scale_down_events=history.scale_down_events)


def _rate_limit(*, now: float, current: int, desired: int, min_replicas: int,
                max_replicas: int, behavior: Behavior,
                history: AutoscaleHistory) -> tuple[int, str, str]:
    if desired > current:
        limit = max(_scale_up_limit(current, history, behavior.scale_up, now), current)
        if max_replicas > limit:
            allowed, reason = limit, "ScaleUpLimit"
            message = "the desired replica count is increasing faster than the maximum scale rate"
        else:
            allowed, reason = max_replicas, "TooManyReplicas"
            message = "the desired replica count is more than the maximum replica count"
        if desired > allowed:
            return allowed, reason, message
    elif desired < current:
        limit = min(_scale_down_limit(current, history, behavior.scale_down, now), current)
        if min_replicas < limit:
            allowed, reason = limit, "ScaleDownLimit"
            message = "the desired replica count is decreasing faster than the maximum scale rate"
        else:
            allowed, reason = min_replicas, "TooFewReplicas"
            message = "the desired replica count is less than the minimum replica count"
        if desired < allowed:
            return allowed, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def _record_scale(history: AutoscaleHistory, *, now: float, before: int, after: int,
                  behavior: Behavior) -> AutoscaleHistory:
    """Remember a rescale; events older than the longest policy period no longer count."""
    if after > before:
        horizon = now - behavior.scale_up.longest_period
        ups = tuple(e for e in history.scale_up_events if e.time > horizon)
        return AutoscaleHistory(
            recommendations=history.recommendations,
            scale_up_events=(*ups, ScaleEvent(time=now, change=after - before)),
            scale_down_events=history.scale_down_events)
    horizon = now - behavior.scale_down.longest_period
    downs = tuple(e for e in history.scale_down_events if e.time > horizon)
    return AutoscaleHistory(
        recommendations=history.recommendations, scale_up_events=history.scale_up_events,
        scale_down_events=(*downs, ScaleEvent(time=now, change=before - after)))


def decide(*, now: float, current: int, pods: Sequence[PodSample],
           metrics: Sequence[MetricTarget], min_replicas: int, max_replicas: int,
           behavior: Behavior, history: AutoscaleHistory,
           tolerance: Fraction | float = DEFAULT_TOLERANCE,
           cpu_initialization_period: float = DEFAULT_CPU_INITIALIZATION_PERIOD,
           initial_readiness_delay: float = DEFAULT_INITIAL_READINESS_DELAY,
           calibration: Fraction | float = 1) -> Decision:
    """One evaluation of the autoscaler at `now` for a workload with `current` replicas in
    total. See the module docstring for the rules; the returned history replaces `history`."""
    if min_replicas < 0 or max_replicas < max(min_replicas, 1):
        raise InputError(f"replica bounds: need 0 <= minReplicas <= maxReplicas and "
                         f"maxReplicas >= 1, got {min_replicas}..{max_replicas}")
    if not metrics:
        raise InputError("no metrics to scale on")
    tol = Fraction(str(tolerance)) if isinstance(tolerance, float) else Fraction(tolerance)
    cal = Fraction(str(calibration)) if isinstance(calibration, float) else Fraction(calibration)
    if cal <= 0:
        raise InputError(f"calibration must be positive, got {calibration}")
    conditions: dict[str, Condition] = {}

    def cond(kind: str, status: bool, reason: str, message: str) -> None:
        conditions[kind] = Condition(type=kind, status="True" if status else "False",
                                     reason=reason, message=message)

    def done(desired: int, reason: str, statuses: tuple[MetricStatus, ...],
             hist: AutoscaleHistory) -> Decision:
        if desired != current:
            hist = _record_scale(hist, now=now, before=current, after=desired, behavior=behavior)
            cond("AbleToScale", True, "SucceededRescale",
                 f"the HPA controller was able to update the target scale to {desired}")
        return Decision(current=current, desired=desired, reason=reason, metrics=statuses,
                        conditions=tuple(conditions[k] for k in sorted(conditions)),
                        history=hist)

    if current == 0 and min_replicas != 0:
        cond("ScalingActive", False, "ScalingDisabled",
             "scaling is disabled since the replica count of the target is zero")
        return done(current, "", (), history)
    if current > max_replicas:
        return done(max_replicas, "Current number of replicas above Spec.MaxReplicas", (),
                    history)
    if current < min_replicas:
        return done(min_replicas, "Current number of replicas below Spec.MinReplicas", (),
                    history)

    statuses = tuple(_evaluate(t, current=current, pods=pods, now=now, tolerance=tol,
                               cpu_init=cpu_initialization_period,
                               readiness_delay=initial_readiness_delay, calibration=cal)
                     for t in metrics)
    valid = [s for s in statuses if s.proposed is not None]
    failed = [s for s in statuses if s.proposed is None]
    best = max(valid, key=lambda s: s.proposed or 0, default=None)
    proposed = best.proposed if best is not None and best.proposed is not None else 0
    if best is None or (failed and proposed < current):
        cond("AbleToScale", True, "SucceededGetScale",
             "the HPA controller was able to get the target's current scale")
        cond("ScalingActive", False, "FailedGetResourceMetric",
             f"the HPA was unable to compute the replica count: {failed[0].error}")
        return done(current, f"unable to compute the replica count: {failed[0].error}",
                    statuses, history)
    cond("ScalingActive", True, "ValidMetricFound",
         f"the HPA was able to successfully calculate a replica count from {best.target.name}")
    reason = ""
    if proposed > current:
        reason = f"{best.target.name} above target"
    elif proposed < current:
        reason = "All metrics below target"

    stabilized, why, message, history = _stabilize(now=now, current=current, desired=proposed,
                                                   behavior=behavior, history=history)
    if stabilized != proposed:
        cond("AbleToScale", True, why, message)
    else:
        cond("AbleToScale", True, "ReadyForNewScale", "recommended size matches current size")
    desired, why, message = _rate_limit(now=now, current=current, desired=stabilized,
                                        min_replicas=min_replicas, max_replicas=max_replicas,
                                        behavior=behavior, history=history)
    cond("ScalingLimited", desired != stabilized, why, message)
    return done(desired, reason, statuses, history)
