"""A rollout's progress as the state machine works with it: waves by their index in the
RolloutPolicy. `rollouts.yaml` records them by name (`gitfleet.wire.rollouts`); this module
converts, given the policy, so a record whose wave no longer exists starts that rollout again
at its first wave (it never skips a gate).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gitfleet.model.rollouts import RolloutPolicy
from gitfleet.wire.rollouts import ClusterRecord, Phase, RolloutRecord, State


@dataclass(frozen=True)
class ClusterProgress:
    wave: int
    state: State
    since: float
    before: str = ""   # its cluster branch commit when the rollout started (what Rollback restores)
    why: str = ""


@dataclass(frozen=True)
class Progress:
    """One policy's rollout of one revision (a digest of the governed Descriptions)."""

    policy: str
    revision: str
    source: str                    # the source commit the revision was rendered from
    phase: Phase
    wave: int                      # index of the wave being released (len(waves) when done)
    since: float                   # when the phase or the wave last changed
    reason: str = ""               # why paused, rolled back or aborted
    healthy_since: float | None = None   # when every cluster of the wave was first healthy
    clusters: Mapping[str, ClusterProgress] = field(default_factory=dict)

    def wave_name(self, policy: RolloutPolicy) -> str:
        return policy.waves[self.wave].name if self.wave < len(policy.waves) else ""


def to_record(progress: Progress, policy: RolloutPolicy) -> RolloutRecord:
    """What `rollouts.yaml` records of `progress`."""
    names = [w.name for w in policy.waves]
    return RolloutRecord(
        policy=progress.policy, revision=progress.revision, source=progress.source,
        phase=progress.phase, wave=progress.wave_name(policy), since=progress.since,
        reason=progress.reason, healthy_since=progress.healthy_since,
        clusters=tuple(ClusterRecord(name=name, wave=names[c.wave], state=c.state,
                                     since=c.since, before=c.before, why=c.why)
                       for name, c in sorted(progress.clusters.items())))


def from_record(record: RolloutRecord, policy: RolloutPolicy) -> Progress | None:
    """The progress a record holds, or None when it no longer fits the policy (a wave it
    names is gone): then the rollout starts again at the first wave."""
    names = {w.name: i for i, w in enumerate(policy.waves)}
    if (record.wave and record.wave not in names) or \
            any(c.wave not in names for c in record.clusters):
        return None
    return Progress(
        policy=policy.name, revision=record.revision, source=record.source,
        phase=record.phase, wave=names[record.wave] if record.wave else len(policy.waves),
        since=record.since, reason=record.reason, healthy_since=record.healthy_since,
        clusters={c.name: ClusterProgress(wave=names[c.wave], state=c.state, since=c.since,
                                          before=c.before, why=c.why)
                  for c in record.clusters})
