"""HelmChart feeds in the hub's round: the chart renderer the render takes (reading chart
folders at the source commit), and the chart versions resolved at their interval, a digest of
which is part of the status input (a newly published matching version renders again).
"""

from __future__ import annotations

from gitfleet.charts import folders
from gitfleet.charts.renderer import Charts
from gitfleet.hub.round import Contribution, RoundInputs
from gitfleet.state.git import Git


class HelmCharts:
    """A planner over `gitfleet.charts.Charts`."""

    def __init__(self, charts: Charts, git: Git) -> None:
        self.charts, self.git = charts, git

    def plan(self, inputs: RoundInputs) -> Contribution:
        read = folders.revision(self.git, inputs.source)
        digest, news = "", list[str]()
        if any(t.is_helm_chart for t in inputs.fleet.templates.values()):
            key, news = self.charts.refresh(inputs.fleet, read)
            digest = f"charts:{key}"
        return Contribution(digest=digest, note="\n".join(news),
                            render_inputs={"charts": self.charts.at(read)})
