"""The hub's own settings: intervals, retry limits, where it caches and listens.

Defaults suit a fleet of thousands of clusters; every one can be set on the command line.
What belongs to the fleet repo (branch prefix, source branch) lives in its `fleet.yaml`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from gitfleet.backoff import Backoff
from gitfleet.dashboard.access import Access
from gitfleet.model.loader import Fleet
from gitfleet.state.signing import SigningKey, TrustedKeys

DEFAULT_INTERVAL = 15.0


@dataclass(frozen=True)
class HubSettings:
    source_branch: str | None = None   # None: fleet.yaml's sourceBranch (default main)
    interval: float | None = None      # fetch interval (remote) / re-check (local); None:
                                       # fleet.yaml intervals.fetch, else DEFAULT_INTERVAL
    debounce: float = 0.05             # quiet time after a trigger before rendering
    conflict_retries: int = 8          # lost ref races retried within one step
    backoff_base: float = 0.2          # first retry delay after a fault, doubled each time
    backoff_max: float = 10.0          # longest wait after failures (a remote back is seen
                                       # within this; a webhook or ref event cuts it short)
    jitter: float = 0.25               # +/- share of random spread on every retry delay
    cache_dir: Path | None = None      # remote repos' mirrors (default ~/.cache/gitfleet/hub)
    listen: str | None = None          # "127.0.0.1:8080": webhooks, /healthz, /metrics
    webhook_secret: str | None = None  # HMAC secret (GitHub, Gitea) or token (GitLab); without
                                       # one /hooks/git is off (404)
    replay_window: float = 3600.0      # a webhook delivery id seen again within this is refused
    http_timeout: float = 10.0         # longest wait for a read from an HTTP client; a whole
                                       # connection lives at most 6 times this
    http_connections: int = 64         # HTTP connections served at once; beyond: 503 at once
    unready_after: float = 300.0       # /readyz fails once rounds have failed this long
    dashboard: Access = Access()       # the dashboard's token, proxy header, Host names
    fleet_status: bool = True          # fold status branches into <prefix>/fleet-status
    fold_delay_max: float = 5.0        # longest that pushes in a row may delay status folding
    fold_quiet: float = 0.2            # quiet time after a render before statuses are folded
    basis_fleets_kept: int = 32        # fleets of ApplyLater bases kept (~3 MB per 1,000 clusters)
    signing_key: SigningKey | None = None   # signs every commit the hub writes; None: unsigned
    source_keys: TrustedKeys | None = None  # render only source commits signed by one of these
                                            # (or by signing_key: the hub's own approvals)
    tips: bool = False                 # serve tip documents at /tips/ of `listen` (hub.tips)
    tips_dir: Path | None = None       # ... and/or write them into this folder
    tips_wait: float = 25.0            # longest a tip request is held (long-poll)
    tips_safety: float | None = None   # agents' safety fetch interval; None (auto): from the
    tips_fetch_budget: float = 45.0    # ... fleet's size and this many fetches/s, once every
    #                                    agent reads it (hub.tipsafety)
    stale_after: float = 10.0          # lock/temporary files of a dead Git process older than
                                       # this are removed (on start and after a failed round)

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before retry number `attempt` (0-based): exponential, capped, jittered."""
        return self.retry_backoff().delay(attempt + 1, rng)

    def retry_backoff(self) -> Backoff:
        return Backoff(self.backoff_base, self.backoff_max, self.jitter)


def interval_of(settings: HubSettings, fleet: Fleet | None) -> float:
    """Seconds between rounds: the setting, else fleet.yaml's `intervals.fetch`."""
    if settings.interval is not None:
        return settings.interval
    return fleet.settings.interval("fetch", DEFAULT_INTERVAL) if fleet else DEFAULT_INTERVAL


def parse_listen(text: str) -> tuple[str, int]:
    """`127.0.0.1:8080` or `:8080` -> (host, port); the host defaults to loopback."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, got {text!r}")
    return (host.strip("[]") or "127.0.0.1"), int(port)
