"""Per-request server cost: run R requests of one kind through a few client threads and read
what the server spent (CPU from /proc, bytes and HTTP requests from nginx's log).

Kinds: `fetch-noop` (an agent's fetch of its unchanged branch), `fetch-change` (of a branch the
hub just moved), `push-heartbeat` (a heartbeat-only status push), `tip-304` (a tip document
poll answered Not Modified; HTTP only). All measured; the closed loop also gives the most this
machine served of that kind with `threads` clients (clients and server share the 2 cores)."""

from __future__ import annotations

import random
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from bench.gitsim.clients import Agents
from bench.gitsim.hub import HubWriter
from bench.gitsim.servers import Daemon, Http
from gitfleet.wire.tips import file_name


@dataclass
class Cost:
    kind: str
    server: str
    count: int
    wall: float
    server_cpu: float
    latency_p50: float
    latency_p99: float
    http_requests: int | None = None
    bytes_in: int | None = None
    bytes_out: int | None = None
    errors: int = 0

    @property
    def cpu_per_request(self) -> float:
        return self.server_cpu / self.count

    @property
    def per_second(self) -> float:
        return self.count / self.wall

    def row(self) -> dict[str, object]:
        return {"kind": self.kind, "server": self.server, "count": self.count,
                "wall_s": round(self.wall, 2), "achieved_per_s": round(self.per_second, 1),
                "server_cpu_ms_per_request": round(1000 * self.cpu_per_request, 2),
                "latency_p50_ms": round(1000 * self.latency_p50, 1),
                "latency_p99_ms": round(1000 * self.latency_p99, 1),
                "http_requests_per_request": (round(self.http_requests / self.count, 2)
                                              if self.http_requests is not None else None),
                "bytes_out_per_request": (round(self.bytes_out / self.count)
                                          if self.bytes_out is not None else None),
                "bytes_in_per_request": (round(self.bytes_in / self.count)
                                         if self.bytes_in is not None else None),
                "errors": self.errors}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def closed_loop(server: Daemon | Http, kind: str, items: list[str],
                work: Callable[[str], object], threads: int) -> Cost:
    """Run `work(item)` for every item through `threads` threads; measure the server."""
    todo = list(items)
    lock = threading.Lock()
    latencies: list[float] = []
    errors = [0]

    def loop() -> None:
        while True:
            with lock:
                if not todo:
                    return
                item = todo.pop()
            t = time.perf_counter()
            try:
                work(item)
            except Exception:   # counted: a failed request is a figure, not a crash
                with lock:
                    errors[0] += 1
            with lock:
                latencies.append(time.perf_counter() - t)

    mark = server.traffic_mark()
    cpu0 = server.cpu()
    t0 = time.perf_counter()
    pool = [threading.Thread(target=loop) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - t0
    cpu = server.cpu() - cpu0
    traffic = server.traffic(mark)
    cost = Cost(kind, server.kind, len(items), wall, cpu, statistics.median(latencies),
                pct(latencies, 0.99), errors=errors[0])
    if traffic is not None:
        cost.http_requests = traffic.total
        cost.bytes_in, cost.bytes_out = traffic.bytes_in, traffic.bytes_out
    return cost


def tip_get(url: str, etag: str | None) -> str | None:
    req = urllib.request.Request(url, headers={"If-None-Match": etag} if etag else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            return r.headers.get("ETag")
    except urllib.error.HTTPError as exc:
        with exc:
            if exc.code != 304:
                raise
            return etag


KINDS = ("fetch-noop", "fetch-change", "push-heartbeat", "tip-304")


def probe(server: Daemon | Http, agents: Agents, hub: HubWriter, clusters: list[str], *,
          count: int, threads: int, rng: random.Random,
          kinds: tuple[str, ...] = KINDS) -> list[Cost]:
    """Each of `kinds`, `count` requests each (half as many changes and pushes)."""
    out = []
    if "fetch-noop" in kinds:
        sample = rng.sample(clusters, min(count, len(clusters)))
        out.append(closed_loop(server, "fetch-noop", sample, agents.fetch, threads))
    if "fetch-change" in kinds:
        moved = rng.sample(clusters, min(max(count // 2, 1), len(clusters)))
        new = hub.change(moved)
        got: dict[str, str | None] = {}
        out.append(closed_loop(server, "fetch-change", moved,
                               lambda c: got.__setitem__(c, agents.fetch(c)), threads))
        out[-1].errors += sum(1 for c in moved if got.get(c) != new[c])
    if "push-heartbeat" in kinds:
        pushers = rng.sample(clusters, min(max(count // 2, 1), len(clusters)))
        out.append(closed_loop(server, "push-heartbeat", pushers,
                               lambda c: agents.heartbeat(c, time.time() + 1), threads))
    if "tip-304" in kinds and isinstance(server, Http):
        polled = rng.sample(clusters, min(count, len(clusters)))
        hub.tips_of({c: agents.fleet.cluster_tips[c] for c in polled})
        base = server.tips_url()
        etags = {c: tip_get(f"{base}/{file_name(c)}", None) for c in polled}
        out.append(closed_loop(server, "tip-304", polled,
                               lambda c: tip_get(f"{base}/{file_name(c)}", etags[c]), threads))
    return out
