"""The value one agent round passes along its parts, and the kind of part that plugs into it.

A round is a pipeline (`gitfleet.agent.agent.Agent.step`): fetch (`fetcher`) -> verify
(`verifier`) -> heartbeat (`heartbeats`) -> plan (`course`) -> apply (`syncer`) -> report
(`reporter`) -> reactors. Each part takes the `Round` the one before it returned and returns
it with what it found (`dataclasses.replace`); a part never reads or sets another part's
attributes. `StepOutcome` is the round's ledger for the CLI's exit code, the probes and tests:
the one mutable thing a round carries, so that what a step did before it raised is kept.

A feature that needs extra work at poll time (answering plan requests, say) is a `Reactor`:
one class with `react(round)` and one entry in the agent's `reactors`. Reactors run after
the status is written, so nothing they do delays or changes a sync.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from gitfleet.agent.changes import SyncReport
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.records import RecordError
from gitfleet.kube.errors import ApiError, Unreachable
from gitfleet.state.signing import Verdict
from gitfleet.wire.status import ClusterStatus, Heartbeat

FOREVER = float("inf")

# why the agent's own record in the cluster could not be read (nothing is applied then)
Unread = Unreachable | ApiError | RecordError


@dataclass
class StepOutcome:
    """What the last step did, for the CLI's exit code and for tests."""

    fetched: bool = False
    commit: str | None = None
    synced: bool = False
    report: SyncReport | None = None
    status_written: str = ""
    errors: list[str] = field(default_factory=list)
    delegated: bool = False   # the hub's push worker applies: only the heartbeat is ours
    refused: str = ""        # why the fetched cluster commit was not applied (its signature)
    remote_fault: str = ""   # the Git remote could not be used (fetch or status push): why


class Course(enum.Enum):
    """What a round does with the cluster commit it verified (the plan part's answer)."""

    REFUSE = "refuse"          # not signed by a trusted hub key: apply nothing, say why
    HOLD = "hold"              # cannot be judged yet (the applied commit is unknown here)
    WAIT = "wait"              # no cluster branch yet
    ELSEWHERE = "elsewhere"    # a push worker for a cluster its agent applies to
    DELEGATE = "delegate"      # Push (or Dual with AppPusher): the hub's push worker applies
    SYNC = "sync"              # apply it


@dataclass(frozen=True)
class Round:
    """One round, as far as it has come. Set by the parts in pipeline order."""

    now: float
    out: StepOutcome
    # fetch
    polled: bool = False            # this round asked the remote for the cluster branch
    answered: bool = False          # ... and the remote answered
    commit: str | None = None       # the last fetched cluster commit (this round's or older)
    # verify
    verdict: Verdict | None = None  # its signature judged against the applied commit
    unjudged: str = ""              # why it cannot be judged yet
    unread: Unread | None = None    # the agent's record in the cluster could not be read
    desired: DesiredState | None = None   # the commit read (None: refused, unjudged, none)
    # heartbeat
    heartbeat: Heartbeat | None = None
    metrics: bytes | None = None    # metrics.yaml to write (None: keep the branch's)
    # plan
    course: Course = Course.WAIT
    # apply
    status: ClusterStatus | None = None   # the status this round reports
    report: SyncReport | None = None      # what the sync did (Course.SYNC, API reachable)

    @property
    def refused(self) -> bool:
        return self.verdict is not None and not self.verdict.ok


class Reactor(Protocol):
    """Extra work at poll time, after the round's status is written; returns the seconds
    until it wants the next round (FOREVER: no wish). It must not raise for a fault of its
    own: a GitfleetError is logged and the round goes on."""

    def react(self, round_: Round) -> float: ...
