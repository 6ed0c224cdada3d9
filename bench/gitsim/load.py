"""Real-time load: every simulated cluster on its own schedule, real requests, real servers.

Each live cluster has its next Git fetch and its next heartbeat push on a shared clock; a few
worker threads run whatever is due (the agent's real fetch and status push, bench.gitsim.
clients), so the server sees the fleet's offered load as long as the workers keep up; how late
they ran (`lag`) says when they did not, and then the achieved rate is the server's (and this
machine's) ceiling, not the fleet's demand.

A change: the hub moves `changes` cluster branches at a third of the run. Without tips the
agents find it at their next periodic fetch; with tips each changed cluster learns it from its
tip document (a real GET of the signed document, checked with gitfleet.wire.tips.decode) after
its poll delay, then fetches at once. The polls of unchanged tip documents are not sent (they
would be N/poll requests/s to the tip store, not to Git); their cost is the probe's `tip-304`.
When it fetches a change, the agent pushes its new status at once (one push per change, as
bench.gitsim.schedule measures the real agent doing). Stopped clusters push nothing; the last
beat seeded for them makes them due to be judged lost half-way through the run. At the end
every status branch is read back from the server and judged
by gitfleet.lifecycle.judgement.judge, the hub's own rule.
"""

from __future__ import annotations

import heapq
import random
import resource
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench.gitsim.clients import Agents
from bench.gitsim.hub import HubWriter
from bench.gitsim.probe import pct
from bench.gitsim.repo import BRANCHES
from bench.gitsim.servers import Daemon, Http
from gitfleet.agent.statusmessage import Write
from gitfleet.errors import InputError
from gitfleet.lifecycle.judgement import Condition, judge
from gitfleet.timestamps import parse_iso
from gitfleet.wire.status import ClusterStatus
from gitfleet.wire.tips import decode, file_name


@dataclass(frozen=True)
class Schedule:
    """What one agent asks of Git: a fetch every `fetch_period` s (the interval, or the tip
    poller's safety fetch), a heartbeat every `heartbeat` s ± `jitter` (a share), and with
    `tip_poll` set, a changed branch learnt within that many seconds (uniform; 0: long-poll,
    at once)."""

    name: str
    fetch_period: float
    heartbeat: float
    jitter: float = 0.0
    tip_poll: float | None = None   # None: no tip documents
    tolerance: float = 0.0          # declared in each heartbeat (0: none, 3 intervals)


@dataclass
class Result:
    scenario: str
    server: str
    clusters: int
    duration: float
    server_cpu: float
    fetches: int = 0
    pushes: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    tip_gets: int = 0
    lag_p50: float = 0.0
    lag_p99: float = 0.0
    change_latency: list[float] = field(default_factory=list)
    changed: int = 0
    unseen: int = 0          # changed clusters whose agent had not fetched the change at the end
    judged_live_lost: int = 0
    live_silent: int = 0            # live clusters the harness's lag left silent past tolerance
    judged_stopped_alive: int = 0
    stopped: int = 0
    http_requests: int | None = None
    http_kinds: dict[str, int] = field(default_factory=dict)
    bytes_out: int | None = None
    bytes_in: int | None = None
    client_cpu: float = 0.0

    def row(self) -> dict[str, object]:
        d = self.duration
        lat = self.change_latency
        return {
            "scenario": self.scenario, "server": self.server, "clusters": self.clusters,
            "seconds": round(d, 1), "fetches_per_s": round(self.fetches / d, 1),
            "pushes_per_s": round(self.pushes / d, 2),
            "git_requests_per_s": round((self.fetches + self.pushes) / d, 1),
            "http_requests_per_s": (round(self.http_requests / d, 1)
                                    if self.http_requests is not None else None),
            "bytes_out_per_s": round(self.bytes_out / d) if self.bytes_out is not None else None,
            "server_cpu_s": round(self.server_cpu, 2),
            "server_cpu_share": round(self.server_cpu / d, 3),
            "lag_p50_s": round(self.lag_p50, 2), "lag_p99_s": round(self.lag_p99, 2),
            "change_to_fetch_p50_s": round(pct(lat, 0.5), 2) if lat else None,
            "change_to_fetch_p99_s": round(pct(lat, 0.99), 2) if lat else None,
            "changed": self.changed, "change_not_fetched": self.unseen,
            "tip_gets": self.tip_gets, "errors": self.errors,
            "judged_live_as_lost": self.judged_live_lost,
            "judged_stopped_as_alive": self.judged_stopped_alive, "stopped": self.stopped,
            "live_silent_past_tolerance": self.live_silent,
            "client_cpu_s": round(self.client_cpu, 1), "http_kinds": self.http_kinds,
            "error_kinds": self.error_kinds}


def read_statuses(repos: list[Path], clusters: list[str]) -> dict[str, ClusterStatus | None]:
    """Every cluster's status.yaml at its branch tip, from whichever repository holds it."""
    out: dict[str, ClusterStatus | None] = {c: None for c in clusters}
    for repo in repos:
        names = [f"{BRANCHES.status(c)}:status.yaml" for c in clusters]
        proc = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"],
                              input="\n".join(names).encode() + b"\n", capture_output=True,
                              check=True)
        data, pos = proc.stdout, 0
        for c in clusters:
            nl = data.index(b"\n", pos)
            head = data[pos:nl].split()
            pos = nl + 1
            if head[-1] == b"missing":
                continue
            size = int(head[2])
            body = data[pos:pos + size]
            pos += size + 1
            try:
                out[c] = ClusterStatus.from_yaml(body)
            except InputError:
                continue
    return out


def run(server: Daemon | Http, agents: Agents, hub: HubWriter, schedule: Schedule, *,
        duration: float, workers: int, changes: int, stopped: set[str],
        status_repos: list[Path], rng: random.Random, tips: Http,
        start: float | None = None, drain: float = 0.0) -> Result:
    clusters = agents.fleet.clusters
    statuses = agents.statuses
    mark = server.traffic_mark()
    if start is not None:
        time.sleep(max(0.0, start - time.time()))
    t0 = time.time()
    heap: list[tuple[float, int, str, str]] = []
    seq = 0
    for c in clusters:
        if c in stopped:
            continue
        seq += 1
        heap.append((t0 + rng.uniform(0, schedule.fetch_period), seq, "fetch", c))
        # the first beat one interval after the seeded one: the seeds' phases are uniform
        # (bench.gitsim.run), so the run starts at the steady push rate; jitter from then on
        nxt = statuses.last_beat[c] + schedule.heartbeat
        seq += 1
        heap.append((nxt, seq, "beat", c))
    heapq.heapify(heap)
    lock = threading.Lock()
    wake = threading.Condition(lock)
    end = t0 + duration
    res = Result(schedule.name, server.kind, len(clusters), duration, 0.0,
                 stopped=len(stopped))
    lags: list[float] = []
    new_tip: dict[str, str] = {}
    changed_at: dict[str, float] = {}
    seen: dict[str, float] = {}
    beat_at: dict[str, float] = {}     # cluster -> the time of its last heartbeat written
    live_changed = [c for c in clusters if c not in stopped]
    moved = rng.sample(live_changed, min(changes, len(live_changed)))
    base = tips.tips_url()
    if schedule.tip_poll is not None and moved:
        hub.tips_of({c: agents.fleet.cluster_tips[c] for c in moved})

    def push(item: tuple[float, int, str, str]) -> None:
        heapq.heappush(heap, item)
        wake.notify()

    def do(kind: str, c: str, now: float) -> None:
        if kind in ("fetch", "tip-fetch"):
            if kind == "tip-fetch":
                with urllib.request.urlopen(f"{base}/{file_name(c)}", timeout=30) as r:
                    doc = r.read()
                decode(doc, cluster=c, ref=BRANCHES.cluster(c), trusted=hub.trusted)
            commit = agents.fetch(c)
            done = time.time()
            with lock:
                res.fetches += 1
                res.tip_gets += kind == "tip-fetch"
                fresh = c in new_tip and commit == new_tip[c] and c not in seen
                if fresh:
                    seen[c] = done
            if fresh:   # the agent applies it and pushes its new status at once
                when = max(done, now + 1)
                wrote = agents.heartbeat(c, when)
                with lock:
                    res.pushes += wrote is not Write.NOTHING
                    if wrote is not Write.NOTHING:
                        beat_at[c] = when
        elif kind == "beat":
            wrote = agents.heartbeat(c, now)
            with lock:
                res.pushes += wrote is not Write.NOTHING
                if wrote is not Write.NOTHING:
                    beat_at[c] = now

    timers: list[threading.Timer] = []

    def failed(exc: Exception) -> None:
        what = f"{type(exc).__name__}: {str(exc)[:120]}"
        with lock:
            res.errors += 1
            res.error_kinds[what] = res.error_kinds.get(what, 0) + 1

    def tip_fetch(c: str) -> None:
        try:
            do("tip-fetch", c, time.time())
        except Exception as exc:   # counted: a failed request is a figure
            failed(exc)

    def worker() -> None:
        nonlocal seq
        while True:
            with lock:
                while True:
                    now = time.time()
                    if now >= end:
                        wake.notify_all()
                        return
                    if heap and heap[0][0] <= now:
                        due, _, kind, c = heapq.heappop(heap)
                        break
                    wait = min(end, heap[0][0] if heap else end) - now
                    wake.wait(timeout=max(wait, 0.001))
                lags.append(now - due)
            try:
                do(kind, c, now)
            except Exception as exc:   # counted, and the agent tries again next time
                failed(exc)
            with lock:
                seq += 1
                if kind == "fetch":
                    push((time.time() + schedule.fetch_period * rng.uniform(0.95, 1.05),
                          seq, "fetch", c))
                elif kind == "beat":
                    push((due + schedule.heartbeat * (1 + rng.uniform(-schedule.jitter,
                                                                      schedule.jitter)),
                          seq, "beat", c))

    cpu0 = server.cpu()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    self0 = time.process_time()
    pool = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for t in pool:
        t.start()
    time.sleep(max(0.0, t0 + duration / 3 - time.time()))
    if moved:
        tips = hub.change(moved)
        t_change = time.time()
        if schedule.tip_poll is not None:
            hub.tips_of(tips)
        with lock:
            new_tip.update(tips)
            for c in moved:
                changed_at[c] = t_change
        if schedule.tip_poll is not None:
            # each agent learns it on its own (its own poller, its own fetch): a thread per
            # changed cluster, not the shared workers, so the workers' backlog is not counted
            for c in moved:
                timer = threading.Timer(rng.uniform(0, schedule.tip_poll), tip_fetch, (c,))
                timer.start()
                timers.append(timer)
    for t in pool:
        t.join()
    for timer in timers:
        timer.join()
    beats_until = time.time()      # the agents' beats stop here; the drain below only fetches
    # a changed cluster whose agent had not fetched the change when the window closed (the
    # workers lagged behind its periodic fetch) fetches again, as its agent would at its next
    # interval, until it has it or `drain` runs out: the latency then says how late it was, and
    # a change is never counted unseen only because this machine was slow
    drain_end = time.time() + drain
    for c in moved:
        while c not in seen and time.time() < drain_end:
            try:
                do("fetch", c, time.time())
            except Exception as exc:   # counted, and tried again
                failed(exc)
    res.duration = time.time() - t0
    res.server_cpu = server.cpu() - cpu0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res.client_cpu = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
                      + time.process_time() - self0)
    traffic = server.traffic(mark)
    if traffic is not None:
        res.http_requests = traffic.total - traffic.requests.get("tip", 0)
        res.http_kinds = dict(traffic.requests) | {
            f"status {k}": v for k, v in traffic.statuses.items()}
        res.bytes_out, res.bytes_in = traffic.bytes_out, traffic.bytes_in
    res.lag_p50, res.lag_p99 = pct(lags, 0.5), pct(lags, 0.99)
    res.changed = len(moved)
    res.change_latency = [seen[c] - changed_at[c] for c in moved if c in seen]
    res.unseen = len(moved) - len(res.change_latency)
    # the hub's judgement of every cluster from what its status branch says, as of the moment
    # the beats stopped (the drain sends none), checked against the beats written: a live
    # cluster is misjudged lost only if its last beat was written within its tolerance (a
    # harness lagging past the tolerance really left that cluster silent, as a slow agent would)
    now = beats_until
    read = read_statuses(status_repos, clusters)
    for c in clusters:
        verdict = judge(read[c], now=now, parse_time=parse_iso)
        lost = verdict.condition in (Condition.UNKNOWN, Condition.NEVER_REPORTED)
        silent = now > beat_at.get(c, statuses.last_beat[c]) + statuses.tolerance
        if lost and c not in stopped and not silent:
            res.judged_live_lost += 1
        elif c in stopped and silent and not lost:
            res.judged_stopped_alive += 1
        res.live_silent += c not in stopped and silent
    return res
