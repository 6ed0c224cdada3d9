"""A FederatedHPA's `spec.metrics` and `spec.behavior`, read strictly, with Kubernetes defaults.

Only what the decision uses is accepted: `Resource` metrics for `cpu` and `memory` with a
`Utilization` or `AverageValue` target. Any other metric type or field is an InputError naming
it, never a silent no-op (SEMANTICS, "Strictness"). Behaviour defaults are those of
`autoscaling/v2` (scale up: no stabilization, the larger of +100 % and +4 pods per 15 s; scale
down: 300 s stabilization, -100 % per 15 s), which Karmada applies to a FederatedHPA as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gitfleet.errors import InputError
from gitfleet.quantity import parse_quantity

RESOURCES = ("cpu", "memory")
TARGET_TYPES = ("Utilization", "AverageValue")
SELECT_POLICIES = ("Max", "Min", "Disabled")
POLICY_TYPES = ("Pods", "Percent")
MAX_STABILIZATION_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800
DEFAULT_CPU_UTILIZATION = 80


def _fail(message: str, *, path: str, obj: str) -> InputError:
    return InputError(message, path=path, obj=obj)


def _int(value: Any, field: str, *, low: int, high: int | None, path: str, obj: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(f"{field}: must be an integer, got {value!r}", path=path, obj=obj)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise _fail(f"{field}: must be {bound}, got {value}", path=path, obj=obj)
    return value


def _mapping(value: Any, field: str, *, path: str, obj: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(f"{field}: must be a mapping, got {value!r}", path=path, obj=obj)
    return value


def _only(data: Mapping[str, Any], allowed: Sequence[str], field: str, *, path: str,
          obj: str) -> None:
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise _fail(f"{field}.{extra[0]}: not supported by gitfleet (supported: "
                    f"{', '.join(allowed)})", path=path, obj=obj)


@dataclass(frozen=True)
class MetricTarget:
    """One resource metric: `value` is a percentage of the pods' requests (`Utilization`) or a
    per-pod amount in cores / bytes (`AverageValue`)."""

    resource: str
    type: str
    value: Fraction

    @property
    def name(self) -> str:
        """How Kubernetes names the metric in its events and conditions."""
        if self.type == "Utilization":
            return f"{self.resource} resource utilization (percentage of request)"
        return f"{self.resource} resource"

    @staticmethod
    def from_spec(metrics: Any, *, path: str = "", obj: str = "") -> tuple[MetricTarget, ...]:
        """`spec.metrics` of a FederatedHPA; absent or empty means CPU at 80 % (the v2 default).
        """
        if metrics is None or metrics == []:
            return (MetricTarget(resource="cpu", type="Utilization",
                                 value=Fraction(DEFAULT_CPU_UTILIZATION)),)
        if not isinstance(metrics, list):
            raise _fail(f"spec.metrics: must be a list, got {metrics!r}", path=path, obj=obj)
        out = [MetricTarget._one(m, f"spec.metrics[{i}]", path=path, obj=obj)
               for i, m in enumerate(metrics)]
        seen: set[tuple[str, str]] = set()
        for i, m in enumerate(out):
            if (m.resource, m.type) in seen:
                raise _fail(f"spec.metrics[{i}]: {m.resource} {m.type} is listed twice",
                            path=path, obj=obj)
            seen.add((m.resource, m.type))
        return tuple(out)

    @staticmethod
    def _one(data: Any, field: str, *, path: str, obj: str) -> MetricTarget:
        data = _mapping(data, field, path=path, obj=obj)
        kind = data.get("type")
        if kind != "Resource":
            raise _fail(f"{field}.type: {kind!r} is not supported by gitfleet (only Resource "
                        "metrics: cpu and memory from metrics.k8s.io)", path=path, obj=obj)
        _only(data, ("type", "resource"), field, path=path, obj=obj)
        res = _mapping(data.get("resource"), f"{field}.resource", path=path, obj=obj)
        _only(res, ("name", "target"), f"{field}.resource", path=path, obj=obj)
        name = res.get("name")
        if name not in RESOURCES:
            raise _fail(f"{field}.resource.name: {name!r} is not supported (use cpu or memory)",
                        path=path, obj=obj)
        target = _mapping(res.get("target"), f"{field}.resource.target", path=path, obj=obj)
        ttype = target.get("type")
        tfield = f"{field}.resource.target"
        if ttype == "Utilization":
            _only(target, ("type", "averageUtilization"), tfield, path=path, obj=obj)
            value = _int(target.get("averageUtilization"), f"{tfield}.averageUtilization",
                         low=1, high=None, path=path, obj=obj)
            return MetricTarget(resource=str(name), type="Utilization", value=Fraction(value))
        if ttype == "AverageValue":
            _only(target, ("type", "averageValue"), tfield, path=path, obj=obj)
            raw = target.get("averageValue")
            try:
                amount = parse_quantity(raw)
            except (ValueError, TypeError):
                raise _fail(f"{tfield}.averageValue: not a quantity: {raw!r}",
                            path=path, obj=obj) from None
            if amount <= 0:
                raise _fail(f"{tfield}.averageValue: must be positive, got {raw!r}",
                            path=path, obj=obj)
            return MetricTarget(resource=str(name), type="AverageValue", value=amount)
        raise _fail(f"{tfield}.type: {ttype!r} is not supported for a resource metric (use "
                    f"{' or '.join(TARGET_TYPES)})", path=path, obj=obj)


@dataclass(frozen=True)
class Policy:
    """At most `value` pods (`Pods`) or `value` % of the replicas at the period's start
    (`Percent`) added or removed within any `period_seconds`."""

    type: str
    value: int
    period_seconds: int


@dataclass(frozen=True)
class ScalingRules:
    stabilization_seconds: int
    select_policy: str
    policies: tuple[Policy, ...]

    @property
    def longest_period(self) -> int:
        return max((p.period_seconds for p in self.policies), default=0)

    @staticmethod
    def from_spec(data: Any, *, default: ScalingRules, field: str, path: str,
                  obj: str) -> ScalingRules:
        if data is None:
            return default
        data = _mapping(data, field, path=path, obj=obj)
        _only(data, ("stabilizationWindowSeconds", "selectPolicy", "policies"), field,
              path=path, obj=obj)
        window = default.stabilization_seconds
        if data.get("stabilizationWindowSeconds") is not None:
            window = _int(data["stabilizationWindowSeconds"],
                          f"{field}.stabilizationWindowSeconds", low=0,
                          high=MAX_STABILIZATION_SECONDS, path=path, obj=obj)
        select = data.get("selectPolicy", default.select_policy)
        if select not in SELECT_POLICIES:
            raise _fail(f"{field}.selectPolicy: {select!r} is not one of "
                        f"{', '.join(SELECT_POLICIES)}", path=path, obj=obj)
        policies = default.policies
        if data.get("policies") is not None:
            raw = data["policies"]
            if not isinstance(raw, list) or not raw:
                raise _fail(f"{field}.policies: must be a non-empty list", path=path, obj=obj)
            policies = tuple(_policy(p, f"{field}.policies[{i}]", path=path, obj=obj)
                             for i, p in enumerate(raw))
        return ScalingRules(stabilization_seconds=window, select_policy=str(select),
                            policies=policies)


def _policy(data: Any, field: str, *, path: str, obj: str) -> Policy:
    data = _mapping(data, field, path=path, obj=obj)
    _only(data, ("type", "value", "periodSeconds"), field, path=path, obj=obj)
    kind = data.get("type")
    if kind not in POLICY_TYPES:
        raise _fail(f"{field}.type: {kind!r} is not one of {', '.join(POLICY_TYPES)}",
                    path=path, obj=obj)
    value = _int(data.get("value"), f"{field}.value", low=1, high=None, path=path, obj=obj)
    period = _int(data.get("periodSeconds"), f"{field}.periodSeconds", low=1,
                  high=MAX_PERIOD_SECONDS, path=path, obj=obj)
    return Policy(type=str(kind), value=value, period_seconds=period)


DEFAULT_SCALE_UP = ScalingRules(
    stabilization_seconds=0, select_policy="Max",
    policies=(Policy(type="Percent", value=100, period_seconds=15),
              Policy(type="Pods", value=4, period_seconds=15)))
DEFAULT_SCALE_DOWN = ScalingRules(
    stabilization_seconds=300, select_policy="Max",
    policies=(Policy(type="Percent", value=100, period_seconds=15),))


@dataclass(frozen=True)
class Behavior:
    scale_up: ScalingRules = DEFAULT_SCALE_UP
    scale_down: ScalingRules = DEFAULT_SCALE_DOWN

    @staticmethod
    def from_spec(data: Any, *, path: str = "", obj: str = "") -> Behavior:
        """`spec.behavior` (None: all defaults; a partial rule set keeps the other defaults)."""
        if data is None:
            return Behavior()
        data = _mapping(data, "spec.behavior", path=path, obj=obj)
        _only(data, ("scaleUp", "scaleDown"), "spec.behavior", path=path, obj=obj)
        return Behavior(
            scale_up=ScalingRules.from_spec(data.get("scaleUp"), default=DEFAULT_SCALE_UP,
                                            field="spec.behavior.scaleUp", path=path, obj=obj),
            scale_down=ScalingRules.from_spec(data.get("scaleDown"),
                                              default=DEFAULT_SCALE_DOWN,
                                              field="spec.behavior.scaleDown", path=path,
                                              obj=obj))
