"""The agent daemon: one `step()` per round, and a loop around it.

A round is a pipeline of parts passing one `Round` value along (`gitfleet.agent.round`):
fetch the cluster branch, only that ref (`Fetcher`; also when the remote is down, the local
ref keeps the last fetched commit) -> verify it against the applied commit and read it
(`Verifier`) -> take a heartbeat when one is due (`Heartbeats`) -> plan what the round does
with it (`course_of`) -> apply it (`Syncer`, the engine) -> report the status when it
changed (`Reporter`) -> reactors (extra work at poll time). `step()` returns how long to wait:
the interval, sooner while a rollout is being followed, and with backoff and jitter for what
failed (the Git remote, the API server). Time comes from an injected clock so heartbeats run
in virtual time in tests.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace

from gitfleet.agent.changes import DriftFound, ObjectResult
from gitfleet.agent.clusterbranch import ClusterBranch
from gitfleet.agent.course import course_of
from gitfleet.agent.engine import Engine, watch_kinds
from gitfleet.agent.fetcher import Fetcher
from gitfleet.agent.heartbeats import Heartbeats
from gitfleet.agent.outage import Outages
from gitfleet.agent.recovery import Recovery
from gitfleet.agent.registrar import Registrar
from gitfleet.agent.reporter import Reporter
from gitfleet.agent.round import FOREVER, Reactor, Round
from gitfleet.agent.round import StepOutcome as StepOutcome
from gitfleet.agent.settings import AgentSettings as AgentSettings
from gitfleet.agent.signer import SIGNING_KEY_SECRET, AgentSigner
from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.agent.syncer import Syncer
from gitfleet.agent.verifier import Verifier
from gitfleet.clock import Clock, SystemClock
from gitfleet.errors import GitfleetError, InputError, TransientError
from gitfleet.kube.client import KubeClient
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.registration.request import Answer
from gitfleet.secrets.keyring import AGE_KEY_SECRET, Keyring
from gitfleet.state.git import Git, init_repo

LOG = logging.getLogger("gitfleet.agent")


class PushModeRefused(InputError):
    """The cluster is in Push mode and this agent does not allow the hub to push."""

    def __init__(self, message: str) -> None:
        super().__init__(message, path="cluster.yaml")


class Agent:
    def __init__(self, settings: AgentSettings, kube: KubeClient, *,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 git: Git | None = None,
                 branch_hint: Callable[[], str | None] | None = None,
                 reactors: Iterable[Reactor] = ()) -> None:
        self.settings = settings
        self.kube = kube
        self.clock = clock or SystemClock()
        self.rng = rng = rng or random.Random()
        self.git = git or init_repo(settings.workdir, bare=True, private=True,
                                    transport=settings.git_transport)
        branches = Branches(settings.branch_prefix)
        self.keyring = Keyring(key_file=settings.age_key_file,
                               read_secret=lambda: kube.get("v1", "Secret", *AGE_KEY_SECRET))
        self.signer = AgentSigner(
            cluster=settings.cluster, key_file=settings.signing_key_file,
            read_secret=lambda: kube.get("v1", "Secret", *SIGNING_KEY_SECRET),
            key=settings.signing_key)
        self.git.signer = self.signer.key
        self.branch = ClusterBranch(self.git, settings.repo_url, branches, settings.cluster,
                                    identities=self.keyring.identities,
                                    trusted=settings.trusted_hub_keys)
        self.status_branch = StatusBranch(self.git, settings.repo_url, branches,
                                          settings.cluster)
        self.engine = Engine(kube, settings.engine_settings(), clock=self.clock)
        self.recovery: Recovery | None = None
        # the round's parts, in pipeline order (see step())
        outages = Outages(settings.cluster)
        self.reporter = Reporter(settings, self.status_branch, outages=outages, rng=rng)
        previous = self.reporter.previous
        self.heartbeats = Heartbeats(settings, kube, rng=rng, previous=previous)
        self.registrar = Registrar(settings, kube=kube, git=self.git, keyring=self.keyring,
                                   signer=self.signer)
        # The hub's push worker passes branch_hint, the hub's own view of the cluster branch
        # (it writes it), so an unchanged branch costs no fetch.
        self.fetcher = Fetcher(settings, self.branch, registrar=self.registrar,
                               outages=outages, rng=rng, report_due=self.heartbeats.due,
                               branch_hint=branch_hint)
        self.verifier = Verifier(settings, git=self.git, branch=self.branch,
                                 status_branch=self.status_branch, engine=self.engine,
                                 outages=outages, rng=rng, previous=previous)
        self.syncer = Syncer(settings, self.engine, branch_ref=self.branch.remote_ref, rng=rng)
        # extra work at poll time, after the status is written (gitfleet.agent.round.Reactor)
        self.reactors: list[Reactor] = list(reactors)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.last = StepOutcome()
        self._current = StepOutcome()   # the step in progress (kept when a step raises)

    @property
    def registration(self) -> Answer | None:
        """The hub's last answer to this cluster's registration request."""
        return self.registrar.answer

    @property
    def refused(self) -> str:
        """Why this agent refuses to run (Push mode without AppPusher), else ""."""
        return self.syncer.refused

    # -- one round -------------------------------------------------------------------------

    def step(self) -> float:
        """Do one round; return the seconds until the next one is wanted."""
        now = self.clock.now()
        out = self._current = StepOutcome()
        if not self.signer.resolved:
            self.git.signer = self.signer.resolve()
        r = self.fetcher.fetch(Round(now=now, out=out))
        if r.answered:
            self.reporter.remote_answered()
        r = self.verifier.verify(r)
        if r.desired is not None:
            self.reporter.follow_place(r.desired, now)
            self.heartbeats.follow(r.desired)
            self.verifier.log_read_errors(r)
        r = self.heartbeats.take(r)
        r = replace(r, course=course_of(r, push_worker=self.settings.push_worker,
                                        app_pusher=self.settings.app_pusher))
        r = self.syncer.apply(r, self.reporter.previous(now))
        r = self.reporter.report(r)
        if self.refused:
            self.last = out
            raise PushModeRefused(self.refused)
        wake = self._react(r)
        if self.settings.recovery and self.syncer.kube_failures == 0:
            self._ensure_recovery()
        self.last = out
        return min(self._next_delay(r), wake)

    def _react(self, r: Round) -> float:
        wake = FOREVER
        for reactor in self.reactors:
            try:
                wake = min(wake, reactor.react(r))
            except GitfleetError as exc:
                log(LOG, logging.WARNING, "reactor failed", cluster=self.settings.cluster,
                    reactor=type(reactor).__name__, error=str(exc))
        return max(wake, 0.0)

    def _next_delay(self, r: Round) -> float:
        """The soonest any part wants the next round. A round woken only for a heartbeat (or
        a metrics report) polls Git at the pace it would have anyway: jittered heartbeats
        cost no fetches."""
        now = r.now
        poll = min(self.fetcher.wake_in(now), self.syncer.wake_in(r),
                   self.reporter.wake_in(now), self.verifier.wake_in(now))
        delay = min(poll, self.heartbeats.wake_in(now))
        if delay < poll:
            self.fetcher.defer_poll(now + poll)
        return max(delay, 0.0)

    # -- recovery --------------------------------------------------------------------------

    def _ensure_recovery(self) -> None:
        if self.recovery is None:
            self.recovery = Recovery(self.engine, self.kube, on_repair=self._repaired,
                                     debounce=self.settings.repair_debounce)
        self.recovery.ensure(watch_kinds(self.engine))

    def _repaired(self, result: ObjectResult, drift: DriftFound) -> None:
        self.reporter.repaired(result, drift)
        self._wake.set()

    # -- the loop --------------------------------------------------------------------------

    def run(self, *, once: bool = False) -> StepOutcome:
        """Step until stopped (or once). Wakes early when Recovery repaired something."""
        try:
            while True:
                self._wake.clear()  # a repair during the step wakes the next wait at once
                try:
                    delay = self.step()
                except InputError as exc:
                    log(LOG, logging.ERROR, "agent stops", reason=str(exc))
                    raise
                except GitfleetError as exc:
                    log(LOG, logging.ERROR, "step failed", error=str(exc))
                    # what the step did before it failed, and why, for --once's exit code
                    self.last = self._current
                    self.last.errors.append(str(exc))
                    if isinstance(exc, TransientError):
                        self.last.remote_fault = self.last.remote_fault or str(exc)
                    delay = self.settings.interval
                if once or self._stop.is_set():
                    return self.last
                if self._wait(delay):
                    return self.last
        finally:
            self.close()

    def _wait(self, delay: float) -> bool:
        """Sleep `delay` (on the clock), ending early on stop or wake; True when stopped."""
        if isinstance(self.clock, SystemClock):
            deadline = self.clock.now() + delay
            while not self._stop.is_set():
                left = deadline - self.clock.now()
                if left <= 0 or self._wake.wait(min(left, 0.5)):
                    break
        else:
            self.clock.sleep(delay)
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def wake(self) -> None:
        """End the current wait now: the branch moved (gitfleet.agent.tips)."""
        self._wake.set()

    def close(self) -> None:
        if self.recovery is not None:
            self.recovery.stop()
            self.recovery = None
