"""One log line per change of health or phase (SEMANTICS, "Health and status").

A person following an agent's log sees every object turn Healthy, Progressing, Suspended or
Degraded and every Description change phase, once each, with the judge's message; the same
judgement lands in the status branch. A quiet cluster logs nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from gitfleet.agent.changes import ObjectResult
from gitfleet.logs import log
from gitfleet.wire.status import ClusterStatus

LOG = logging.getLogger("gitfleet.agent.health")


def log_changes(previous: ClusterStatus | None, status: ClusterStatus,
                results: Mapping[str, ObjectResult]) -> int:
    """Log what changed from `previous` to `status`; returns the number of lines."""
    lines = 0
    said = {(r.ref.kind, r.ref.namespace, r.ref.name): r.message for r in results.values()}
    before = {d.key: d for d in (previous.descriptions if previous else ())}
    for d in status.descriptions:
        old = before.get(d.key)
        old_health = {(o.kind, o.namespace, o.name): o.health for o in old.objects} if old else {}
        for o in d.objects:
            was = old_health.get((o.kind, o.namespace, o.name))
            if was is o.health:
                continue
            ref = f"{o.kind}/{o.namespace}/{o.name}" if o.namespace else f"{o.kind}/{o.name}"
            message = said.get((o.kind, o.namespace, o.name), "")
            log(LOG, logging.WARNING if o.health == "Degraded" else logging.INFO, "health",
                object=ref, description=d.key, was=str(was or "-"), now=str(o.health),
                message=message)
            lines += 1
        if old is None or old.phase is not d.phase:
            log(LOG, logging.WARNING if d.phase in ("Degraded", "Failure") else logging.INFO,
                "phase", description=d.key, was=str(old.phase) if old else "-",
                now=str(d.phase), message=d.message)
            lines += 1
    return lines
