"""The hub's push workers: one per cluster the hub applies to (Push and Dual mode).

SEMANTICS "Sync modes": the hub applies to a Push cluster, and to a Dual cluster, only while
its agent reports `appPusher: true` in its heartbeat. A Push cluster with no agent at all is
pushed only when the hub is told so (`--push-agentless`): its worker then also writes the
cluster's heartbeats (marked `agentVersion: hub-push-worker/<version>`), since no agent does.

The registry follows the shape of Chaos Mesh's remote cluster registry: `reconcile()` runs
every hub round with the fleet's clusters and their reported status, spawns a worker for each
cluster that became pushable, stops those that left or stopped allowing it (and restarts one
whose kubeconfig changed), and `with_client()` makes one-off calls with a cluster's client.

A worker is the agent's own loop (`gitfleet.cli.pushagent`, given to the registry by the command
that starts the hub: the hub never imports the agent) in a thread, against the cluster's
kubeconfig: the same engine, inventory (the ConfigMap in the cluster, so
agent and worker hand over without pruning or duplicating anything), prune budget, health,
drift, and the same status-branch writer. With an agent present the worker writes only the sync
part of the status and the agent only its heartbeat; each keeps its part over the other's
commits (`StatusBranch.write(rebase=...)`). A worker that crashes is restarted with capped
backoff; one cluster's failure (API down, broken kubeconfig) never touches another's worker.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gitfleet.backoff import Backoff
from gitfleet.errors import GitfleetError, InputError
from gitfleet.hub.kubeconfigs import Kubeconfig, KubeconfigSource
from gitfleet.layout import PUSHED_MODES, Branches
from gitfleet.logs import log
from gitfleet.state.signing import SigningKey
from gitfleet.state.transport import GitTransport
from gitfleet.wire.status import HUB_WORKER_VERSION, ClusterStatus

if TYPE_CHECKING:   # the Kubernetes client (~1 s of CPU to import) is loaded when a worker
    # first connects, not by every hub (most have no Push cluster)
    from gitfleet.kube.client import KubeClient

LOG = logging.getLogger("gitfleet.hub.push")
T = TypeVar("T")


@dataclass(frozen=True)
class PushSettings:
    interval: float = 10.0            # each worker's round (fetch, sync, status)
    # heartbeats an agentless cluster's worker writes (None: the fleet's, from cluster.yaml)
    heartbeat_interval: float | None = None
    agentless: bool = False           # push Push clusters that have no agent (--push-agentless)
    recovery: bool = False            # the Recovery gate: watch and put back drifted objects
    apply_workers: int = 4
    max_prune_share: float = 0.5
    restart_backoff: Backoff = field(default_factory=lambda: Backoff(base=1.0, maximum=60.0))
    once: bool = False                # each worker does one round and ends (`hub --once`)
    # the hub's --signing-key: the status a worker writes is signed with it, and the hub (and
    # the pre-receive hook of `gitfleet hooks`) accepts the hub's key on status branches
    signing_key: SigningKey | None = None
    git_transport: GitTransport | None = None   # how workers reach the remote (the hub's own)


@dataclass(frozen=True)
class PushTarget:
    """Why and how the hub pushes to one cluster."""

    cluster: str
    mode: str              # Push | Dual
    own_heartbeat: bool    # no agent: the worker writes the heartbeats too

    @property
    def reason(self) -> str:
        return "agentless" if self.own_heartbeat else "agent reports AppPusher on"


def push_target(*, cluster: str, sync_mode: str, status: ClusterStatus | None,
                agentless: bool) -> PushTarget | None:
    """The decision, from the ManagedCluster's syncMode and the last reported heartbeat."""
    if sync_mode not in PUSHED_MODES:
        return None
    heartbeat = status.heartbeat if status is not None else None
    by_hub = heartbeat is not None and heartbeat.agent_version.startswith(
        HUB_WORKER_VERSION.split("/", 1)[0] + "/")
    agent_allows = heartbeat is not None and not by_hub and heartbeat.app_pusher
    if agent_allows:
        return PushTarget(cluster, sync_mode, own_heartbeat=False)
    if sync_mode == "Push" and agentless and (not heartbeat or by_hub):
        return PushTarget(cluster, sync_mode, own_heartbeat=True)
    return None


@dataclass(frozen=True)
class PushJob:
    """What a worker runs the agent's loop for: one cluster, from the hub's repository."""

    target: PushTarget
    repo_url: str
    workdir: Path                          # the worker's own small repository
    branches: Branches
    settings: PushSettings
    branch_hint: Callable[[], str | None] | None = None    # the cluster branch's tip, if known


class ClusterAgent(Protocol):
    """The agent's loop for one cluster, as a worker runs it."""

    def run(self, *, once: bool = False) -> Any: ...

    def stop(self) -> None: ...


class PushAgents(Protocol):
    """Starts the agent's loop for a job, and says on a cluster's status branch that the hub
    cannot push to it (raises GitfleetError when that write fails)."""

    def agent(self, job: PushJob, kube: KubeClient) -> ClusterAgent: ...

    def report_broken(self, job: PushJob, message: str) -> None: ...


class PushWorker:
    """One cluster's push loop in its own thread, restarted with backoff when it crashes."""

    def __init__(self, target: PushTarget, kubeconfig: Kubeconfig, *, repo_url: str,
                 workdir: Path, branches: Branches, settings: PushSettings, agents: PushAgents,
                 branch_hint: Callable[[], str | None] | None = None) -> None:
        self.agents = agents
        self.target = target
        self.branch_hint = branch_hint
        self.kubeconfig = kubeconfig
        self.repo_url = repo_url
        self.workdir = workdir
        self.branches = branches
        self.settings = settings
        self.restarts = 0
        self.last_error = ""
        self.rounds_started = 0
        self.broken = ""          # why it cannot push (kubeconfig), once reported
        self._stop = threading.Event()
        self._agent: ClusterAgent | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"push-{target.cluster}",
                                        daemon=True)

    @property
    def cluster(self) -> str:
        return self.target.cluster

    @property
    def key(self) -> tuple[PushTarget, str]:
        """What the worker was started with; a change of it restarts the worker."""
        return self.target, self.kubeconfig.digest

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def agent(self) -> ClusterAgent | None:
        return self._agent

    @property
    def job(self) -> PushJob:
        return PushJob(self.target, self.repo_url, self.workdir, self.branches, self.settings,
                       self.branch_hint)

    def start(self) -> PushWorker:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the worker to end after the round under way (does not wait)."""
        with self._lock:
            self._stop.set()
            if self._agent is not None:
                self._agent.stop()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                if self.kubeconfig.text is None:
                    self._report_broken(self.kubeconfig.error)
                    return
                from gitfleet.kube.kubeconfig import client_from_kubeconfig

                try:
                    kube = client_from_kubeconfig(self.kubeconfig.text,
                                                  source=self.kubeconfig.source)
                except InputError as exc:
                    self._report_broken(str(exc))
                    return
                self._loop(kube)
                return
            except Exception as exc:  # a bug or a fault in one worker: restart it, alone
                if time.monotonic() - started > self.settings.restart_backoff.maximum:
                    failures = 0      # it ran well for a while: start the backoff afresh
                failures += 1
                self.restarts += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                delay = self.settings.restart_backoff.delay(failures)
                LOG.warning("push worker crashed; restarting", exc_info=exc, extra={
                    "fields": {"cluster": self.cluster, "error": self.last_error,
                               "restart_in": round(delay, 2)}})
                if self.settings.once or self._stop.wait(delay):
                    return

    def _loop(self, kube: KubeClient) -> None:
        agent = self.agents.agent(self.job, kube)
        with self._lock:
            if self._stop.is_set():
                return
            self._agent = agent
        self.rounds_started += 1
        try:
            agent.run(once=self.settings.once)
        finally:
            kube.api.close()

    def _report_broken(self, error: str) -> None:
        """No client for this cluster: say so on its status branch, until it is written."""
        log(LOG, logging.ERROR, "push worker cannot reach the cluster", cluster=self.cluster,
            error=error)
        self.last_error = self.broken = error
        message = f"the hub cannot push: {error}"[:500]
        failures = 0
        while not self._stop.is_set():
            try:
                self.agents.report_broken(self.job, message)
                return
            except GitfleetError as exc:
                failures += 1
                if self.settings.once or self._stop.wait(
                        self.settings.restart_backoff.delay(failures)):
                    log(LOG, logging.WARNING, "cannot report a broken kubeconfig",
                        cluster=self.cluster, error=str(exc))
                    return


class PushRegistry:
    """Push workers by cluster, reconciled every hub round."""

    def __init__(self, *, repo_url: str, workdir: Path, kubeconfigs: KubeconfigSource,
                 agents: PushAgents, settings: PushSettings | None = None) -> None:
        self.agents = agents
        self.repo_url = repo_url
        self.workdir = workdir
        self.kubeconfigs = kubeconfigs
        self.settings = settings or PushSettings()
        self.workers: dict[str, PushWorker] = {}
        self._stopping: dict[str, PushWorker] = {}
        self.spawned = 0
        self.stopped = 0
        # cluster -> its cluster branch's commit as the hub last read it (the hub writes those
        # branches): a worker fetches only when its branch moved.
        self.tips: dict[str, str] = {}

    def reconcile(self, sync_modes: Mapping[str, str], statuses: Mapping[str, ClusterStatus],
                  *, branches: Branches, tips: Mapping[str, str] | None = None) -> None:
        """Spawn, stop and restart workers to match the clusters pushable now.

        `sync_modes`: cluster -> its ManagedCluster's spec.syncMode; `statuses`: cluster -> its
        status.yaml as last read. A stopping worker finishes its round first; its cluster gets a
        new worker only once it has ended, so two never apply to one cluster. `tips`: cluster ->
        commit of its cluster branch in the hub's repository, when the hub knows them."""
        self.tips = dict(tips or {})
        self._reap()
        wanted: dict[str, PushTarget] = {}
        for name, mode in sync_modes.items():
            target = push_target(cluster=name, sync_mode=mode, status=statuses.get(name),
                                 agentless=self.settings.agentless)
            if target is not None:
                wanted[name] = target
        if wanted or self.workers:
            self.kubeconfigs.refresh()
        for name, worker in list(self.workers.items()):
            target = wanted.get(name)
            if target is None:
                self._stop_worker(worker, reason="no longer pushable")
            elif worker.key != (target, self.kubeconfigs.get(name).digest) \
                    or worker.branches != branches:
                self._stop_worker(worker, reason="target or kubeconfig changed")
        for name, target in sorted(wanted.items()):
            if name in self.workers or name in self._stopping:
                continue
            worker = PushWorker(target, self.kubeconfigs.get(name), repo_url=self.repo_url,
                                workdir=self.workdir / name, branches=branches,
                                settings=self.settings, agents=self.agents,
                                branch_hint=self._hint(name) if tips is not None else None)
            self.workers[name] = worker.start()
            self.spawned += 1
            log(LOG, logging.INFO, "push worker started", cluster=name, mode=target.mode,
                reason=target.reason)

    def _hint(self, cluster: str) -> Callable[[], str | None]:
        return lambda: self.tips.get(cluster)

    def _stop_worker(self, worker: PushWorker, *, reason: str) -> None:
        worker.stop()
        del self.workers[worker.cluster]
        if worker.alive:
            self._stopping[worker.cluster] = worker
        self.stopped += 1
        log(LOG, logging.INFO, "push worker stopping", cluster=worker.cluster, reason=reason)

    def _reap(self) -> None:
        for name, worker in list(self._stopping.items()):
            if not worker.alive:
                del self._stopping[name]
        for name, worker in list(self.workers.items()):
            if worker.alive or worker.broken or self.settings.once:
                continue    # a broken one waits for its kubeconfig to change
            # Its thread ended without being stopped (it should not): start it afresh.
            log(LOG, logging.WARNING, "push worker ended by itself; restarting", cluster=name)
            del self.workers[name]

    def pushing(self) -> dict[str, PushTarget]:
        """Clusters with a worker now (not counting those still stopping)."""
        return {name: w.target for name, w in self.workers.items()}

    def with_client(self, cluster: str, fn: Callable[[KubeClient], T]) -> T:
        """Call `fn` with a client of `cluster` from its kubeconfig (a one-off call, e.g. a
        status read); InputError when the hub holds no usable kubeconfig for it."""
        kubeconfig = self.kubeconfigs.get(cluster)
        if kubeconfig.text is None:
            raise InputError(kubeconfig.error, path=kubeconfig.source)
        from gitfleet.kube.kubeconfig import client_from_kubeconfig

        kube = client_from_kubeconfig(kubeconfig.text, source=kubeconfig.source)
        try:
            return fn(kube)
        finally:
            kube.api.close()

    def wait(self, timeout: float) -> bool:
        """Wait for every worker to end (`once` workers end by themselves); True when all did."""
        deadline = time.monotonic() + timeout
        for worker in (*self.workers.values(), *self._stopping.values()):
            if not worker.join(max(0.0, deadline - time.monotonic())):
                return False
        return True

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop every worker and wait for them (bounded); True when all ended."""
        for worker in (*self.workers.values(), *self._stopping.values()):
            worker.stop()
        done = self.wait(timeout)
        self._stopping.update(self.workers)
        self.workers = {}
        self._reap()
        return done


def workdir_for(cache_dir: Path, repo: str) -> Path:
    """Where the workers of the hub of `repo` keep their small Git repositories."""
    return cache_dir / "push" / hashlib.sha1(repo.encode()).hexdigest()[:12]
