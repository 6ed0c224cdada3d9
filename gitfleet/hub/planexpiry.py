"""The TTL of plans, as the hub enforces it: after a round, every plan request and answer whose
id says it expired (`gitfleet.wire.plans.expiry_of`) is removed in one publish, and the hub
asks to run again when the next one expires. Refs under the plan prefixes that are no plan id
are not gitfleet's and stay (docs/plans.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gitfleet.clock import Clock
from gitfleet.hub.round import FOREVER, RoundDone
from gitfleet.logs import log
from gitfleet.state.git import Git, RefUpdate
from gitfleet.wire.plans import expiry_of

LOG = logging.getLogger("gitfleet.hub")


@dataclass
class PlanExpiry:
    """Removes expired plans from the fleet repo (the hub's mirror of it, then the remote)."""

    git: Git
    clock: Clock
    publish: Callable[[Sequence[RefUpdate]], None]

    def react(self, done: RoundDone) -> float:
        branches = done.inputs.branches
        now = self.clock.now()
        gone: list[RefUpdate] = []
        wake = FOREVER
        for head in (branches.plans(), branches.plan_answers()):
            for ref, sha in sorted(self.git.refs(head).items()):
                cluster, _, plan = ref[len(head):].partition("/")
                when = expiry_of(plan) if cluster and plan and "/" not in plan else None
                if when is None:
                    continue
                if when <= now:
                    gone.append(RefUpdate(ref, None, sha))
                else:
                    wake = min(wake, when - now)
        if gone:
            self.publish(gone)
            log(LOG, logging.INFO, "expired plans removed", refs=len(gone))
        return wake
