"""Times the Git remote could not be used, kept until the status branch has said so.

The fetch, a by-id fetch of the applied commit and the status push each find the remote away;
the agent meanwhile runs from the last verified commit and prunes nothing new for it. The
first status push that goes through carries the outage's lines (`Outages.lines`), once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from gitfleet.agent.round import StepOutcome
from gitfleet.clock import isoformat
from gitfleet.errors import GitfleetError
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.agent")


@dataclass
class RemoteOutage:
    """A time the Git remote could not be used: the agent ran from the last verified commit,
    pruned nothing new, and says so in the status branch once a status push goes through."""

    since: float
    error: str
    failures: int = 0
    ended: float | None = None
    reported: bool = False   # the ongoing outage is already in the status branch

    def lines(self, *, commit: str | None) -> list[str]:
        """The status commit's lines about this outage."""
        span = (f"from {isoformat(self.since)} to {isoformat(self.ended)}"
                if self.ended is not None else f"since {isoformat(self.since)}")
        ran = f"ran from the last verified cluster commit {commit[:12]}" if commit else \
            "nothing fetched yet: nothing applied"
        return [f"git remote unusable {span} ({self.failures} failed attempts): {self.error}",
                f"meanwhile: {ran}, nothing pruned for it"]


class Outages:
    """The outage in progress (or ended and not reported yet), shared by the parts that use
    the remote: the fetcher and verifier find it away or back, the reporter reports it."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.current: RemoteOutage | None = None

    def failed(self, now: float, exc: GitfleetError, out: StepOutcome) -> None:
        """Fetch or status push failed: a fault (exit 3 in --once), remembered for the status."""
        out.remote_fault = out.remote_fault or str(exc)
        if self.current is None or self.current.ended is not None:
            self.current = RemoteOutage(since=now, error=str(exc))
        self.current.failures += 1
        self.current.error = str(exc)

    def usable(self, now: float) -> None:
        """A fetch went through: the outage in progress (if any) ends now."""
        if self.current is not None and self.current.ended is None:
            self.current.ended = now
            log(LOG, logging.INFO, "git remote usable again", cluster=self.cluster,
                failed_attempts=self.current.failures)

    def reported(self, outage: RemoteOutage | None) -> None:
        """A status push went through that had `outage` (as it stood) in view."""
        if outage is not None and outage is self.current:
            outage.reported = True
            if outage.ended is not None:
                self.current = None
