"""Every kind without a rule of its own, judged by the status conventions (kstatus).

Most controllers written since Kubernetes settled its API conventions say how they are doing
in `status.observedGeneration` and a few standard conditions; Flux, kpt and Argo CD's
readers all trust them, so a Certificate, a Crossplane claim or a Flux object is judged without
knowing it:

- `observedGeneration` behind `metadata.generation`: Progressing (the spec is not seen yet);
- `Stalled=True`: Degraded; `Reconciling=True`: Progressing;
- `Ready=False` (or Unknown): Progressing, then Degraded once it has stayed so longer than the
  object's progress timeout (annotation `gitfleet.io/progress-timeout`, default 10m — a
  Deployment's own default deadline); kstatus never gives up, gitfleet must, or a rollout
  waits for ever;
- no conditions at all: Healthy — there is nothing to wait for.
"""

from __future__ import annotations

from gitfleet.durations import parse_duration
from gitfleet.health.verdict import (
    Obj,
    Verdict,
    conditions,
    degraded,
    healthy,
    progressing,
    said,
    section,
    timestamp,
)

PROGRESS_TIMEOUT_ANNOTATION = "gitfleet.io/progress-timeout"
DEFAULT_PROGRESS_TIMEOUT = 600.0


def progress_timeout(obj: Obj, default: float) -> float:
    """The object's own progress timeout (its annotation), else `default`."""
    text = section(section(obj, "metadata"), "annotations").get(PROGRESS_TIMEOUT_ANNOTATION)
    if isinstance(text, str):
        try:
            return parse_duration(text)
        except ValueError:
            return default
    return default


def observed_lag(obj: Obj) -> Verdict | None:
    """Progressing while `status.observedGeneration` (when the object has one) is behind."""
    generation = section(obj, "metadata").get("generation")
    observed = section(obj, "status").get("observedGeneration")
    if isinstance(generation, int) and isinstance(observed, int) and observed < generation:
        return progressing(f"generation {generation} not observed yet (observed {observed})")
    return None


def judge_by_conventions(obj: Obj, now: float | None, default_timeout: float) -> Verdict:
    lag = observed_lag(obj)
    if lag is not None:
        return lag
    ready: Obj | None = None
    for c in conditions(section(obj, "status")):
        kind = c.get("type")
        if c.get("status") == "True":
            if kind == "Stalled":
                return degraded(f"stalled: {said(c, 'no reason given')}")
            if kind == "Reconciling":
                return progressing(f"reconciling: {said(c, 'no reason given')}")
        if kind == "Ready":
            ready = c
    if ready is None or ready.get("status") == "True":
        return healthy()
    why = said(ready, "no reason given")
    since = timestamp(ready.get("lastTransitionTime"))
    limit = progress_timeout(obj, default_timeout)
    if now is not None and since is not None and now - since > limit:
        return degraded(f"not ready for {int(now - since)}s (progress timeout "
                        f"{int(limit)}s): {why}")
    return progressing(f"not ready: {why}")
