"""One step of a rollout: (policy, previous progress, what the clusters report, now) ->
(new progress, what each cluster's branch holds of the governed Descriptions, why).

What a cluster branch holds of the governed Descriptions is one of three things (`Release`):
the target revision, what the branch holds already (`HOLD`: its wave has not come), or what it
held when the rollout started (`BACK`: rolled back or aborted). Everything else on the branch
is always the target.

The rules:
- a new revision (the governed Descriptions of the target changed) starts at the first wave and
  supersedes an unfinished one; its first step only records the rollout (where each cluster
  stands, which branch commit Rollback returns to) and releases nothing, so that a hub killed
  while publishing never loses what to roll back to;
- a wave's clusters are released as far as `maxUnavailable` allows: clusters released and not
  yet healthy, plus clusters skipped as Unknown, never exceed it;
- a cluster is healthy when it reports the branch commit that holds the revision applied and
  Success for every governed Description; Failure or Degraded, or no Success within
  `healthTimeout` of its release, is a failure: `onFailure: Pause` stops (nothing moves),
  `Rollback` returns every released cluster to what it held before;
- a cluster that is Unknown (no recent heartbeat) is not released and not a failure: it is
  skipped, and released once it is back (also after the rollout completed), unless the rollout
  is stopped;
- a wave is done when every cluster of it is healthy (or held the revision already, or is
  skipped within `maxUnavailable`) and has stayed so for the wave's `bake`; the next wave is
  released in the same step. A wave that released nothing needs no bake.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from gitfleet.model.rollouts import ROLLBACK, RolloutPolicy
from gitfleet.rollout.progress import ClusterProgress, Progress
from gitfleet.wire.rolloutcontrol import Control
from gitfleet.wire.rollouts import RELEASED_STATES, Phase, State

FAILED_PHASES = frozenset({"Failure", "Degraded"})


class Release(StrEnum):
    TARGET = "target"     # the revision being rolled out
    HOLD = "hold"         # what the cluster branch holds now
    BACK = "back"         # what the cluster branch held when the rollout started


@dataclass(frozen=True)
class ClusterReport:
    """What one cluster's status branch says, as the machine needs it."""

    ready: bool                                  # a recent heartbeat (else Unknown)
    applied: bool                                # reports its branch's current commit applied
    phases: Mapping[str, str] = field(default_factory=dict)   # governed folder -> phase
    failed_sync: str = ""                        # the sync's error, when applying failed


@dataclass(frozen=True)
class Inputs:
    revision: str                                 # digest of the governed target Descriptions
    source: str                                   # source commit of the target
    waves: Mapping[str, int]                      # cluster -> wave index
    current: Mapping[str, bool]                   # cluster -> its branch holds the revision
    heads: Mapping[str, str]                      # cluster -> its branch commit now
    governed: Mapping[str, frozenset[str]]        # cluster -> governed folders in the target
    reports: Mapping[str, ClusterReport]
    control: Control = Control()
    now: float = 0.0


@dataclass(frozen=True)
class Outcome:
    progress: Progress
    releases: Mapping[str, Release]
    events: tuple[str, ...] = ()

    @property
    def waiting(self) -> bool:
        """Whether the rollout waits on reports or time (the hub keeps stepping it)."""
        phase = self.progress.phase
        return phase == Phase.PROGRESSING or (phase == Phase.COMPLETE and any(
            c.state in (State.WAITING, State.SKIPPED) for c in self.progress.clusters.values()))


def step(policy: RolloutPolicy, previous: Progress | None, inputs: Inputs) -> Outcome:
    """The next progress of `policy`'s rollout and what each cluster branch holds."""
    if previous is None or previous.revision != inputs.revision:
        return _start(policy, previous, inputs)
    return _Step(policy, previous, inputs).run()


def _start(policy: RolloutPolicy, previous: Progress | None, inputs: Inputs) -> Outcome:
    now = inputs.now
    clusters = {name: ClusterProgress(
        wave=wave, state=State.CURRENT if inputs.current.get(name) else State.WAITING,
        since=now, before=inputs.heads.get(name, ""))
        for name, wave in sorted(inputs.waves.items())}
    short = inputs.revision[:12]
    events = [f"revision {short} ({inputs.source[:12]}) starts at wave {policy.waves[0].name}"]
    if previous is not None and previous.phase in (Phase.PROGRESSING, Phase.PAUSED):
        events[0] += f", superseding {previous.revision[:12]}"
    phase = Phase.PROGRESSING
    wave = 0
    if all(c.state == State.CURRENT for c in clusters.values()):
        phase, wave = Phase.COMPLETE, len(policy.waves)
        events = [f"revision {short}: every cluster holds it already"]
    progress = Progress(policy=policy.name, revision=inputs.revision, source=inputs.source,
                        phase=phase, wave=wave, since=now, clusters=clusters)
    releases = {name: Release.TARGET if c.state == State.CURRENT or phase == Phase.COMPLETE
                else Release.HOLD for name, c in clusters.items()}
    return Outcome(progress, releases, tuple(events))


class _Step:
    def __init__(self, policy: RolloutPolicy, previous: Progress, inputs: Inputs) -> None:
        self.policy = policy
        self.inputs = inputs
        self.now = inputs.now
        self.progress = previous
        self.clusters: dict[str, ClusterProgress] = {}
        self.events: list[str] = []

    def set(self, name: str, state: State, why: str = "") -> None:
        c = self.clusters[name]
        if c.state != state or c.why != why:
            self.clusters[name] = replace(c, state=state, since=self.now, why=why)

    def stop(self, phase: Phase, reason: str) -> None:
        self.progress = replace(self.progress, phase=phase, since=self.now, reason=reason)
        self.events.append(f"{phase}: {reason}")

    def run(self) -> Outcome:
        inputs, progress = self.inputs, self.progress
        # clusters that joined take their wave (nothing to release if they hold it), clusters
        # that left are forgotten
        for name, wave in sorted(inputs.waves.items()):
            old = progress.clusters.get(name)
            if old is None:
                state = State.CURRENT if inputs.current.get(name) else State.WAITING
                old = ClusterProgress(wave=wave, state=state, since=self.now,
                                      before=inputs.heads.get(name, ""))
            elif old.wave != wave and old.state in (State.WAITING, State.SKIPPED):
                old = replace(old, wave=wave)
            self.clusters[name] = old
        control = inputs.control
        short = progress.revision[:12]
        if control.abort == progress.revision and progress.phase != Phase.ABORTED:
            self.roll_back(Phase.ABORTED, "aborted by rollout control")
        elif progress.phase == Phase.PROGRESSING:
            if control.paused:
                self.stop(Phase.PAUSED, "paused by rollout control")
            else:
                self.judge()
                if self.progress.phase == Phase.PROGRESSING:
                    self.advance()
        elif progress.phase == Phase.PAUSED:
            resumed = control.resume == progress.revision and \
                progress.reason != "paused by rollout control"
            if not control.paused and (resumed or progress.reason == "paused by rollout control"):
                for name, c in self.clusters.items():
                    if c.state == State.FAILED:
                        self.set(name, State.RELEASED, "retried after resume")
                self.progress = replace(self.progress, phase=Phase.PROGRESSING, since=self.now,
                                        reason="")
                self.events.append(f"revision {short} resumed")
                self.judge()
                if self.progress.phase == Phase.PROGRESSING:
                    self.advance()
            else:
                self.judge(stop=False)
        elif progress.phase == Phase.COMPLETE:
            for name, c in self.clusters.items():   # skipped or joined: released once back
                report = inputs.reports.get(name)
                if c.state in (State.WAITING, State.SKIPPED) and report is not None and \
                        report.ready:
                    self.set(name, State.RELEASED, "released after the rollout completed")
        self.progress = replace(self.progress, clusters=dict(sorted(self.clusters.items())))
        return Outcome(self.progress, self.releases(), tuple(self.events))

    def releases(self) -> dict[str, Release]:
        out = {}
        stopped_back = self.progress.phase in (Phase.ROLLED_BACK, Phase.ABORTED)
        for name, c in self.clusters.items():
            if c.state == State.ROLLED_BACK or (stopped_back and c.state in RELEASED_STATES):
                out[name] = Release.BACK
            elif c.state in RELEASED_STATES or c.state == State.CURRENT:
                out[name] = Release.TARGET
            else:
                out[name] = Release.HOLD
        return out

    # -- gates -------------------------------------------------------------------------------

    def judge(self, *, stop: bool = True) -> None:
        """Update every released cluster from its report; a failure stops the rollout."""
        failures = []
        for name, c in sorted(self.clusters.items()):
            if c.state not in (State.RELEASED, State.HEALTHY):
                continue
            report = self.inputs.reports.get(name)
            folders = self.inputs.governed.get(name, frozenset())
            if report is None or not report.ready:
                continue              # Unknown: neither healthy nor failed
            # a report counts only for a branch that holds the revision (a hub killed while
            # publishing may have left the branch elsewhere; this step moves it again)
            applied = report.applied and self.inputs.current.get(name, False)
            bad = sorted(f"{f} {report.phases[f]}" for f in folders
                         if applied and report.phases.get(f) in FAILED_PHASES)
            if applied and report.failed_sync:
                bad.append(f"apply failed: {report.failed_sync}")
            if bad:
                self.set(name, State.FAILED, "; ".join(bad))
                failures.append(f"{name}: {'; '.join(bad)}")
            elif applied and all(report.phases.get(f) == "Success" for f in folders):
                if c.state != State.HEALTHY:
                    self.set(name, State.HEALTHY)
            elif c.state == State.HEALTHY:
                self.set(name, State.RELEASED, "not Success any more")
            elif self.now - c.since > self.policy.health_timeout:
                why = f"no Success within healthTimeout ({self.policy.health_timeout:g}s)"
                self.set(name, State.FAILED, why)
                failures.append(f"{name}: {why}")
        if failures and stop:
            reason = "; ".join(failures)
            if self.policy.on_failure == ROLLBACK:
                self.roll_back(Phase.ROLLED_BACK, reason)
            else:
                self.stop(Phase.PAUSED, reason)

    def roll_back(self, phase: Phase, reason: str) -> None:
        for name, c in self.clusters.items():
            if c.state in RELEASED_STATES:
                self.set(name, State.ROLLED_BACK, reason if c.state == State.FAILED else "")
        self.stop(phase, reason)

    # -- waves -------------------------------------------------------------------------------

    def advance(self) -> None:
        """Release what the current wave has room for; pass every wave that is done."""
        waves = self.policy.waves
        while self.progress.wave < len(waves):
            index = self.progress.wave
            self.retry_skipped(index)
            members = sorted(n for n, c in self.clusters.items() if c.wave == index)
            for name in members:
                report = self.inputs.reports.get(name)
                if self.clusters[name].state == State.WAITING and (
                        report is None or not report.ready):
                    self.set(name, State.SKIPPED, "Unknown: no recent heartbeat")
            room = self.policy.max_unavailable.of(len(members)) - self.unavailable(index)
            for name in members:
                if room > 0 and self.clusters[name].state == State.WAITING:
                    self.set(name, State.RELEASED)
                    room -= 1
            if not self.wave_done(index, members):
                return
            self.events.append(f"wave {waves[index].name} done")
            self.progress = replace(self.progress, wave=index + 1, since=self.now,
                                    healthy_since=None)
        self.progress = replace(self.progress, phase=Phase.COMPLETE, since=self.now)
        self.events.append(f"revision {self.progress.revision[:12]} complete")

    def retry_skipped(self, through: int) -> None:
        """Skipped clusters of waves up to `through` that are back wait for room again."""
        for name, c in self.clusters.items():
            report = self.inputs.reports.get(name)
            if c.state == State.SKIPPED and c.wave <= through and report is not None and \
                    report.ready:
                self.set(name, State.WAITING, "back from Unknown")
        for name, c in self.clusters.items():   # earlier waves: released at once
            if c.state == State.WAITING and c.wave < through:
                self.set(name, State.RELEASED, "back from Unknown")

    def unavailable(self, wave: int) -> int:
        return sum(1 for c in self.clusters.values() if c.wave == wave and
                   c.state in (State.RELEASED, State.SKIPPED, State.FAILED))

    def wave_done(self, index: int, members: list[str]) -> bool:
        wave = self.policy.waves[index]
        states = [self.clusters[n].state for n in members]
        skipped = states.count(State.SKIPPED)
        promoted = self.inputs.control.promote == f"{self.progress.revision}/{wave.name}"
        if promoted:
            return True
        if any(s not in (State.HEALTHY, State.CURRENT, State.SKIPPED) for s in states):
            self.progress = replace(self.progress, healthy_since=None)
            return False
        if skipped > self.policy.max_unavailable.of(len(members)):
            return False
        if State.HEALTHY not in states:
            return True                     # nothing released here: nothing to bake
        since = self.progress.healthy_since
        if since is None:
            self.progress = replace(self.progress, healthy_since=self.now)
            since = self.now
        return self.now - since >= wave.bake
