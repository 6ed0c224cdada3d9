"""How often agents fetch Git whatever their tip document says: chosen by the hub from the
fleet's size and a stated budget.

Why: with tip documents an idle agent fetches its cluster branch only for its safety fetch, so
the fleet repository takes N / T of them a second, plus one fetch per changed branch (N c).
At the agents' own default (T = 600 s) that is 19 fetches/s at 10,000 clusters but 194 at
100,000, over the 50 requests/s a repository is budgeted (issue 24, docs/git-budget.md). The
hub knows N, so it picks the shortest T of a fixed ladder with N / T + N c <= budget and says
it in every tip document (`safetySeconds`, gitfleet.wire.tips); agents take it unless their
operator overrides it (gitfleet.agent.tips). This is the default (`hub --tips-safety auto`),
but it waits until every agent's heartbeat reports a release that reads `safetySeconds`
(gitfleet.wire.tips.ANNOUNCED_SINCE): an older agent would refuse such a document and poll Git
every interval. Until then the documents leave the field out, as before.

T is also the longest a stuck tip server can hide a change, so the hub asks for no more than
the budget needs and never more than SAFETY_CEILING. A fleet that would need more than that is
told once, in the log: its cluster branches need more than one repository.
"""

from __future__ import annotations

import argparse
import logging
import math

from gitfleet.durations import duration_arg
from gitfleet.logs import log
from gitfleet.wire.tips import ANNOUNCED_SINCE, SAFETY_CEILING, SAFETY_FLOOR

LOG = logging.getLogger("gitfleet.hub.tips")
CHANGES = 1 / 3600     # c: the budget's assumption, one change per cluster an hour
BUDGET = 45.0          # fetches/s on the fleet repository: issue 24's 50 requests/s, less the
#                        <= 5 pushes/s the automatic heartbeat puts on it when status lives there
LADDER = (600, 900, 1200, 1800, 2400, 3600, 5400, 7200, 10800, 14400, 21600)
PUSHES = 10.0          # pushes/s a repository is budgeted (issue 24)
HEADROOM = 1.1         # a step down waits until it would hold for 10 % more clusters
assert LADDER[0] == SAFETY_FLOOR and LADDER[-1] == SAFETY_CEILING


def needed(clusters: float, budget: float = BUDGET, changes: float = CHANGES) -> float:
    """The shortest safety interval (s) with clusters / T + clusters x changes <= budget
    (infinite when the changes alone use the budget)."""
    room = budget - clusters * changes
    return math.inf if room <= 0 else clusters / room


def step_for(clusters: float, budget: float = BUDGET) -> int:
    """The ladder's shortest step that holds the budget (the ceiling when none does)."""
    need = needed(clusters, budget)
    return next((t for t in LADDER if t >= need), LADDER[-1])


class SafetyChoice:
    """The safety interval for the documents of a fleet of N clusters: `fixed` (the hub's
    `--tips-safety DURATION`), or, with `fixed=None` (`--tips-safety auto`, the default),
    chosen from the ladder with `budget` fetches/s. Auto steps up at once and down only with
    headroom, so a fleet at a boundary does not re-sign every document back and forth.

    Auto waits while `older` clusters (their heartbeats report a release before
    ANNOUNCED_SINCE, an unplaceable one, or none yet) remain: an agent older than
    `safetySeconds` refuses a document that carries it and polls Git every interval, and hubs
    are upgraded before their agents. Meanwhile the agents' own interval applies (the field is
    left out); both the wait and its end are said once in the log, and a fixed interval the
    fleet outgrows is said once too."""

    def __init__(self, *, fixed: float | None = None, budget: float = BUDGET) -> None:
        self.fixed = None if fixed is None else int(min(max(fixed, SAFETY_FLOOR),
                                                        SAFETY_CEILING))
        self.budget = budget
        self.current: int | None = None
        self.waiting: bool | None = None      # auto held back by older agents (None: not yet)
        self._warned = False
        self._pushes_said = False

    def for_fleet(self, clusters: int, *, older: int = 0) -> int:
        if self.fixed is not None:
            if needed(clusters, self.budget) > self.fixed and not self._warned:
                log(LOG, logging.WARNING, "the agents' safety fetches take the fleet repository "
                    "over its budget; the default, --tips-safety auto, chooses the interval "
                    "from the fleet's size (docs/tips.md)", clusters=clusters,
                    fetches_per_second=round(clusters / self.fixed + clusters * CHANGES, 1),
                    budget=self.budget, safety=f"{self.fixed}s")
                self._warned = True
            return self.fixed
        if older:
            if self.waiting is not True:
                over = needed(clusters, self.budget) > SAFETY_FLOOR
                log(LOG, logging.WARNING if over else logging.INFO,
                    "safety fetch left at the agents' default until every agent reads "
                    "safetySeconds", agents_before=f"{older} report a release before "
                    f"{ANNOUNCED_SINCE} (or none)", clusters=clusters, safety=f"{SAFETY_FLOOR}s",
                    fetches_per_second=round(clusters / SAFETY_FLOOR + clusters * CHANGES, 1),
                    budget=self.budget)
            self.waiting, self.current = True, None
            return SAFETY_FLOOR
        if self.waiting:
            log(LOG, logging.INFO, "every agent reads safetySeconds: the safety fetch interval "
                "is now chosen from the fleet's size", clusters=clusters, since=ANNOUNCED_SINCE)
        self.waiting = False
        step = step_for(clusters, self.budget)
        if self.current is not None and step < self.current:
            step = min(self.current, step_for(clusters * HEADROOM, self.budget))
        if needed(clusters, self.budget) > SAFETY_CEILING and not self._warned:
            log(LOG, logging.WARNING, "the fleet repository cannot hold this fleet's safety "
                "fetches within the budget even at the longest safety interval: spread the "
                "cluster branches over more repositories or raise --tips-fetch-budget",
                clusters=clusters, budget=self.budget, safety=f"{SAFETY_CEILING}s")
            self._warned = True
        self.current = step
        return step

    def check_status_pushes(self, clusters: int, *, heartbeat: float, own_repos: bool) -> None:
        """Say once when the status pushes alone take the fleet repository over its budget:
        with status in the fleet repository (no `status.repositories`), every heartbeat and the
        status push each change causes land there, N (1/H + c) a second, which no safety
        interval can offset (docs/git-budget.md, "The defaults")."""
        pushes = clusters * (1 / heartbeat + CHANGES) if heartbeat > 0 else 0.0
        if own_repos or pushes <= PUSHES or self._pushes_said:
            return
        log(LOG, logging.WARNING, "status pushes take the fleet repository over its budget: "
            "spread the status branches over fleet.yaml status.repositories "
            "(docs/status-shards.md)", clusters=clusters,
            pushes_per_second=round(pushes, 1), budget=PUSHES,
            heartbeat=f"{heartbeat:g}s")
        self._pushes_said = True

    def written(self, clusters: int, *, older: int = 0) -> int:
        """`safetySeconds` for the documents: 0 (left out) at the agents' own default, so a
        fleet that does not need more keeps documents older agents read."""
        safety = self.for_fleet(clusters, older=older)
        return safety if safety > SAFETY_FLOOR else 0


def safety_arg(text: str) -> float | None:
    """`hub --tips-safety`: `auto` (None: from the fleet's size) or a duration from
    SAFETY_FLOOR to SAFETY_CEILING."""
    if text == "auto":
        return None
    seconds = duration_arg(text)
    if not SAFETY_FLOOR <= seconds <= SAFETY_CEILING:
        raise argparse.ArgumentTypeError(
            f"must be auto or from {SAFETY_FLOOR // 60}m to {SAFETY_CEILING // 3600}h, "
            f"got {text}")
    return seconds
