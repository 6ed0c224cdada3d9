"""The clusters' reported capacity as the render's base status input (dynamic division).

A planner like the others: its digest is always part of the state's Status-Input trailer, so a
change of any cluster's reported room renders again.
"""

from __future__ import annotations

import hashlib

from gitfleet.hub.round import Contribution, RoundInputs
from gitfleet.render.status import reported_capacity


class Capacity:
    """Each cluster's allocatable and requested resources, and the free room of its nodes,
    from its heartbeat."""

    def plan(self, inputs: RoundInputs) -> Contribution:
        capacity = reported_capacity(inputs.status.statuses)   # as `render` and `diff` read it
        digest = hashlib.sha1(repr(sorted(
            (n, sorted(c.allocatable.items()), sorted(c.requested.items()),
             None if c.nodes is None else [(g.nodes, sorted(g.free.items())) for g in c.nodes])
            for n, c in capacity.items())).encode()).hexdigest()
        return Contribution(snapshot={"capacity": capacity}, digest=digest)
