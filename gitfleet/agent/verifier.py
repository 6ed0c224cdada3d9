"""The verify part of the agent's round: is the fetched cluster commit one to apply?

With trusted hub keys, a fetched commit is judged (`ClusterBranch.verdict`) against the newest
applied one: the commit the agent's own record in the cluster keeps, or a newer one (its
descendant) the status branch recorded. A commit that cannot be judged yet (the applied one is
not in this repository and fetching it failed) is held; an untrusted one is refused. What
passes is read into a `DesiredState` (decrypting SOPS files); read errors are logged once per
commit, and nothing is pruned for them.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import replace

from gitfleet.agent.clusterbranch import ClusterBranch
from gitfleet.agent.engine import Engine
from gitfleet.agent.outage import Outages
from gitfleet.agent.records import RecordError
from gitfleet.agent.round import FOREVER, Round, StepOutcome, Unread
from gitfleet.agent.settings import AgentSettings
from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.backoff import Retry
from gitfleet.errors import GitfleetError, TransientError
from gitfleet.kube.errors import ApiError, Unreachable
from gitfleet.logs import log
from gitfleet.state.git import Git, GitError, RemoteObjectMissing
from gitfleet.wire.status import ClusterStatus

LOG = logging.getLogger("gitfleet.agent")


class Verifier:
    def __init__(self, settings: AgentSettings, *, git: Git, branch: ClusterBranch,
                 status_branch: StatusBranch, engine: Engine, outages: Outages,
                 rng: random.Random,
                 previous: Callable[[float], ClusterStatus | None]) -> None:
        self.settings, self.git, self.branch = settings, git, branch
        self.status_branch, self.engine = status_branch, engine
        self.outages, self.rng, self._previous = outages, rng, previous
        self.retry = Retry(settings.git_backoff)   # a by-id fetch that failed
        self._sought: set[str] = set()   # applied cluster commits fetched by id (or gone)
        self._newest: tuple[tuple[str, ...], str] = ((), "")   # records -> the newest
        self._unknown = ""   # why the last by-id fetch of an applied commit failed
        self._logged_errors = ""   # the cluster commit whose read errors were logged

    def verify(self, round_: Round) -> Round:
        now, out, commit = round_.now, round_.out, round_.commit
        if round_.answered:
            self.retry.short_circuit()   # the remote answers: fetch a missing applied commit now
        verdict = None
        unjudged = ""
        unread: Unread | None = None
        if commit and self.branch.trusted is not None:
            previous = self._previous(now)
            kept, unread = self._kept_in_cluster()
            applied = self._newest_applied(previous.sync.cluster_commit if previous else "",
                                           kept, now=now, out=out)
            if applied is None:
                unjudged = self._unknown
            else:
                verdict = self.branch.verdict(commit, applied=applied)
        refused = verdict is not None and not verdict.ok
        desired = self.branch.read(commit) if commit and not refused and not unjudged else None
        return replace(round_, verdict=verdict, unjudged=unjudged, unread=unread,
                       desired=desired)

    def wake_in(self, now: float) -> float:
        """Seconds until a failed by-id fetch of the applied commit is tried again."""
        return self.retry.wait(now) if self.retry.failures else FOREVER

    def log_read_errors(self, round_: Round) -> None:
        """One warning per cluster commit read with errors."""
        desired = round_.desired
        if desired is None:
            return
        if desired.errors and desired.cluster_commit != self._logged_errors:
            log(LOG, logging.WARNING, "cluster branch read with errors; nothing pruned "
                "for them", cluster=self.settings.cluster, errors="; ".join(desired.errors))
        self._logged_errors = desired.cluster_commit

    def _kept_in_cluster(self) -> tuple[tuple[str, ...], Unread | None]:
        """The cluster commits the agent's own record in the cluster says were applied (or
        are being applied): kept where push access to Git cannot reach, so a status branch
        removed or replaced leaves them (gitfleet.agent.inventory). Unreadable: the error,
        and this step applies nothing (the sync stops as when the API is away)."""
        try:
            return self.engine.inventory.commits, None
        except (Unreachable, ApiError, RecordError) as exc:
            return (), exc

    def _newest_applied(self, applied: str, kept: tuple[str, ...], *, now: float,
                        out: StepOutcome) -> str | None:
        """The applied cluster commit a fetched one is judged against: the one the agent's
        record in the cluster keeps (`kept`), or a newer one (its descendant) that the status
        says or another place the status lived in recorded (the link a move left in the fleet
        repo, when the place it names cannot be read now). The cluster's record comes first:
        a status record unrelated to it (written by someone else) never displaces it.

        None while one of them is missing here and could not be fetched yet (the remote failed):
        without it an older commit cannot be told from a newer one, so nothing is judged."""
        records = tuple(dict.fromkeys(
            r for r in (*kept, applied, *self.status_branch.records) if r))
        if len(records) < 2:
            if records and not self._know_applied(records[0], now, out):
                return None
            return records[0] if records else ""
        if self._newest[0] != records:
            best = records[0]
            for record in records:
                if not self._know_applied(record, now, out):
                    return None
                if record != best and self.git.is_ancestor(best, record):
                    best = record
            self._newest = (records, best)
        return self._newest[1]

    def _know_applied(self, applied: str, now: float, out: StepOutcome) -> bool:
        """Fetch the applied cluster commit by id when this repository lacks it (a restarted
        agent with a new workdir, after the branch was pushed back), where the branch lives
        (a state repository: docs/state-shards.md): without it, an older
        commit cannot be told from an unrelated one. Gone from there (Git says "not
        our ref" over protocol v2): judged as before (logged), never a refusal of every commit
        on a status record's word. Any other failure (the remote away, a 503, any answer over
        protocol v0) is retried with the Git backoff, and False until it is known: the caller
        judges nothing meanwhile."""
        if applied in self._sought or self.git.read_objects([applied]).get(applied) is not None:
            return True
        if not self.retry.ready(now):
            return False
        try:
            self.git.fetch_object(self.branch.url, applied)   # where the branch lives
        except GitfleetError as exc:
            if not _gone(exc):
                wait = self.retry.failed(now, self.rng)
                self._unknown = (
                    f"the applied cluster commit {applied[:12]} is not in this agent's "
                    "repository and fetching it failed (retried with backoff); the last applied "
                    f"state is held until it is known{_v0_hint(exc)}")
                log(LOG, logging.WARNING, "cannot fetch the applied cluster commit; nothing is "
                    "judged until it is known", cluster=self.settings.cluster,
                    applied=applied[:12], retry_in=f"{wait:.1f}s", error=str(exc))
                out.errors.append(f"fetch {applied[:12]}: {exc}")
                if isinstance(exc, TransientError):
                    self.outages.failed(now, exc, out)
                return False
            log(LOG, logging.WARNING, "applied cluster commit not found in the fleet repo; "
                "older commits cannot be told apart", cluster=self.settings.cluster,
                applied=applied[:12], error=str(exc))
        self.retry.succeeded()
        if len(self._sought) > 16:
            self._sought.clear()
        self._sought.add(applied)   # once per applied commit, not at every step
        return True


def _gone(exc: GitfleetError) -> bool:
    """Whether a by-id fetch failed because the fleet repo does not have that commit (a
    definite answer: "not our ref" over protocol v2), not because the remote could not be
    asked. Over protocol v0 neither "not our ref" (a server that allows reachable or tip ids)
    nor "unadvertised object" is one: both also answer for the applied commit the repository
    still holds right after someone pushed the branch back to an older commit."""
    return isinstance(exc, RemoteObjectMissing)


def _v0_hint(exc: GitfleetError) -> str:
    """What to change when the fleet repo's server speaks only protocol v0 (its refusal of a
    fetch by id proves nothing, so the agent holds until a person acts)."""
    if isinstance(exc, GitError) and any(
            words in exc.stderr.lower() for words in ("unadvertised object", "not our ref")):
        return ("; the fleet repo's Git server answered over protocol v0, where a refused "
                "fetch by id cannot tell a missing commit from a hidden one: serve protocol v2 "
                "(git http-backend: pass the Git-Protocol header as GIT_PROTOCOL)")
    return ""
