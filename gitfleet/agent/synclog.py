"""What the apply part logs: one info line per sync that did something, one line per failure
with its cause, one per drift (when first seen) and per recovery, one per refused commit. A
state that stays as it was logs nothing again."""

from __future__ import annotations

import logging
from collections import Counter

from gitfleet.agent.changes import DriftFound, ObjectResult, SyncReport
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.drift import field_text
from gitfleet.agent.report import NAMESPACE_SKIP
from gitfleet.logs import log
from gitfleet.wire.status import SyncResult

LOG = logging.getLogger("gitfleet.agent")


class SyncLog:
    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._commit = ""
        self._refusal = ""
        self._drift: set[str] = set()
        self._failures: dict[str, str] = {}

    def refused(self, commit: str, *, reason: str, applied: str) -> None:
        if commit != self._refusal:
            log(LOG, logging.ERROR, "cluster commit refused; nothing applied",
                cluster=self.cluster, commit=commit[:12], reason=reason, applied=applied[:12])
            self._refusal = commit

    def not_refused(self) -> None:
        self._refusal = ""

    def synced(self, desired: DesiredState, report: SyncReport, result: SyncResult) -> None:
        counts = Counter(str(r.change) for r in report.objects.values())
        counts.update(str(r.change) for r in report.pruned)
        changed = {k: counts[k] for k in ("created", "configured", "deleted", "released")
                   if counts[k]}
        failed = {r.ref.key: r for r in (*report.objects.values(), *report.pruned) if r.error}
        errors = {k: r.error for k, r in failed.items()}
        drifted = {d.ref.key for d in report.drift if not d.repaired}
        if (changed or errors != self._failures or drifted != self._drift
                or desired.state_commit != self._commit):
            log(LOG, logging.INFO, "synced", cluster=self.cluster,
                state_commit=desired.state_commit[:12], result=str(result),
                created=counts["created"], configured=counts["configured"],
                deleted=counts["deleted"], released=counts["released"],
                unchanged=counts["unchanged"], failed=len(failed), drifted=len(drifted))
        self._commit = desired.state_commit
        for key, r in sorted(failed.items()):
            if (self._failures.get(key) == r.error
                    or r.error.startswith(NAMESPACE_SKIP)):
                continue
            log(LOG, logging.WARNING, "object failed", object=str(r.ref),
                description=r.description, error=r.error)
        self._failures = errors
        for d in report.drift:
            if d.repaired:
                log(LOG, logging.INFO, "recovered", object=str(d.ref),
                    what="re-created" if d.missing else ", ".join(f.path for f in d.fields))
            elif d.ref.key not in self._drift:
                log(LOG, logging.WARNING, "drift", object=str(d.ref), description=d.description,
                    what="missing" if d.missing else ", ".join(
                        field_text(f) for f in d.fields))
        for key in sorted(self._drift - drifted):
            log(LOG, logging.INFO, "drift gone", object=key)
        self._drift = drifted


def repair_line(result: ObjectResult, drift: DriftFound) -> str:
    """The status commit's line about one object Recovery (or a sync) put back."""
    ref = result.ref
    where = f"{ref.namespace}/" if ref.namespace else ""
    if drift.missing:
        what = "re-created after deletion"
    else:
        what = "put back " + ", ".join(field_text(f, put_back=True) for f in drift.fields)
    error = f" (failed: {result.error})" if result.error else ""
    return f"recovered {ref.kind} {where}{ref.name}: {what}{error}"
