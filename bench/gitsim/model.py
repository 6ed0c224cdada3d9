"""The Git budget as a function of the settings (docs/git-budget.md writes it out).

Per cluster, an agent asks Git for: a fetch every `fetch_period` (the agent's --interval
without tips; the tip poller's safety fetch with them) plus one per change when tips tell it
(without tips the periodic fetch finds the change); a status push every heartbeat interval
plus `pushes_per_change` per change. With K status repositories, each takes 1/K of the pushes
and holds 1/K of the status branches. Per request, the server's CPU and bytes are fitted as
`a + b x refs` (refs: the branches the served repository advertises to that request) from the
probes at 1k/3k/10k; the fit and the real-time runs are the validation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    clusters: int
    fetch_period: float            # s between an agent's periodic Git fetches
    heartbeat: float               # s between heartbeat pushes
    change_rate: float = 0.0       # changes per cluster per s (e.g. 1/3600)
    tips: bool = False             # a change is learnt from tip documents, fetched at once
    tip_poll: float = 0.0          # s between tip polls (0: long-poll)
    shards: int = 0                # status repositories (0: status in the fleet repository)
    narrow: bool = False           # a push sees only its own status branch advertised
    pushes_per_change: float = 1.0  # measured by bench.gitsim.schedule


@dataclass(frozen=True)
class Line:
    """`a + b x refs`, fitted by least squares."""

    a: float
    b: float

    def __call__(self, refs: float) -> float:
        return self.a + self.b * refs

    @staticmethod
    def fit(points: Sequence[tuple[float, float]]) -> Line:
        if len(points) == 1:
            return Line(points[0][1], 0.0)
        n = len(points)
        mx = sum(x for x, _ in points) / n
        my = sum(y for _, y in points) / n
        sxx = sum((x - mx) ** 2 for x, _ in points)
        b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
        b = max(b, 0.0)
        return Line(my - b * mx, b)


@dataclass(frozen=True)
class Costs:
    """Per request kind: server CPU seconds and bytes sent, each a Line of the ref count."""

    cpu: dict[str, Line]
    bytes_out: dict[str, Line]


@dataclass(frozen=True)
class Load:
    fetches: float         # per s, on the fleet repository
    pushes: float          # per s, on each status repository (the fleet repo when shards=0)
    fleet_repo_requests: float
    status_repo_requests: float
    bytes_out: float       # per s, whole fleet, every repository
    server_cpu: float      # CPU seconds per second, whole fleet
    tip_requests: float    # per s, to the tip store (not Git)
    p50: float             # change-to-fetch, s, before the fetch itself
    p99: float

    def row(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.__dict__.items()}


def offered(s: Settings, costs: Costs | None = None) -> Load:
    n = s.clusters
    repos = max(s.shards, 1)
    fetches = n / s.fetch_period + (n * s.change_rate if s.tips else 0.0)
    pushes_all = n * (1 / s.heartbeat + s.change_rate * s.pushes_per_change)
    pushes = pushes_all / repos
    status_refs = 1 if s.narrow else (n / repos if s.shards else 2 * n)
    fleet_refs = n if s.shards else 2 * n
    fleet_requests = fetches + (0.0 if s.shards else pushes)
    status_requests = pushes
    cpu = bytes_out = 0.0
    if costs is not None:
        change_fetches = n * s.change_rate
        noop = fetches - (change_fetches if s.tips else 0.0)
        cpu = (noop * costs.cpu["fetch-noop"](fleet_refs)
               + change_fetches * costs.cpu["fetch-change"](fleet_refs)
               + pushes_all * costs.cpu["push-heartbeat"](status_refs))
        bytes_out = (noop * costs.bytes_out["fetch-noop"](fleet_refs)
                     + change_fetches * costs.bytes_out["fetch-change"](fleet_refs)
                     + pushes_all * costs.bytes_out["push-heartbeat"](status_refs))
    if s.tips:
        tip_requests = n / (s.tip_poll if s.tip_poll > 0 else 25.0)
        p50, p99 = 0.5 * s.tip_poll, 0.99 * s.tip_poll
    else:
        tip_requests, p50, p99 = 0.0, 0.5 * s.fetch_period, 0.99 * s.fetch_period
    return Load(fetches, pushes, fleet_requests, status_requests, bytes_out, cpu,
                tip_requests, p50, p99)


def judged_lost_share(heartbeat: float, jitter: float, push_delay: float,
                      grace: int = 3) -> float:
    """Share of live clusters judged lost: a gap between beats over `grace` intervals. A
    beat is due every heartbeat x (1 +- jitter) and lands `push_delay` late; 0 while the
    server keeps up (push_delay bounded), 1 when pushes queue without bound."""
    if math.isinf(push_delay):
        return 1.0
    return 1.0 if heartbeat * (1 + jitter) + push_delay > grace * heartbeat else 0.0
