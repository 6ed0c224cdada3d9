"""Dashboard benchmark: API and page timings on a synthetic fleet with a status per cluster.

    .venv/bin/python bench/bench_dashboard.py [--clusters 1000] [--templates 20] [--units 10]

A fleet from `bench/fleetgen.py` is rendered by an in-process `Hub` (one round); then every
cluster gets a status branch as an agent writes it (heartbeat now, every Description Success,
every object Healthy), all in one `git fast-import`. The dashboard then serves that repo on
127.0.0.1 (uvicorn, as `gitfleet dashboard` does) and this measures: the first page (server
start to the grid's first answer, while the rest of the fleet is read), the whole fleet read,
per API route the first answer and the median of 20 warm ones, and status commits (a new
heartbeat time, as an agent writes) until the API serves them; in headless Chromium, the time
from navigation to each view's rows on screen and from a status commit to its heartbeat on the
cluster page (no reload). CPU is this process's (server and client) and its git children's,
with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_hub import ENV, git, make_repo  # noqa: E402
from fleetgen import cluster_name, generate  # noqa: E402

from gitfleet.clock import isoformat  # noqa: E402
from gitfleet.dashboard.app import dashboard_app  # noqa: E402
from gitfleet.dashboard.source import FleetSource  # noqa: E402
from gitfleet.httpthread import HTTPThread  # noqa: E402
from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.state.git import Git  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402
from gitfleet.wire.status import (  # noqa: E402
    Change,
    ClusterStatus,
    DescriptionStatus,
    Health,
    Heartbeat,
    ObjectStatus,
    Phase,
    SyncResult,
    SyncStatus,
)

STATE = "refs/heads/gitfleet/state"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def statuses(repo: Path, state: str, source: str) -> bytes:
    """A fast-import stream: one status branch per cluster, as its agent would write it."""
    listing = Git(repo).ls_tree(state, "clusters/")
    per: dict[str, dict[tuple[str, str], list[tuple[str, str, str]]]] = {}
    for path in listing:
        parts = path.split("/")
        if len(parts) != 5 or parts[4] == "description.yaml":
            continue
        group_kind = parts[4][:-5].split("_")
        kind, ns, name = group_kind[1], group_kind[2], "_".join(group_kind[3:])
        per.setdefault(parts[1], {}).setdefault((parts[2], parts[3]), []).append((kind, ns, name))
    now = isoformat(time.time())
    out = []
    for i, (cluster, descs) in enumerate(sorted(per.items())):
        status = ClusterStatus(
            cluster=cluster,
            heartbeat=Heartbeat(time=now, interval_seconds=3600, healthz=True, livez=True,
                                readyz=True, kubernetes_version="v1.31.0", agent_version="0.1.0"),
            sync=SyncStatus(state_commit=state, source_commit=source, time=now,
                            result=SyncResult.SYNCED),
            descriptions=tuple(DescriptionStatus(
                namespace=ns, name=name, phase=Phase.SUCCESS, source_commit=source,
                objects=tuple(ObjectStatus("v1", k, o_ns, o_name, Change.UNCHANGED,
                                           Health.HEALTHY) for k, o_ns, o_name in objs))
                for (ns, name), objs in sorted(descs.items())))
        data = status.to_yaml().encode()
        out.append(f"commit refs/heads/gitfleet/status/{cluster}\n"
                   f"mark :{i + 1}\ncommitter bench <bench@example.test> {int(time.time())} +0000\n"
                   f"data 17\n{cluster[:6]}: heartbeat\n".encode()
                   + f"M 100644 inline status.yaml\ndata {len(data)}\n".encode() + data + b"\n")
    return b"".join(out)


def get(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as resp:
        body = resp.read()
    return time.perf_counter() - started, len(body)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--templates", type=int, default=20)
    p.add_argument("--units", type=int, default=10)
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--commits", type=int, default=5, help="status commits timed")
    p.add_argument("--keep", metavar="DIR",
                   help="make the fleet repo in DIR (or use the one there) and keep it")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitfleet-bench-dash-") as tmp:
        work = Path(a.keep) if a.keep else Path(tmp) / "fleet"
        if not (work / ".git").exists():
            t0 = time.perf_counter()
            make_repo(work, generate(clusters=a.clusters, templates=a.templates, units=a.units))
            Hub(open_store(str(work)), settings=HubSettings(fleet_status=False)).step()
            state = git(work, "rev-parse", STATE).strip()
            source = git(work, "rev-parse", "main").strip()
            t1 = time.perf_counter()
            subprocess.run(["git", "fast-import", "--quiet"], cwd=work, env=ENV, check=True,
                           input=statuses(work, state, source))
            t2 = time.perf_counter()
            print(f"{a.clusters} clusters x {a.units} units: rendered in {t1 - t0:.1f}s, "
                  f"{a.clusters} status branches in {t2 - t1:.1f}s")
        t3, c3 = time.perf_counter(), cpu()
        load = os.getloadavg()[0]
        server = HTTPThread("127.0.0.1", 0, dashboard_app(FleetSource(Git(work))),
                            name="bench-dashboard")
        server.start()       # the first read starts with the server, in the background
        url = "http://{}:{}/".format(*server.address)
        try:
            while True:      # the API answers 503 "reading the fleet" meanwhile
                try:
                    get(url + "api/fleet")
                    break
                except urllib.error.HTTPError as exc:
                    if exc.code != 503:
                        raise
                    time.sleep(0.05)
            print(f"load average at start {load:.1f}")
            print(f"first page served (server start to the grid's first answer): "
                  f"{time.perf_counter() - t3:.2f}s wall, {cpu() - c3:.2f}s CPU")
            while json.loads(urllib.request.urlopen(url + "api/fleet?limit=1").read()
                             )["partial"] is not None:
                time.sleep(0.2)
            print(f"whole fleet read (until no answer says 'partial'): "
                  f"{time.perf_counter() - t3:.1f}s wall, {cpu() - c3:.1f}s CPU")
            first = cluster_name(a.clusters // 2)
            routes = {"fleet (page 1)": "api/fleet", "fleet, label filter": "api/fleet?l=group%3Db",
                      "fleet, name search": "api/fleet?q=c00",
                      "fleet, last page": f"api/fleet?offset={a.clusters - 50}",
                      "cluster": f"api/cluster/{first}",
                      "application (page 1)": "api/app/app000/app000",
                      "application, last page": f"api/app/app000/app000?offset={a.clusters - 50}",
                      "history": "api/history", "version (poll)": "api/version"}
            rows = []
            for name, path in routes.items():
                cold, size = get(url + path)
                rows.append((name + ", first answer", cold, size))
                times = [get(url + path) for _ in range(20)]
                rows.append((name + ", warm median", statistics.median(t for t, _ in times),
                             times[0][1]))
            latencies, cpus = [], []
            for i in range(a.commits):
                time.sleep(1.0)
                moved_at, c4 = status_commit(work, first, i)
                while moved_at[1] not in urllib.request.urlopen(
                        url + f"api/cluster/{first}").read().decode():
                    time.sleep(0.02)
                latencies.append(time.perf_counter() - moved_at[0])
                cpus.append(cpu() - c4)
            rows.append((f"status commit -> served (median of {a.commits})",
                         statistics.median(latencies), 0))
            rows.append((f"status commit -> served (max of {a.commits})", max(latencies), 0))
            rows.append(("  CPU per status commit (median)", statistics.median(cpus), 0))
            a_b = json.loads(urllib.request.urlopen(url + "api/history", timeout=60).read())
            commits = [c["commit"] for c in a_b["commits"]]
            if len(commits) >= 1:
                t, size = get(f"{url}api/diff?a={commits[-1]}&b={commits[0]}&cluster={first}")
                rows.append(("diff (one cluster)", t, size))
            for name, t, size in rows:
                print(f"  {name:44s} {t * 1000:8.1f} ms  {size / 1024:8.1f} KiB")
            if not a.no_browser:
                browser_timings(url, first, work, a.commits)
            print(f"total CPU {cpu() - c3:.1f}s; load average now "
                  f"{os.getloadavg()[0]:.1f}")
        finally:
            server.stop()
    return 0


def cpu() -> float:
    """CPU seconds of this process and the git processes it waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def status_commit(work: Path, cluster: str, i: int) -> tuple[tuple[float, str], float]:
    """A status commit as the agent writes one (a new heartbeat time): ((when, the new
    heartbeat time), CPU then)."""
    branch = f"refs/heads/gitfleet/status/{cluster}"
    doc = git(work, "cat-file", "blob", f"{branch}:status.yaml")
    stamp = isoformat(time.time() + 1000 + i)       # a time no earlier commit had
    text = re.sub(r"(\n  time: ')[^']*'", lambda m: f"{m.group(1)}{stamp}'", doc, count=1)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=work, env=ENV,
                          input=text.encode(), capture_output=True, check=True
                          ).stdout.decode().strip()
    tree = subprocess.run(["git", "mktree"], cwd=work, env=ENV, capture_output=True, check=True,
                          input=f"100644 blob {blob}\tstatus.yaml\n".encode()
                          ).stdout.decode().strip()
    sha = git(work, "commit-tree", "-p", branch, "-m", f"{cluster}: heartbeat", tree).strip()
    c = cpu()
    git(work, "update-ref", branch, sha)
    return (time.perf_counter(), stamp), c


def browser_timings(url: str, cluster: str, work: Path, commits: int) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        try:
            page = b.new_page(viewport={"width": 1280, "height": 800})
            views = {"fleet (first page usable)": ("#/fleet", "#grid tbody tr"),
                     "cluster": (f"#/cluster/{cluster}", "ul.tree li"),
                     "application": ("#/app/app000/app000", ".bars a"),
                     "history": ("#/history", "tbody tr")}
            for name, (where, ready) in views.items():
                page.goto("about:blank")
                started = time.perf_counter()
                page.goto(url + where)
                page.wait_for_selector(ready, timeout=60_000)
                print(f"  page: {name:28s} {(time.perf_counter() - started) * 1000:8.1f} ms")
            page.goto(url + f"#/cluster/{cluster}")
            page.wait_for_selector("ul.tree li")
            seen = []
            for i in range(commits):
                time.sleep(1.0)
                (at, stamp), _ = status_commit(work, cluster, 100 + i)
                page.wait_for_selector(f'time[datetime="{stamp}"]', timeout=60_000)
                seen.append(time.perf_counter() - at)
            print(f"  page: status commit on screen (no reload): median "
                  f"{statistics.median(seen) * 1000:.0f} ms, max {max(seen) * 1000:.0f} ms "
                  f"({commits} commits)")
        finally:
            b.close()


if __name__ == "__main__":
    sys.exit(main())
