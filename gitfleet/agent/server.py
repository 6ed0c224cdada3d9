"""The agent's probes and metrics: `gitfleet agent --listen HOST:PORT`.

- `/healthz`: the process is alive and its loop is not stuck — a step has not run longer than
  the bound, and one started within the bound after the last ended.
- `/readyz`: the agent has synced once, and its last sync is not older than the bound.
- `/metrics` (Prometheus text, prometheus_client, a registry of its own): sync duration
  histogram, objects of the last sync by result, drift count, age of the last applied state,
  Git and Kubernetes failures.

`Probe` is what the agent's loop feeds (one call before and one after each step); the
`ObservedAgent` subclass does exactly that, so the agent itself needs no change. The server is
a Starlette app on uvicorn on one daemon thread (gitfleet.httpthread); `stop()` shuts it down.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from gitfleet.agent.agent import Agent
from gitfleet.agent.round import StepOutcome
from gitfleet.errors import InputError
from gitfleet.hostnames import rebinding_refusal
from gitfleet.httpthread import HTTPThread

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SYNC_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, float("inf"))
# The prefixes the agent gives its step errors, by the side that failed.
_GIT_ERRORS = ("fetch:", "status:", "registration:")
_KUBE_ERRORS = ("sync:", "heartbeat:")
RESULTS = ("created", "configured", "unchanged", "deleted", "failed", "skipped")


def listen_address(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`0.0.0.0:8080`, `127.0.0.1:0`, `[::1]:8080`, `:8080`) -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise InputError(f"--listen {text!r}: expected HOST:PORT, e.g. 0.0.0.0:8080")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


class Probe:
    """The agent's health, readiness and metrics, fed by its loop; thread-safe."""

    def __init__(self, *, interval: float, now: Callable[[], float] = time.time,
                 stuck_after: float | None = None, ready_within: float | None = None) -> None:
        self.now = now
        # A step waits at most `interval` for the next; a sync that follows a long rollout or a
        # slow API is allowed a generous multiple before the loop counts as stuck.
        self.stuck_after = stuck_after if stuck_after is not None else max(10 * interval, 120.0)
        self.ready_within = ready_within if ready_within is not None else \
            max(3 * interval, 60.0)
        self._lock = threading.Lock()
        self._started_at = now()
        self._step_started: float | None = None
        self._step_ended: float | None = None
        self._last_sync: float | None = None
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.sync_seconds = Histogram("gitfleet_agent_sync_seconds",
                                      "Duration of agent steps that synced the cluster.",
                                      buckets=SYNC_BUCKETS, registry=r)
        self.objects = Gauge("gitfleet_agent_objects",
                             "Objects of the last sync by result (pruned ones as deleted).",
                             ["result"], registry=r)
        self.drift = Gauge("gitfleet_agent_drift_objects",
                           "Objects found drifted by the last sync.", registry=r)
        self.git_failures = Counter("gitfleet_agent_git_failures",
                                    "Steps where a Git fetch or push failed.", registry=r)
        self.kube_failures = Counter("gitfleet_agent_kube_failures",
                                     "Steps where the Kubernetes API failed.", registry=r)
        self.steps = Counter("gitfleet_agent_steps", "Agent loop steps run.", registry=r)
        Gauge("gitfleet_agent_last_sync_age_seconds",
              "Seconds since the last sync of the cluster (-1 before the first).",
              registry=r).set_function(self._last_sync_age)
        self.applied = Gauge("gitfleet_agent_applied_state_info",
                             "The cluster commit the last sync applied.", ["commit"], registry=r)
        for result in RESULTS:
            self.objects.labels(result).set(0)

    def _last_sync_age(self) -> float:
        with self._lock:
            return -1.0 if self._last_sync is None else max(0.0, self.now() - self._last_sync)

    # -- fed by the loop -------------------------------------------------------------------

    def step_started(self) -> None:
        with self._lock:
            self._step_started = self.now()

    def step_ended(self, outcome: StepOutcome | None, seconds: float) -> None:
        """After a step (None: it raised)."""
        now = self.now()
        with self._lock:
            self._step_started = None
            self._step_ended = now
            if outcome is not None and outcome.synced:
                self._last_sync = now
        self.steps.inc()
        if outcome is None:
            return
        errors = outcome.errors
        if any(e.startswith(_GIT_ERRORS) for e in errors):
            self.git_failures.inc()
        if any(e.startswith(_KUBE_ERRORS) for e in errors):
            self.kube_failures.inc()
        report = outcome.report
        if not outcome.synced or report is None:
            return
        self.sync_seconds.observe(seconds)
        counts = dict.fromkeys(RESULTS, 0)
        for result in (*report.objects.values(), *report.pruned):
            key = str(result.change)
            counts[key] = counts.get(key, 0) + 1
        for key, count in counts.items():
            self.objects.labels(key).set(count)
        self.drift.set(len(report.drift))
        if outcome.commit:
            self.applied.clear()
            self.applied.labels(outcome.commit).set(1)

    # -- answered to the kubelet and Prometheus --------------------------------------------

    def healthy(self) -> tuple[bool, str]:
        now = self.now()
        with self._lock:
            if self._step_started is not None and now - self._step_started > self.stuck_after:
                return False, f"a step has run for {now - self._step_started:.0f}s"
            last = self._step_ended if self._step_ended is not None else self._started_at
            if self._step_started is None and now - last > self.stuck_after:
                return False, f"no step for {now - last:.0f}s"
        return True, "ok"

    def ready(self) -> tuple[bool, str]:
        now = self.now()
        with self._lock:
            if self._last_sync is None:
                return False, "not synced yet"
            if now - self._last_sync > self.ready_within:
                return False, f"last sync {now - self._last_sync:.0f}s ago"
        return True, "ok"

    def text(self) -> bytes:
        return generate_latest(self.registry)


class ObservedAgent(Agent):
    """An Agent whose every step feeds a Probe."""

    def __init__(self, *args: Any, probe: Probe, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.probe = probe

    def step(self) -> float:
        self.probe.step_started()
        started = time.perf_counter()
        outcome: StepOutcome | None = None
        try:
            delay = super().step()
            outcome = self.last
            return delay
        finally:
            self.probe.step_ended(outcome, time.perf_counter() - started)


class AgentServer(HTTPThread):
    """`/healthz`, `/readyz` and `/metrics` on one daemon thread."""

    def __init__(self, host: str, port: int, probe: Probe) -> None:
        self.probe = probe
        super().__init__(host, port, _app(probe, host), name="gitfleet-agent-http")


def _app(probe: Probe, listen_host: str) -> Starlette:
    async def health(request: Request) -> Response:
        ok, why = probe.ready() if request.url.path == "/readyz" else probe.healthy()
        return PlainTextResponse(f"{why}\n", 200 if ok else 503)

    async def metrics(request: Request) -> Response:
        why = rebinding_refusal(request.headers.getlist("host"), listen_host=listen_host)
        if why:
            return PlainTextResponse(f"{why}\n", 403)
        return Response(probe.text(), media_type=CONTENT_TYPE)

    async def not_found(request: Request, exc: Exception) -> Response:
        return PlainTextResponse("not found\n", 404)

    return Starlette(routes=[Route(p, health, methods=["GET"])
                             for p in ("/healthz", "/livez", "/readyz")] +
                     [Route("/metrics", metrics, methods=["GET"])],
                     exception_handlers={404: not_found})
