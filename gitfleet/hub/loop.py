"""The hub daemon: `Hub.step()` in a loop, woken by its triggers, stopped by SIGTERM.

Triggers: for a local repository, file-system events on its refs (debounced); for a remote,
the fetch interval (with backoff and jitter after a failure, which `step()` computes); for
both, the webhook endpoint when `listen` is set. A round always finishes before the loop stops.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import parse_listen
from gitfleet.hub.tipserver import tip_slots, tips_app
from gitfleet.hub.triggers import RefWatcher, Wakeup
from gitfleet.hub.webhook import HubServer
from gitfleet.layout import Branches
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.hub")


class HubDaemon:
    """Runs a `Hub` until `stop()` (or SIGTERM/SIGINT when `install_signals`)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.wake = Wakeup()
        self.stopping = threading.Event()
        self.server: HubServer | None = None
        self.watcher: RefWatcher | None = None
        self._branches = Branches()
        self._failing_since: float | None = None   # when the rounds started failing, if they are

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set("stop")

    def install_signals(self) -> None:
        def handler(signum: int, frame: FrameType | None) -> None:
            log(LOG, logging.INFO, "stopping", signal=signal.Signals(signum).name)
            self.stop()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def _start_triggers(self) -> None:
        settings = self.hub.settings
        store = self.hub.store
        if store.remote is None:
            git_dir = Path(store.git.run("rev-parse", "--git-common-dir").decode().strip())
            if not git_dir.is_absolute():
                git_dir = store.git.path / git_dir
            self.watcher = RefWatcher(git_dir, self.wake, branches=lambda: self._branches)
            self.watcher.start()
        if settings.listen:
            host, port = parse_listen(settings.listen)
            self.server = HubServer(host, port, wake=self.wake, metrics=self.hub.metrics,
                                    secret=settings.webhook_secret, healthy=self._healthy,
                                    ready=self._ready, ignore_ref=self._own_ref,
                                    replay_window=settings.replay_window,
                                    max_connections=settings.http_connections,
                                    idle_timeout=settings.http_timeout,
                                    request_timeout=6 * settings.http_timeout,
                                    dashboard=self._dashboard(host), tips=self._tips(),
                                    allowed_hosts=settings.dashboard.allowed_hosts)
            self.server.start()
            log(LOG, logging.INFO, "listening", address="{}:{}".format(*self.server.address))

    def _dashboard(self, host: str) -> object:
        """The read-only dashboard at `/`, over the hub's own clone (gitfleet.dashboard). On an
        address beyond loopback it is served only behind a bearer token or a trusted proxy's
        header (gitfleet.dashboard.access, the rule `gitfleet dashboard` keeps too): the fleet's
        state is no public page by accident."""
        from gitfleet.dashboard.app import dashboard_app
        from gitfleet.dashboard.source import FleetSource

        access = self.hub.settings.dashboard
        refused = access.refusal(host)
        if refused:
            log(LOG, logging.WARNING, f"dashboard not served: {refused} (give "
                "--dashboard-token-file, or --dashboard-user-header with "
                "--dashboard-trusted-proxy)", address=host)
            return None
        source = FleetSource(self.hub.store.git, prefix=lambda: self._branches.prefix)
        return dashboard_app(source, access=access, listen=host)

    def _tips(self) -> object:
        """The tip documents at `/tips` (hub.tipserver), when the hub publishes them there."""
        publisher, settings = self.hub.tips, self.hub.settings
        if publisher is None or publisher.board is None:
            return None
        lifetime = 6 * settings.http_timeout          # a connection lives at most this
        return tips_app(publisher.board, max_wait=min(settings.tips_wait, lifetime / 2),
                        slots=tip_slots(settings.http_connections))

    def _own_ref(self, ref: str) -> bool:
        b = self._branches
        return ref in (b.state, b.fleet_status) or ref.startswith(b.cluster("")) or \
            ref.startswith(b.shard(""))

    def _healthy(self) -> bool:
        return self.hub.consecutive_failures < 5

    def _ready(self) -> bool:
        """Ready once a round has succeeded, and while rounds have not failed for too long."""
        if not self.hub.metrics.last_success_time:
            return False
        since = self._failing_since
        return since is None or self.hub.clock.now() - since < self.hub.settings.unready_after

    def run(self) -> int:
        """Loop until stopped; returns the exit code (0)."""
        self._start_triggers()
        shards = self.hub.shards
        if shards is not None:     # its Leases renewed in a thread; a new member list wakes us
            shards.on_change = lambda: self.wake.set("shards")
            shards.start()
        log(LOG, logging.INFO, "hub started", repo=self.hub.store.remote
            or str(self.hub.store.git.path), branch=self.hub.source_branch(),
            interval=self.hub.interval())
        try:
            delay = 0.0
            while not self.stopping.is_set():
                reasons = self.wake.wait(delay)
                if self.stopping.is_set():
                    break
                if reasons:
                    self.hub.retry.short_circuit()   # a trigger says: the remote may be back
                    reasons += self.wake.settle(self.hub.settings.debounce,
                                                longest=10 * self.hub.settings.debounce)
                for reason in set(reasons) - {"stop"}:
                    self.hub.metrics.triggered(reason)
                if not reasons:
                    self.hub.metrics.triggered("interval")
                delay = self._step()
        finally:
            if shards is not None:
                shards.stop()
            if self.watcher is not None:
                self.watcher.stop()
            if self.server is not None:
                self.server.stop()
            log(LOG, logging.INFO, "hub stopped")
        return 0

    def _step(self) -> float:
        try:
            delay = self.hub.step(pace=True)
        except Exception as exc:  # a bug must not kill the daemon: log it and back off
            delay = self.hub.failed()
            LOG.exception("step crashed", extra={"fields": {"error": repr(exc),
                                                             "retry_in": round(delay, 2)}})
        if self.hub.branches is not None:
            self._branches = self.hub.branches
        if not self.hub.consecutive_failures:
            self._failing_since = None
        elif self._failing_since is None:
            self._failing_since = self.hub.clock.now()
        return delay
