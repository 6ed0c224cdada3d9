"""Statuses as every view shows them: no Secret value, even one an older agent wrote.

Agents since 0.2.0 never write a Secret's values (gitfleet.agent.drift); a fleet whose agents
are not all upgraded yet still holds them in its status branches. Every reader of a snapshot
(`get`, `status`, the dashboard, its API and export) sees statuses through `hidden_status`,
which hides them with the same function the agent uses. Cheap when there is nothing to hide:
the status comes back as it was.
"""

from __future__ import annotations

from dataclasses import replace

from gitfleet.secrets.redact import hide_drift_values, hide_old_words
from gitfleet.wire.status import ClusterStatus, Drift, FieldDrift


def _drift(d: Drift) -> Drift:
    if d.kind != "Secret":
        return d
    fields = []
    for f in d.fields:
        desired, live = hide_drift_values(f.path, f.desired, f.live)
        fields.append(FieldDrift(f.path, desired, live))
    return replace(d, fields=tuple(fields))


def _holds_values(status: ClusterStatus) -> bool:
    """Whether anything may need hiding; on every read of every cluster, so plain loops
    (a fifth of the cost of `any()` over generators)."""
    for d in status.drift:
        if d.kind == "Secret":
            return True
    for ds in status.descriptions:  # noqa: SIM110 (a loop: the hot path, see above)
        if " -> " in ds.message:
            return True
    return False


def hidden_status(status: ClusterStatus) -> ClusterStatus:
    """`status` with every Secret value hidden (the same object when it holds none)."""
    if not _holds_values(status):
        return status
    drift = tuple(_drift(d) for d in status.drift)
    descriptions = tuple(
        replace(d, message=hide_old_words(d.message)) if d.message and
        hide_old_words(d.message) != d.message else d for d in status.descriptions)
    if drift == status.drift and descriptions == status.descriptions:
        return status
    return replace(status, drift=drift, descriptions=descriptions)
