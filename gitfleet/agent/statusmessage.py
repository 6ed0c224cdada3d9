"""The rule for status commits and the words of their messages.

A status whose only difference from the branch tip is the heartbeat time is a heartbeat: it
replaces the tip when the tip is itself a heartbeat-only commit (marked with a trailer), so a
day of quiet heartbeats leaves the history as long as it was. Any other change appends a commit
whose message says what changed, so `git log` of the status branch reads as an audit trail.
Pure: statuses in, a decision and text out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gitfleet.agent.drift import field_text
from gitfleet.wire.status import Change, ClusterStatus

HEARTBEAT_TRAILER = "Gitfleet-Heartbeat-Only"


class Write(StrEnum):
    NOTHING = "nothing"
    REPLACE_HEARTBEAT = "replace-heartbeat"
    APPEND_HEARTBEAT = "append-heartbeat"
    APPEND_CHANGE = "append-change"


def decide(previous: ClusterStatus | None, tip_heartbeat_only: bool,
           new: ClusterStatus) -> Write:
    if previous is None:
        return Write.APPEND_CHANGE
    if previous == new:
        return Write.NOTHING
    if previous.without_times() == new.without_times():
        return Write.REPLACE_HEARTBEAT if tip_heartbeat_only else Write.APPEND_HEARTBEAT
    return Write.APPEND_CHANGE


@dataclass(frozen=True)
class Message:
    subject: str
    body: tuple[str, ...] = ()
    heartbeat_only: bool = False

    def text(self, *, state_commit: str = "") -> str:
        parts = [self.subject]
        if self.body and not (len(self.body) == 1 and self.subject.endswith(self.body[0])):
            parts.append("\n".join(self.body))
        trailers = []
        if state_commit:
            trailers.append(f"State-Commit: {state_commit}")
        if self.heartbeat_only:
            trailers.append(f"{HEARTBEAT_TRAILER}: true")
        if trailers:
            parts.append("\n".join(trailers))
        return "\n\n".join(parts) + "\n"


def _short(sha: str) -> str:
    return sha[:10] if sha else "-"


def describe(previous: ClusterStatus | None, new: ClusterStatus, write: Write) -> Message:
    """A message a person can read in `git log`: what the agent did and what it saw."""
    cluster = new.cluster
    if write in (Write.REPLACE_HEARTBEAT, Write.APPEND_HEARTBEAT):
        ready = "ready" if new.heartbeat and new.heartbeat.ready else "not ready"
        return Message(f"{cluster}: heartbeat ({ready})", heartbeat_only=True)
    lines: list[str] = []
    headline = ""
    old_sync = previous.sync if previous else None
    if old_sync is None or old_sync.cluster_commit != new.sync.cluster_commit:
        counts: dict[str, int] = {}
        for o in [o for d in new.descriptions for o in d.objects] + list(new.pruned):
            counts[str(o.change)] = counts.get(str(o.change), 0) + 1
        summary = ", ".join(f"{counts[c]} {c}" for c in Change if counts.get(c))
        if new.sync.cluster_commit:
            headline = (f"applied state {_short(new.sync.state_commit)}"
                        + (f": {summary}" if summary else ""))
    if old_sync is None or (old_sync.result, old_sync.message) != (new.sync.result,
                                                                     new.sync.message):
        text = f"sync {new.sync.result}" + (f": {new.sync.message}" if new.sync.message else "")
        lines.append(text)
        headline = headline or text
    old_objects = {(d.key, o.kind, o.namespace, o.name): o
                   for d in (previous.descriptions if previous else ()) for o in d.objects}
    for d in new.descriptions:
        before = previous.description(d.key) if previous else None
        if before is None or before.phase != d.phase:
            arrow = f"{before.phase} -> {d.phase}" if before else str(d.phase)
            text = f"{d.key}: {arrow}" + (f" ({d.message})" if d.message else "")
            lines.append(text)
            headline = headline or text
        for o in d.objects:
            old = old_objects.get((d.key, o.kind, o.namespace, o.name))
            changed = old is None or (old.change, old.error) != (o.change, o.error)
            if changed and o.change is not Change.UNCHANGED:
                where = f"{o.namespace}/" if o.namespace else ""
                err = f": {o.error}" if o.error else ""
                lines.append(f"  {o.change} {o.kind} {where}{o.name}{err}")
    old_pruned = list(previous.pruned) if previous else []
    for o in new.pruned:
        if o not in old_pruned:
            where = f"{o.namespace}/" if o.namespace else ""
            err = f": {o.error}" if o.error else ""
            lines.append(f"  {o.change} {o.kind} {where}{o.name}{err}")
    if previous:
        gone = {d.key for d in previous.descriptions} - {d.key for d in new.descriptions}
        lines += [f"{key}: removed" for key in sorted(gone)]
    old_drift = {(d.kind, d.namespace, d.name): d for d in (previous.drift if previous else ())}
    new_drift = {(d.kind, d.namespace, d.name): d for d in new.drift}
    for key, drift in new_drift.items():
        if old_drift.get(key) != drift:
            where = f"{drift.namespace}/" if drift.namespace else ""
            what = "deleted" if drift.missing else ", ".join(
                field_text(f) for f in drift.fields)
            text = f"drift on {drift.kind} {where}{drift.name}: {what}"
            lines.append(text)
            headline = headline or text
    for key in old_drift.keys() - new_drift.keys():
        kind, ns, name = key
        text = f"drift resolved on {kind} {ns + '/' if ns else ''}{name}"
        lines.append(text)
        headline = headline or text
    old_hb, new_hb = (previous.heartbeat if previous else None), new.heartbeat
    if new_hb and (old_hb is None or old_hb.ready != new_hb.ready):
        text = f"cluster {'ready' if new_hb.ready else 'not ready'}"
        lines.append(text)
        headline = headline or text
    if not headline:
        headline = "status updated" if lines or previous else "first status"
        if old_hb and new_hb and old_hb.time != new_hb.time and not lines:
            headline = "heartbeat with changed cluster facts"
    return Message(f"{cluster}: {headline}", tuple(lines))
