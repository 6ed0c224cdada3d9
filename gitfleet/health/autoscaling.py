"""HorizontalPodAutoscaler: Healthy while it can scale and its metrics answer.

gitops-engine's reading of the conditions, in their order, the first decisive one deciding:
`AbleToScale` for FailedGetScale or FailedUpdateScale, or `ScalingActive` for a metric or
selector it cannot use, is Degraded; `AbleToScale` or `ScalingLimited` true is Healthy; none
decisive is Progressing. `autoscaling/v1` keeps its conditions in the annotation
`autoscaling.alpha.kubernetes.io/conditions` (JSON), read the same way. An HPA whose
controller has written no conditions yet is judged by the conventions (kstatus): Healthy —
gitops-engine would wait for them (docs/health.md says why gitfleet does not).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from gitfleet.health.verdict import (
    Obj,
    Verdict,
    conditions,
    degraded,
    healthy,
    progressing,
    said,
    section,
)

V1_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"

_BROKEN = {
    "AbleToScale": frozenset({"FailedGetScale", "FailedUpdateScale"}),
    "ScalingActive": frozenset({"FailedGetResourceMetric", "FailedGetPodsMetric",
                                "FailedGetObjectMetric", "FailedGetExternalMetric",
                                "FailedGetContainerResourceMetric", "InvalidSelector",
                                "InvalidMetricSourceType"}),
}
_HEALTHY = frozenset({"AbleToScale", "ScalingLimited"})


def _v1_conditions(obj: Obj) -> list[Obj]:
    text = section(section(obj, "metadata"), "annotations").get(V1_CONDITIONS)
    if not isinstance(text, str):
        return []
    try:
        found = json.loads(text)
    except ValueError:
        return []
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def hpa(obj: Obj, now: float | None) -> Verdict:
    found: Iterable[Obj] = list(conditions(section(obj, "status"))) or _v1_conditions(obj)
    if not found:
        return healthy("no conditions reported yet")
    found = list(found)
    for c in found:
        kind = c.get("type")
        if c.get("reason") in _BROKEN.get(str(kind), ()):
            return degraded(f"{kind}: {said(c)}")
        if kind in _HEALTHY and c.get("status") == "True":
            # both peers call it Healthy; the message still says what it cannot do
            idle = [f"{i.get('type')}: {said(i)}" for i in found
                    if i.get("type") == "ScalingActive" and i.get("status") == "False"]
            return healthy("; ".join([f"{kind}: {said(c)}", *idle]))
    return progressing("waiting to autoscale")
