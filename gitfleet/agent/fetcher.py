"""The fetch part of the agent's round: the cluster branch (only that ref), with backoff.

A fetch that fails leaves the last fetched commit in place (the round syncs from it) and
backs off with jitter. A round woken only for a heartbeat or a metrics report does not poll:
the branch is polled at its own pace (`poll_at`), so jittered heartbeats cost no fetches. The
hub's push worker passes a `branch_hint` (the hub wrote the branch), so an unchanged branch
costs no fetch at all. While the branch does not exist, the `Registrar` asks to register.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import replace

from gitfleet.agent.clusterbranch import ClusterBranch
from gitfleet.agent.outage import Outages
from gitfleet.agent.registrar import Registrar
from gitfleet.agent.round import Round
from gitfleet.agent.settings import AgentSettings
from gitfleet.errors import GitfleetError
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.agent")


class Fetcher:
    def __init__(self, settings: AgentSettings, branch: ClusterBranch, *,
                 registrar: Registrar, outages: Outages, rng: random.Random,
                 report_due: Callable[[float], bool],
                 branch_hint: Callable[[], str | None] | None = None) -> None:
        self.settings, self.branch = settings, branch
        self.registrar, self.outages, self.rng = registrar, outages, rng
        self._report_due = report_due
        self._hint = branch_hint
        self.failures = 0         # failed fetches in a row
        self.next_fetch = 0.0     # no fetch before this (backing off)
        self.poll_at = 0.0        # a round before this (woken for a heartbeat) does not poll

    def fetch(self, round_: Round) -> Round:
        polled, answered = self._fetch(round_)
        commit = self.branch.last_fetched
        round_.out.commit = commit
        return replace(round_, polled=polled, answered=answered, commit=commit)

    def wake_in(self, now: float) -> float:
        """Seconds until the next poll is due: the interval, or where a round woken for a
        heartbeat left it, sooner while a failed fetch is backed off from."""
        wake = self.poll_at - now if self.poll_at > now else self.settings.interval
        if self.failures:
            wake = min(wake, max(0.0, self.next_fetch - now))
        return wake

    def defer_poll(self, at: float) -> None:
        """The next round comes before the poll is due (for a heartbeat): poll at `at`."""
        self.poll_at = at

    def _fetch(self, round_: Round) -> tuple[bool, bool]:
        """Whether this round asked the remote, and whether it answered."""
        now, out = round_.now, round_.out
        if now < self.next_fetch:
            return False, False
        if self._hint is not None:
            hint = self._hint()
            if hint is not None and hint == self.branch.last_fetched:
                return False, False
        elif now < self.poll_at and self._report_due(now):
            return False, False   # woken for a heartbeat: the branch is polled at its own pace
        self.poll_at = 0.0
        try:
            result = self.branch.fetch()
        except GitfleetError as exc:
            self.failures += 1
            wait = self.settings.git_backoff.delay(self.failures, self.rng)
            self.next_fetch = now + wait
            out.errors.append(f"fetch: {exc}")
            self.outages.failed(now, exc, out)
            log(LOG, logging.WARNING, "cannot fetch cluster branch; using the last fetched",
                cluster=self.settings.cluster, retry_in=f"{wait:.1f}s", error=str(exc))
            return True, False
        self.outages.usable(now)
        self.failures = 0
        self.next_fetch = 0.0
        out.fetched = result.exists
        if not result.exists and self.branch.last_fetched is None and self.settings.register:
            self.registrar.register(now, out)
        return True, True
