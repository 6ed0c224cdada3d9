"""The heartbeat part of the agent's round: the heartbeat and the metrics report it carries.

A heartbeat is taken when the schedule says it is due (`beats`) or the cluster's readiness
moved, before the apply, so the round's one status commit carries both. A restarted agent
carries its last run's heartbeat on while it covers (`HeartbeatSchedule.resume`), unless the
hub's push worker wrote it. Metrics of autoscaled workloads are collected every
`collect_interval` (`metrics`). The hub's push worker, without `own_heartbeat`, takes none.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from dataclasses import replace

from gitfleet.agent.beats import HeartbeatSchedule
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.heartbeat import build_heartbeat
from gitfleet.agent.metrics import autoscaled_targets, collect
from gitfleet.agent.round import FOREVER, Round, StepOutcome
from gitfleet.agent.settings import AgentSettings
from gitfleet.clock import isoformat
from gitfleet.kube.client import KubeClient
from gitfleet.kube.errors import ApiError, Unreachable
from gitfleet.lifecycle.judgement import HEARTBEAT_GRACE
from gitfleet.model.heartbeats import MIN_INTERVAL, default_tolerance
from gitfleet.wire.heartbeat import HeartbeatTiming
from gitfleet.wire.status import HUB_WORKER_VERSION, ClusterStatus, Heartbeat

LOG = logging.getLogger("gitfleet.agent")

# what the hub's push worker writes as agentVersion, of any hub version (a Dual cluster)
HUB_WORKER_PREFIX = HUB_WORKER_VERSION.partition("/")[0] + "/"


class Heartbeats:
    def __init__(self, settings: AgentSettings, kube: KubeClient, *, rng: random.Random,
                 previous: Callable[[float], ClusterStatus | None]) -> None:
        self.settings, self.kube, self._previous = settings, kube, previous
        self.schedule = HeartbeatSchedule(rng)
        self.timing = self._own_timing() or HeartbeatTiming(
            MIN_INTERVAL, settings.heartbeat_jitter, default_tolerance(MIN_INTERVAL))
        self.heartbeat: Heartbeat | None = None   # the last taken (or carried on)
        self.next_collect = 0.0
        self.metrics: bytes | None = None  # metrics.yaml to write (None: keep the branch's)

    def follow(self, desired: DesiredState) -> None:
        """The cluster branch's timing (cluster.yaml `agent:`), unless the command line's."""
        self.timing = self._own_timing() or desired.heartbeat or self.timing

    def due(self, now: float) -> bool:
        """Whether this round is the one a heartbeat or a metrics report is due at."""
        return (self.settings.own_heartbeat and self.schedule.due(now)) or (
            bool(self.metrics) and now >= self.next_collect)

    def wake_in(self, now: float) -> float:
        """Seconds until the next heartbeat or metrics report is due."""
        wake = FOREVER
        if self.settings.own_heartbeat:
            wake = max(0.0, self.schedule.next - now)
        if self.metrics:
            wake = min(wake, max(0.0, self.next_collect - now))
        return wake

    def take(self, round_: Round) -> Round:
        now, out = round_.now, round_.out
        own = self.settings.own_heartbeat
        if self.heartbeat is None and own and not self.schedule.sent:
            # a restart carries the last run's heartbeat on while it covers (agent.beats)
            last = None if self.settings.push_worker else self._previous(now)
            carried = last.heartbeat if last else None
            if carried is not None and (carried.agent_version.startswith(HUB_WORKER_PREFIX) or
                                        carried.app_pusher != self.settings.app_pusher):
                carried = None  # not this agent's word (the hub's worker wrote it, Dual)
            self.heartbeat = self.schedule.resume(now, carried, self.timing)
        if own and (self.schedule.due(now) or self._readiness_moved()):
            self.heartbeat = self._collect(now, out)
            self.schedule.sent_at(now, self.timing)
        if round_.desired is not None and now >= self.next_collect:
            self.metrics = self._collect_metrics(round_.desired, now, out)
            self.next_collect = now + self.settings.collect_interval
        return replace(round_, heartbeat=self.heartbeat, metrics=self.metrics)

    def _readiness_moved(self) -> bool:
        """Whether the cluster's readiness is no longer what the last heartbeat said: then a
        heartbeat is taken at once (a change of health is pushed in the step that sees it,
        not at the next heartbeat)."""
        return self.heartbeat is not None and self.kube.ready() != self.heartbeat.ready

    def _own_timing(self) -> HeartbeatTiming | None:
        """The timing `--heartbeat-interval` sets over the fleet's: its cluster is judged by
        the old rule, HEARTBEAT_GRACE of its intervals."""
        interval = self.settings.heartbeat_interval
        if interval is None:
            return None
        return HeartbeatTiming(interval, self.settings.heartbeat_jitter,
                               HEARTBEAT_GRACE * interval)

    def _collect(self, now: float, out: StepOutcome) -> Heartbeat:
        heartbeat = self._facts_heartbeat(now, out)
        if self.settings.push_worker:   # said so, for people and for the hub's registry
            heartbeat = replace(heartbeat, agent_version=HUB_WORKER_VERSION)
        return heartbeat

    def _facts_heartbeat(self, now: float, out: StepOutcome) -> Heartbeat:
        interval = max(1, round(self.timing.interval))
        tolerance = math.ceil(self.timing.tolerance)
        try:
            facts = self.kube.facts()
        except (Unreachable, ApiError) as exc:
            out.errors.append(f"heartbeat: {exc}")
            base = self.heartbeat or Heartbeat(time="", interval_seconds=interval)
            return replace(base, time=isoformat(now), healthz=False, livez=False, readyz=False,
                           app_pusher=self.settings.app_pusher, interval_seconds=interval,
                           tolerance_seconds=tolerance)
        return build_heartbeat(time=isoformat(now), interval_seconds=interval,
                               tolerance_seconds=tolerance,
                               version=facts.version, healthz=facts.healthz, livez=facts.livez,
                               readyz=facts.readyz, nodes=facts.nodes, pods=facts.pods,
                               cluster_id=facts.cluster_id, app_pusher=self.settings.app_pusher,
                               api_versions=facts.api_versions)

    def _collect_metrics(self, desired: DesiredState, now: float,
                         out: StepOutcome) -> bytes | None:
        """metrics.yaml for the autoscaled workloads (b"": none, drop the file; None: the API
        did not answer, keep the last report, whose time then tells the hub it is stale)."""
        targets = autoscaled_targets(desired)
        if not targets:
            return b""
        try:
            report = collect(self.kube, targets, cluster=self.settings.cluster,
                             time=isoformat(now))
        except (Unreachable, ApiError) as exc:
            out.errors.append(f"metrics: {exc}")
            return None
        return report.to_yaml()
