"""`python -m bench.gitsim`: the before/after Git budget at N clusters on this machine.

    python -m bench.gitsim --clusters 1000 [--servers http,daemon] [--seconds 30]
        [--after-heartbeat 300] [--after-shards 4] [--after-tip-poll 0] [--json out.json]

Steps, each printed with what is measured and what is computed:
1. the real agent's step loop on a virtual clock, before and after (bench.gitsim.schedule):
   Git requests per cluster per hour, change-to-fetch delay;
2. per fleet size and server: a real-time run of every cluster's schedule (bench.gitsim.load),
   before and after, then per-request costs (bench.gitsim.probe) on the same repositories;
3. the model (bench.gitsim.model) fed with those costs: offered load at N, and its check
   against the real-time runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.gitsim import model
from bench.gitsim.clients import Agents
from bench.gitsim.hub import HubWriter
from bench.gitsim.load import Result, Schedule, run
from bench.gitsim.probe import Cost, probe
from bench.gitsim.repo import (
    Fleet,
    add_statuses,
    borrow,
    build_seed,
    cluster_refs,
    status_refs,
)
from bench.gitsim.schedule import AgentMode, measure_modes
from bench.gitsim.servers import Daemon, Http
from gitfleet.hub.tipsafety import SafetyChoice
from gitfleet.model.heartbeats import automatic_interval, default_tolerance
from gitfleet.model.statusshards import StatusRepository, StatusShards
from gitfleet.state.signing import SigningKey


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.gitsim", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clusters", default="1000", help="fleet sizes, comma-separated")
    p.add_argument("--servers", default="http,daemon", help="http and/or daemon")
    p.add_argument("--seconds", type=float, default=30.0, help="each real-time run")
    p.add_argument("--drain", type=float, default=0.0,
                   help="seconds after a run in which a changed cluster that has not fetched "
                   "its change yet (the workers lagged) fetches again until it has it; 0: the "
                   "run's window alone is the measurement")
    p.add_argument("--workers", type=int, default=6, help="client threads of a real-time run")
    p.add_argument("--probe-count", type=int, default=60)
    p.add_argument("--changes", type=int, default=50, help="branches moved in each run")
    p.add_argument("--stopped-share", type=float, default=0.01)
    p.add_argument("--before-interval", type=float, default=10.0)
    p.add_argument("--before-heartbeat", type=float, default=60.0)
    p.add_argument("--after-heartbeat", default="auto",
                   help="seconds, or auto: fleet.yaml's automatic interval (model.heartbeats)")
    p.add_argument("--after-jitter", type=float, default=0.1)
    p.add_argument("--after-safety", default="auto",
                   help="the tip poller's safety fetch, seconds, or auto: what the hub signs "
                   "into the tip documents for N clusters (gitfleet.hub.tipsafety)")
    p.add_argument("--after-tip-poll", type=float, default=0.0,
                   help="seconds between tip polls; 0: the hub's long-poll")
    p.add_argument("--after-shards", type=int, default=4, help="status repositories")
    p.add_argument("--after-narrow", action="store_true",
                   help="push URLs that advertise only the pusher's own status branch (HTTP)")
    p.add_argument("--virtual-hours", type=float, default=0.5,
                   help="virtual time of the agent schedule measurement")
    p.add_argument("--change-every", type=float, default=607.0,
                   help="virtual seconds between changes in the agent schedule measurement")
    p.add_argument("--daemon-max-connections", type=int, default=1024,
                   help="git daemon --max-connections (its own default, 32, refuses a burst)")
    p.add_argument("--skip-schedule", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", type=Path, help="write every figure here")
    return p.parse_args(argv)


def _usage() -> float:
    ru_self = resource.getrusage(resource.RUSAGE_SELF)
    ru_kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru_self.ru_utime + ru_self.ru_stime + ru_kids.ru_utime + ru_kids.ru_stime


def _table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        out.append("| " + " | ".join("" if r.get(k) is None else str(r.get(k))
                                     for k in keys) + " |")
    return "\n".join(out)


class Size:
    """One fleet size: the seed, and per server its repositories and runs."""

    def __init__(self, args: argparse.Namespace, n: int, work: Path, rng: random.Random):
        self.args, self.n, self.work, self.rng = args, n, work, rng
        t = time.perf_counter()
        self.fleet: Fleet = build_seed(work / "seed.git", n, now=time.time())
        self.build_seconds = time.perf_counter() - t
        self.key = SigningKey.generate()
        self.stopped = set(rng.sample(self.fleet.clusters,
                                      max(1, int(n * args.stopped_share))))

    def schedules(self) -> list[Schedule]:
        a = self.args
        beat = after_heartbeat(a, self.n)
        return [Schedule("before", a.before_interval, a.before_heartbeat),
                Schedule("after", after_safety(a, self.n), beat, a.after_jitter,
                         tip_poll=a.after_tip_poll, tolerance=default_tolerance(beat))]

    def _last_beats(self, sched: Schedule, start: float) -> dict[str, float]:
        h, d = sched.heartbeat, self.args.seconds
        tolerance = sched.tolerance or 3 * h
        # live: a uniform phase over one interval, as a fleet that has run for a while has;
        # load.run makes each one's first beat exactly one interval after it, so the run's
        # first seconds see the steady push rate (seeding the phases over h × (1 - jitter)
        # with a jittered first beat left the first 2 × jitter × h seconds nearly empty:
        # a 30-s run at 10,000 clusters and 600-s beats measured a quarter of the pushes)
        return {c: (start - tolerance + d / 2 if c in self.stopped
                    else start - self.rng.uniform(0, h)) for c in self.fleet.clusters}

    def run_server(self, server: Daemon | Http, base: Path,
                   tips: Http) -> tuple[list[Result], list[Cost]]:
        a, fleet = self.args, self.fleet
        results: list[Result] = []
        costs: list[Cost] = []
        for sched in self.schedules():
            name = f"{server.kind}-{sched.name}"
            # the run starts at `start`, after the repositories are built (a few seconds at
            # 10,000 clusters), so the seeded heartbeats sit exactly where a live fleet's are
            start = time.time() + 5 + self.n / 1000
            statuses = add_statuses(fleet, name, interval=sched.heartbeat,
                                    tolerance=sched.tolerance,
                                    last_beat=self._last_beats(sched, start))
            shards = a.after_shards if sched.name == "after" else 0
            fleet_repo = f"{name}.git"
            refs = cluster_refs(fleet)
            status_url: dict[str, str] = {}
            status_repos = [base / fleet_repo]
            if shards:
                members = shard_members(fleet.clusters, shards, f"{name}-status-")
                status_repos = []
                for rname, cs in sorted(members.items()):
                    status_repos.append(borrow(fleet.seed, base / f"{rname}.git",
                                               refs=status_refs(statuses, cs)))
                    for c in cs:
                        status_url[c] = (server.narrow_url(c, f"{rname}.git")
                                         if a.after_narrow and isinstance(server, Http)
                                         else server.url(f"{rname}.git"))
            else:
                refs |= status_refs(statuses, fleet.clusters)
            repo = borrow(fleet.seed, base / fleet_repo, refs=refs)
            url = server.url(fleet_repo)
            for c in fleet.clusters:
                status_url.setdefault(c, (server.narrow_url(c, fleet_repo)
                                          if a.after_narrow and sched.name == "after"
                                          and isinstance(server, Http) else url))
            agents = Agents(fleet, statuses, self.work / f"agents-{name}",
                            fetch_url=dict.fromkeys(fleet.clusters, url),
                            status_url=status_url)
            hub = HubWriter(repo, self.work / "tips", self.key)
            print(f"  {name}: real-time run, {a.seconds:g} s ...", file=sys.stderr)
            res = run(server, agents, hub, sched, duration=a.seconds, workers=a.workers,
                      changes=a.changes, stopped=self.stopped, status_repos=status_repos,
                      rng=self.rng, tips=tips, start=start, drain=a.drain)
            results.append(res)
            print(f"  {name}: probes ...", file=sys.stderr)
            live = [c for c in fleet.clusters if c not in self.stopped]
            if sched.name == "before":
                got = probe(server, agents, hub, live, count=a.probe_count, threads=4,
                            rng=self.rng)
            else:
                got = probe(server, agents, hub, live, count=a.probe_count, threads=4,
                            rng=self.rng, kinds=("push-heartbeat",))
            for cost in got:
                cost.kind = f"{cost.kind}@{sched.name}"
            costs += got
        return results, costs


def shard_members(names: list[str], shards: int, prefix: str) -> dict[str, list[str]]:
    """Status repository name -> its clusters, by fleet.yaml's own rule (StatusShards)."""
    repos = StatusShards(tuple(StatusRepository(name=f"{prefix}{k}", url="")
                               for k in range(shards)))
    members: dict[str, list[str]] = {}
    for c in names:
        repo = repos.repository_of(c, {})
        assert repo is not None
        members.setdefault(repo.name, []).append(c)
    return members


def after_heartbeat(args: argparse.Namespace, n: int) -> float:
    """--after-heartbeat, or `auto`: what fleet.yaml's automatic interval gives the busiest
    status repository of N clusters (gitfleet.model.heartbeats.automatic_interval)."""
    if args.after_heartbeat != "auto":
        return float(args.after_heartbeat)
    if not args.after_shards:
        return automatic_interval(n)
    names = [f"c{i:05d}" for i in range(n)]
    busiest = max(len(v) for v in shard_members(names, args.after_shards, "s").values())
    return automatic_interval(busiest)


def after_safety(args: argparse.Namespace, n: int) -> float:
    """--after-safety, or `auto`: the safety fetch interval the hub chooses for N clusters
    and signs into the tip documents (gitfleet.hub.tipsafety, default budget)."""
    if args.after_safety != "auto":
        return float(args.after_safety)
    return float(SafetyChoice(fixed=None).for_fleet(n))


def _refs_of(kind: str, n: int, args: argparse.Namespace) -> int:
    """The refs a probe's repository advertised to that request."""
    if kind.endswith("@after"):
        if args.after_narrow:
            return 1
        return n // max(args.after_shards, 1) if args.after_shards else 2 * n
    return 2 * n


def main(argv: list[str] | None = None) -> int:
    """The harness; the simulated agents' warnings are silenced for the run only, so an
    in-process caller (tests/gitsim) gets its logging back as it was."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        return _run(argv)
    finally:
        logging.disable(previous)


def _run(argv: list[str] | None) -> int:
    args = _args(argv)
    rng = random.Random(args.seed)
    sizes = [int(x) for x in args.clusters.split(",") if x]
    kinds = [k for k in args.servers.split(",") if k]
    wall0, cpu0 = time.perf_counter(), _usage()
    report: dict[str, Any] = {"args": {k: (str(v) if isinstance(v, Path) else v)
                                       for k, v in vars(args).items()},
                              "load_before": os.getloadavg(), "schedule": [], "sizes": []}
    per_hour: dict[str, dict[str, float]] = {}
    if not args.skip_schedule:
        print("agent schedule on a virtual clock ...", file=sys.stderr)
        modes = [AgentMode("before", interval=args.before_interval,
                           heartbeat=args.before_heartbeat),
                 AgentMode("after", interval=args.before_interval,
                           heartbeat=after_heartbeat(args, sizes[-1]), jitter=args.after_jitter,
                           tips=True,
                           tip_poll=args.after_tip_poll,
                           safety=after_safety(args, sizes[-1]))]
        offered = measure_modes(modes, seconds=3600 * args.virtual_hours,
                                change_every=args.change_every, seed=args.seed)
        report["schedule"] = [o.row() for o in offered]
        per_hour = {o.mode: o.per_second() for o in offered}
        print("\n### The real agent's Git requests (measured: Agent.step on a virtual clock, "
              "real Git and kubesim)\n")
        print(_table(report["schedule"], ["mode", "virtual_seconds", "steps", "fetches",
                                          "pushes", "tip_polls", "changes",
                                          "fetches_per_hour", "pushes_per_hour",
                                          "tip_polls_per_hour", "change_to_fetch_mean_s",
                                          "change_to_fetch_max_s", "wall_s"]))
    all_costs: list[dict[str, Any]] = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix=f"gitsim-{n}-") as tmp:
            work = Path(tmp)
            print(f"{n} clusters: building the repositories ...", file=sys.stderr)
            size = Size(args, n, work, rng)
            entry: dict[str, Any] = {"clusters": n, "build_s": round(size.build_seconds, 1),
                                     "runs": [], "costs": []}
            for kind in kinds:
                base = work / f"srv-{kind}"
                base.mkdir()
                server: Daemon | Http = (
                    Daemon(base, max_connections=args.daemon_max_connections)
                    if kind == "daemon" else Http(base, work / f"nginx-{kind}", work / "tips"))
                # git daemon has no HTTP side: its tip documents come from a static nginx
                tips = server if isinstance(server, Http) else Http(
                    base, work / "nginx-tips", work / "tips")
                try:
                    server.up()
                    if tips is not server:
                        tips.up()
                    results, costs = size.run_server(server, base, tips)
                finally:
                    server.down()
                    tips.down()
                entry["runs"] += [r.row() for r in results]
                for c in costs:
                    row = c.row() | {"clusters": n, "refs": _refs_of(c.kind, n, args)}
                    entry["costs"].append(row)
                    all_costs.append(row)
            report["sizes"].append(entry)
            print(f"\n### {n} clusters: real-time runs (measured)\n")
            print(_table(entry["runs"], ["scenario", "server", "seconds",
                                         "git_requests_per_s", "fetches_per_s",
                                         "pushes_per_s", "http_requests_per_s",
                                         "bytes_out_per_s", "server_cpu_share", "lag_p99_s",
                                         "change_to_fetch_p50_s", "change_to_fetch_p99_s",
                                         "change_not_fetched", "errors",
                                         "judged_live_as_lost", "judged_stopped_as_alive",
                                         "live_silent_past_tolerance", "client_cpu_s"]))
            print(f"\n### {n} clusters: per-request cost (measured, closed loop, 4 clients)\n")
            print(_table(entry["costs"], ["kind", "server", "refs", "count",
                                          "achieved_per_s", "server_cpu_ms_per_request",
                                          "latency_p50_ms", "latency_p99_ms",
                                          "http_requests_per_request",
                                          "bytes_out_per_request", "errors"]))
    report["model"] = _model(args, all_costs, per_hour, report)
    report["cpu_s"] = round(_usage() - cpu0, 1)
    report["wall_s"] = round(time.perf_counter() - wall0, 1)
    report["load_after"] = os.getloadavg()
    print(f"\nharness: wall {report['wall_s']} s, CPU {report['cpu_s']} s (this process and "
          f"its git children; servers' CPU is in the tables); load average before "
          f"{report['load_before'][0]:.2f}, after {report['load_after'][0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    return 0


def _model(args: argparse.Namespace, costs: list[dict[str, Any]],
           per_hour: dict[str, dict[str, float]], report: dict[str, Any]) -> dict[str, Any]:
    """Fit the per-request costs and print the offered load at each size (computed)."""
    out: dict[str, Any] = {}
    for server in sorted({c["server"] for c in costs}):
        def line(kind: str, field: str, server: str = server) -> model.Line:
            pts = [(c["refs"], c[field] / (1000 if field.endswith("_ms_per_request") else 1))
                   for c in costs if c["server"] == server and c["kind"].startswith(kind + "@")
                   and c[field] is not None]
            return model.Line.fit(pts) if pts else model.Line(0.0, 0.0)
        fit = model.Costs(
            cpu={k: line(k, "server_cpu_ms_per_request")
                 for k in ("fetch-noop", "fetch-change", "push-heartbeat")},
            bytes_out={k: line(k, "bytes_out_per_request")
                       for k in ("fetch-noop", "fetch-change", "push-heartbeat")})
        out[server] = {"cpu": {k: vars(v) for k, v in fit.cpu.items()},
                       "bytes_out": {k: vars(v) for k, v in fit.bytes_out.items()}}
        rows = []
        for n in sorted({c["clusters"] for c in costs} | {100_000}):
            for label, s in _settings(args, n).items():
                load = model.offered(s, fit)
                rows.append({"clusters": n, "scenario": label} | load.row())
        out[server]["offered"] = rows
        print(f"\n### Offered load at N (computed: model.offered with the {server} costs "
              "fitted as a + b x refs)\n")
        print(_table(rows, ["clusters", "scenario", "fetches", "pushes",
                            "fleet_repo_requests", "status_repo_requests", "bytes_out",
                            "server_cpu", "tip_requests", "p50", "p99"]))
    if per_hour:
        out["schedule_per_cluster_per_s"] = per_hour
    return out


def _settings(args: argparse.Namespace, n: int) -> dict[str, model.Settings]:
    change = 1 / 3600   # one change per cluster per hour
    shards_100k = max(args.after_shards, 1) * 10
    after = dict(fetch_period=after_safety(args, n), change_rate=change, tips=True,
                 tip_poll=args.after_tip_poll, narrow=args.after_narrow)
    out = {"before": model.Settings(n, args.before_interval, args.before_heartbeat,
                                    change_rate=change),
           "after": model.Settings(n, shards=args.after_shards,
                                   heartbeat=after_heartbeat(args, n), **after)}
    # the defaults (issue 34 item 3): tips announced by fleet.yaml `tips.url` and followed by
    # every agent, the safety fetch `auto` (every agent on 0.2.0 or later), heartbeat `auto`,
    # status in the fleet repository (no status.repositories)
    out["defaults"] = model.Settings(n, float(SafetyChoice().for_fleet(n)),
                                     automatic_interval(n), change_rate=change, tips=True)
    if n >= 100_000:
        out[f"after, {shards_100k} shards"] = model.Settings(
            n, shards=shards_100k, heartbeat=automatic_interval(n // shards_100k), **after)
    return out
