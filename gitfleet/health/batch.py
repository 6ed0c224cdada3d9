"""Job and CronJob: a Job is Healthy once Complete, Degraded once Failed or past its backoff
limit, Suspended while `spec.suspend` holds it (gitops-engine; kstatus calls a started Job
Current, but a Description holding a migration Job is not done before the Job is). A CronJob
is Healthy unless its last run failed: scheduled after its last success with nothing running
(one that never succeeded yet is Healthy: Argo CD's customization and kstatus agree).
"""

from __future__ import annotations

from gitfleet.health.verdict import (
    Obj,
    Verdict,
    condition,
    count,
    degraded,
    healthy,
    progressing,
    said,
    section,
    suspended,
    timestamp,
)

DEFAULT_BACKOFF_LIMIT = 6


def job(obj: Obj, now: float | None) -> Verdict:
    status = section(obj, "status")
    spec = section(obj, "spec")
    failed = condition(status, "Failed")
    if failed is not None and failed.get("status") == "True":
        return degraded(f"job failed: {said(failed, 'failed')}")
    complete = condition(status, "Complete")
    if complete is not None and complete.get("status") == "True":
        return healthy("job complete")
    if spec.get("suspend") is True:  # what was asked (both peers: a resumed Job runs)
        return suspended("job is suspended")
    failures = count(status, "failed") or 0
    limit = spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)
    if isinstance(limit, int) and failures > limit:
        return degraded(f"job failed: {failures} pod failure(s), backoffLimit {limit}")
    done = count(status, "succeeded") or 0
    want = spec.get("completions")
    running = count(status, "active") or 0
    text = f"job running: {running} active, {done}" + \
        (f" of {want}" if isinstance(want, int) else "") + " succeeded"
    if failures:
        text += f", {failures} failed (backoffLimit {limit})"
    return progressing(text)


def cronjob(obj: Obj, now: float | None) -> Verdict:
    status = section(obj, "status")
    scheduled = timestamp(status.get("lastScheduleTime"))
    succeeded = timestamp(status.get("lastSuccessfulTime"))
    if scheduled is not None and succeeded is None:
        return healthy("no run completed successfully yet")  # both peers: it may be the first
    if scheduled is not None and not status.get("active") and \
            succeeded is not None and succeeded < scheduled:
        return degraded("the CronJob's last run did not complete successfully")
    if section(obj, "spec").get("suspend") is True:
        return healthy("CronJob is suspended")
    return healthy()
