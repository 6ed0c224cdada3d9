"""HelmChart feeds in the hub's round: the chart renderer the render takes (reading chart
folders at the source commit), and, for a fleet with HelmCharts, the chart versions resolved at
their interval and each cluster's capabilities, a digest of which is part of the status input
(a newly published matching version, or a cluster's new API versions, renders again).
"""

from __future__ import annotations

from gitfleet.charts import folders
from gitfleet.charts.capabilities import capabilities_digest, reported_capabilities
from gitfleet.charts.renderer import Charts
from gitfleet.hub.round import Contribution, RoundInputs
from gitfleet.state.git import Git


class HelmCharts:
    """A planner over `gitfleet.charts.Charts`."""

    def __init__(self, charts: Charts, git: Git) -> None:
        self.charts, self.git = charts, git

    def plan(self, inputs: RoundInputs) -> Contribution:
        read = folders.revision(self.git, inputs.source)
        if not any(t.is_helm_chart for t in inputs.fleet.templates.values()):
            return Contribution(render_inputs={"charts": self.charts.at(read)})
        key, news = self.charts.refresh(inputs.fleet, read)
        # each cluster's capabilities (heartbeat): what its charts render with
        caps = reported_capabilities(inputs.status.statuses)
        return Contribution(snapshot={"capabilities": caps},
                            digest=f"charts:{key}:{capabilities_digest(caps)}",
                            note="\n".join(news), render_inputs={"charts": self.charts.at(read)})
