"""The clusters' reported capacity (dynamic division) and capabilities (Kubernetes version and
API versions, for `helm template`) as the render's base status input.

A planner like the others: its digest is always part of the state's Status-Input trailer, so a
change of any cluster's reported room renders again.
"""

from __future__ import annotations

import hashlib

from gitfleet.charts.capabilities import reported_capabilities
from gitfleet.hub.round import Contribution, RoundInputs
from gitfleet.render.status import ClusterCapacity


class Capacity:
    """Each cluster's allocatable and requested resources and capabilities, from its
    heartbeat."""

    def plan(self, inputs: RoundInputs) -> Contribution:
        capacity = {}
        for name, status in sorted(inputs.status.statuses.items()):
            hb = status.heartbeat
            if hb is not None and hb.allocatable:
                capacity[name] = ClusterCapacity(allocatable=dict(hb.allocatable),
                                                 requested=dict(hb.requested))
        digest = hashlib.sha1(repr(sorted(
            (n, sorted(c.allocatable.items()), sorted(c.requested.items()))
            for n, c in capacity.items())).encode()).hexdigest()
        capabilities = reported_capabilities(inputs.status.statuses)   # HelmCharts render with
        if capabilities:
            digest += "+" + hashlib.sha1(repr(sorted(capabilities.items())).encode()).hexdigest()
        return Contribution(snapshot={"capacity": capacity, "capabilities": capabilities},
                            digest=digest)
