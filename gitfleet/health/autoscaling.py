"""HorizontalPodAutoscaler: Healthy while it can scale and its metrics answer.

gitops-engine's reading of the conditions: `AbleToScale` false for FailedGetScale or
FailedUpdateScale, or `ScalingActive` false for a metric or selector it cannot use, is Degraded;
`AbleToScale` true is Healthy. `ScalingActive` false with ScalingDisabled (a target scaled to 0)
is what the user asked for. An HPA whose controller has written no conditions yet is judged by
the conventions (kstatus): Healthy — gitops-engine would wait for them.
"""

from __future__ import annotations

from gitfleet.health.verdict import (
    Obj,
    Verdict,
    condition,
    degraded,
    healthy,
    progressing,
    said,
    section,
)

_BROKEN = {
    "AbleToScale": frozenset({"FailedGetScale", "FailedUpdateScale"}),
    "ScalingActive": frozenset({"FailedGetResourceMetric", "FailedGetPodsMetric",
                                "FailedGetObjectMetric", "FailedGetExternalMetric",
                                "FailedGetContainerResourceMetric", "InvalidSelector",
                                "InvalidMetricSourceType"}),
}


def hpa(obj: Obj, now: float | None) -> Verdict:
    status = section(obj, "status")
    if not status.get("conditions"):
        return healthy("no conditions reported yet")
    for kind, reasons in _BROKEN.items():
        c = condition(status, kind)
        if c is not None and c.get("status") == "False" and c.get("reason") in reasons:
            return degraded(f"{kind}: {said(c)}")
    able = condition(status, "AbleToScale")
    if able is not None and able.get("status") == "True":
        active = condition(status, "ScalingActive")
        if active is not None and active.get("status") == "False":
            return healthy(said(active))
        return healthy()
    return progressing("waiting to autoscale" + (f": {said(able)}" if able else ""))
