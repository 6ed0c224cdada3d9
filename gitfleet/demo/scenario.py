"""The demo's story: converge, review and push a change, repair a drift, scale a workload out
on a load rise (FederatedHPA; see gitfleet.demo.autoscale), show the end, and fail a cluster
over (its agent stops; the hub marks it Unknown and moves its Divided share).

Everything is real: a bare fleet repo served by `git daemon` on 127.0.0.1, the hub and two
agents as `gitfleet` processes, two kubesim API servers, the official Kubernetes client. The
demo only watches Git (as `gitfleet get` does) and, for the drift, plays an operator who
scales a Deployment by hand.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from gitfleet.charts.renderer import Charts
from gitfleet.demo.autoscale import CRON_FILE, set_steady_load, show_autoscaling
from gitfleet.demo.chart import show_chart
from gitfleet.demo.example import DEMO_CLUSTERS, PUSH_CLUSTERS, demo_fleet
from gitfleet.demo.processes import Supervisor, free_port, wait_listening
from gitfleet.demo.progress import Watcher
from gitfleet.diff.engine import diff_revisions
from gitfleet.diff.text import render_text
from gitfleet.fleetview.tables import RESOURCES, show
from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.kubesim import KubeSim
from gitfleet.state.git import Git, init_repo

CHANGE_FILE = "templates/web/web.yaml"
CHANGE_FROM, CHANGE_TO = "replicas: 6 ", "replicas: 9 "
DRIFT = ("apps/v1", "Deployment", "web", "web")
COLLECTOR = ("apps/v1", "Deployment", "metrics", "collector")
# Short failover timings for the demo's fleet (the defaults are minutes: 5m + 300 s).
FAILOVER = b"failover:\n  evictionTimeout: 1s\n  tolerationSeconds: 2\n  purgeMode: Gracefully\n"


@dataclass(frozen=True)
class DemoSettings:
    """Bounds and intervals of the demo (all waits are bounded)."""

    converge_timeout: float = 40.0
    change_timeout: float = 25.0
    drift_timeout: float = 20.0
    failover_timeout: float = 45.0
    autoscale_timeout: float = 40.0
    agent_interval: str = "1s"
    heartbeat_interval: str = "3s"
    collect_interval: str = "1s"      # the agents' metrics of autoscaled workloads
    hub_interval: str = "1s"
    controller_delay: float = 0.3
    stop_timeout: float = 5.0
    start_timeout: float = 10.0


def _git(cwd: Path, *args: str) -> str:
    env_args = ["-c", "user.name=gitfleet demo", "-c", "user.email=demo@gitfleet.invalid",
                "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
    proc = subprocess.run(["git", *env_args, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.strip()


class Demo:
    def __init__(self, *, workdir: Path | None = None, settings: DemoSettings | None = None,
                 out: TextIO | None = None) -> None:
        self.settings = settings or DemoSettings()
        self.out = out or sys.stdout
        self._own_dir = workdir is None
        self.dir = Path(tempfile.mkdtemp(prefix="gitfleet-demo-")) if workdir is None \
            else workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.supervisor = Supervisor(self.dir / "logs", stop_timeout=self.settings.stop_timeout)
        self.sims: list[KubeSim] = []
        self.push_sims: list[KubeSim] = []   # Push-mode clusters, applied by the hub
        self.started = time.monotonic()

    def print(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    # -- the story ------------------------------------------------------------------------------

    def run(self) -> int:
        try:
            self._run()
            return 0
        finally:
            self.stop()

    def _run(self) -> None:
        s = self.settings
        (self.dir / "logs").mkdir(exist_ok=True)
        bare = self.dir / "served" / "fleet.git"
        git = init_repo(bare, bare=True, branch="main")
        port = free_port()
        daemon = self.supervisor.start("git-daemon", [
            "git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
            f"--base-path={self.dir / 'served'}", "--export-all", "--enable=receive-pack",
            str(self.dir / "served")])
        wait_listening(port, timeout=s.start_timeout, alive=daemon.proc)
        url = f"git://127.0.0.1:{port}/fleet.git"
        work = self._push_example(url)
        self.print("gitfleet demo: a fleet repo, a hub and three clusters on this machine "
                   "(all stopped when the demo ends)")
        self.print(f"  fleet repo  {url}  (the worked example, clusters "
                   f"{', '.join((*DEMO_CLUSTERS, *PUSH_CLUSTERS))})")
        kubeconfigs = self.dir / "push-kubeconfigs"
        for name in PUSH_CLUSTERS:
            sim = KubeSim(controller_delay=s.controller_delay, name=name).start()
            self.push_sims.append(sim)
            sim.write_kubeconfig(kubeconfigs / f"{name}.yaml")
        self.supervisor.gitfleet("hub", "hub", "--repo", str(bare), "--interval",
                                 s.hub_interval, "--push-kubeconfigs", str(kubeconfigs),
                                 "--push-agentless", "--push-interval", s.agent_interval,
                                 "--push-heartbeat-interval", s.heartbeat_interval,
                                 "--cache-dir", str(self.dir / "hub-cache"))
        for name in DEMO_CLUSTERS:
            # pods=True: the FederatedHPA needs the pods (and their metrics) of its workload
            sim = KubeSim(controller_delay=s.controller_delay, name=name, pods=True).start()
            self.sims.append(sim)
            set_steady_load([sim])
            kubeconfig = sim.write_kubeconfig(self.dir / f"{name}.kubeconfig")
            self.supervisor.gitfleet(
                f"agent-{name}", "agent", "--repo", url, "--cluster", name,
                "--kubeconfig", str(kubeconfig), "--feature-gates", "Recovery=true",
                "--interval", s.agent_interval, "--heartbeat-interval", s.heartbeat_interval,
                "--collect-interval", s.collect_interval,
                "--workdir", str(self.dir / "agents" / name))
            self.print(f"  cluster     {name}: kubesim at {sim.url}, agent with Recovery on")
        for name, sim in zip(PUSH_CLUSTERS, self.push_sims, strict=True):
            self.print(f"  cluster     {name}: kubesim at {sim.url}, Push mode: no agent, "
                       "the hub's push worker applies")
        self.print(f"  hub         watching {bare}")
        self.print(f"  logs        {self.dir / 'logs'}")
        self.print()
        watcher = Watcher(git, self.out, self.started, check=self.supervisor.check)
        head = _git(work, "rev-parse", "HEAD")
        watcher.until(lambda p: p.source_commit == head and p.converged,
                      timeout=s.converge_timeout, what="first convergence")
        watcher.say("the fleet converged")
        for name in PUSH_CLUSTERS:
            watcher.say(f"{name}: applied by the hub's push worker "
                        f"({self._pushed_by(git, name)})")
        self.print()
        self._tables(git, ("clusters", "subscriptions"))

        self.print()
        self.print(f"== a change: {CHANGE_FILE} gets {CHANGE_TO.strip()} (was "
                   f"{CHANGE_FROM.strip()}) ==")
        path = work / CHANGE_FILE
        path.write_text(path.read_text().replace(CHANGE_FROM, CHANGE_TO, 1))
        _git(work, "commit", "-qam", "web: 9 replicas")
        self.print("what `gitfleet diff` shows the reviewer:")
        diff = diff_revisions(work, "HEAD~1", "HEAD")
        for line in render_text(diff, diffs=False).splitlines():
            self.print(f"  {line}" if line else "")
        _git(work, "push", "-q", "origin", "HEAD:main")
        head = _git(work, "rev-parse", "HEAD")
        watcher.say(f"pushed {head[:10]} to {url}")
        watcher.until(lambda p: p.source_commit == head and p.converged,
                      timeout=s.change_timeout, what="the change")
        web = {name: self._replicas(sim) for name, sim in zip(DEMO_CLUSTERS, self.sims,
                                                                strict=True)}
        watcher.say("the change is live: web replicas " +
                    ", ".join(f"{c}={r}" for c, r in web.items()))

        self.print()
        victim, sim = DEMO_CLUSTERS[0], self.sims[0]
        wanted = web[victim]
        self.print(f"== drift: someone scales Deployment web/web in {victim} to 1 by hand ==")
        self._scale(sim, 1)
        watcher.say(f"{victim}: web/web scaled to 1 behind gitfleet's back")
        deadline = time.monotonic() + s.drift_timeout
        while self._replicas(sim) != wanted:
            self.supervisor.check()
            if time.monotonic() > deadline:
                raise TimeoutError(f"drift: web/web in {victim} not put back after "
                                   f"{s.drift_timeout:g}s")
            time.sleep(0.1)
        watcher.say(f"{victim}: Recovery put web/web back to {wanted} replicas")
        note = self._recovery_note(git, victim, deadline=time.monotonic() + 5)
        if note:
            watcher.say(f"{victim}'s status branch says: {note}")
        watcher.until(lambda p: p.converged, timeout=s.drift_timeout, what="after the drift")

        self.print()
        show_chart(work=work, git=_git, clusters=DEMO_CLUSTERS, sims=self.sims, watcher=watcher,
                   timeout=s.change_timeout, print_=self.print,
                   diff_text=lambda: render_text(diff_revisions(
                       work, "HEAD~1", "HEAD", charts=Charts(self.dir / "diff-charts")),
                       diffs=False))

        self.print()
        show_autoscaling(git=git, clusters=DEMO_CLUSTERS, sims=self.sims, watcher=watcher,
                         timeout=s.autoscale_timeout, rule_file=demo_fleet()[CRON_FILE],
                         check=self.supervisor.check, print_=self.print,
                         tables=lambda names: self._tables(git, names))
        watcher.until(lambda p: p.converged, timeout=s.autoscale_timeout,
                      what="after the scale-out")

        self.print()
        self.print("== where everything ended ==")
        self._tables(git, ("clusters", "subscriptions"))
        self.print()
        self._failover(git, watcher)
        self.print()
        self.print("next: `gitfleet init my-fleet` starts a fleet repo of your own; "
                   "`gitfleet get` and `gitfleet status` read any fleet repo, local or remote")

    # -- helpers --------------------------------------------------------------------------------

    def _push_example(self, url: str) -> Path:
        work = self.dir / "work"
        work.mkdir(parents=True, exist_ok=True)
        files = demo_fleet()
        files["fleet.yaml"] = files["fleet.yaml"] + FAILOVER
        for rel, data in files.items():
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        _git(work, "init", "-q", "-b", "main")
        _git(work, "add", "-A")
        _git(work, "commit", "-qm", "the worked example")
        _git(work, "remote", "add", "origin", url)
        _git(work, "push", "-q", "origin", "main")
        return work

    def _pushed_by(self, git: Git, cluster: str) -> str:
        """Who wrote the cluster's last heartbeat: the hub's worker, for an agentless cluster."""
        from gitfleet.layout import Branches
        from gitfleet.wire.status import ClusterStatus

        raw = git.read_blob(Branches().status(cluster), "status.yaml")
        status = ClusterStatus.from_yaml(raw) if raw else None
        if status is None or status.heartbeat is None:
            return "no heartbeat yet"
        return f"heartbeat from {status.heartbeat.agent_version}, sync {status.sync.result}"

    def _tables(self, git: Git, resources: tuple[str, ...]) -> None:
        from gitfleet.fleetview.rows import View
        from gitfleet.fleetview.snapshot import read_snapshot

        view = View(read_snapshot(git), time.time())
        for i, name in enumerate(resources):
            rows_of, columns, _ = RESOURCES[name]
            if i:
                self.print()
            self.print(f"$ gitfleet get {name}")
            show(rows_of(view), columns, "table")

    def _failover(self, git: Git, watcher: Watcher) -> None:
        """One cluster's agent stops: Unknown after 3 heartbeats, tainted, its Divided share
        (the metrics collector, the web Deployment) moves to the other cluster, and the old
        copies leave the state once the new ones are healthy (purge mode Gracefully)."""
        from gitfleet.fleetview.rows import View, cluster_rows
        from gitfleet.fleetview.snapshot import read_snapshot

        s = self.settings
        survivor, victim = DEMO_CLUSTERS[0], DEMO_CLUSTERS[1]
        sim = self.sims[0]
        before = self._replicas(sim, COLLECTOR)
        self.print(f"== failover: the agent of {victim} stops (the fleet tolerates "
                   "an unreachable cluster for 2 s) ==")
        self.supervisor.stop(f"agent-{victim}")
        watcher.say(f"stopped the agent of {victim}; its cluster keeps what it runs")
        deadline = time.monotonic() + s.failover_timeout

        def wait(done: Callable[[], bool], what: str) -> None:
            while not done():
                self.supervisor.check()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"failover: {what} not seen after "
                                       f"{s.failover_timeout:g}s")
                time.sleep(0.2)

        def row() -> dict[str, Any]:
            view = View(read_snapshot(git), time.time())
            return next(r for r in cluster_rows(view) if r["name"] == victim)

        wait(lambda: row()["condition"] == "Unknown", f"{victim} Unknown")
        watcher.say(f"the hub marks {victim} Unknown: no heartbeat for 3 intervals")
        wait(lambda: "NoExecute" in row()["taints"], f"{victim}'s NoExecute taint")
        watcher.say(f"{victim} tainted: {row()['taints']}")
        wait(lambda: self._replicas(sim, COLLECTOR) == 4, "the collector's move")
        watcher.say(f"{survivor} now runs metrics/collector with 4 replicas (was {before})")
        wait(lambda: all(e.purged for e in read_snapshot(git).evictions) and
             bool(read_snapshot(git).evictions), "the purge of the old copies")
        log = git.run("log", "-8", "--format=%B", "refs/heads/gitfleet/state").decode()
        for line in reversed(dict.fromkeys(line for line in log.splitlines()
                                           if line.startswith(("failover:", "old copy")))):
            watcher.say(f"state commit: {line}")
        self.print()
        self._tables(git, ("evictions",))

    def _replicas(self, sim: KubeSim, which: tuple[str, str, str, str] = DRIFT) -> int | None:
        obj = sim.get_object(which[0], which[1], which[3], which[2])
        if obj is None:
            return None
        value = (obj.get("spec") or {}).get("replicas")
        return value if isinstance(value, int) else None

    def _scale(self, sim: KubeSim, replicas: int) -> None:
        """What an operator's `kubectl scale` does: another field manager takes the field."""
        client = KubeClient(sim.api_client(), KubeSettings(field_manager="kubectl"))
        client.apply({"apiVersion": DRIFT[0], "kind": DRIFT[1],
                      "metadata": {"namespace": DRIFT[2], "name": DRIFT[3]},
                      "spec": {"replicas": replicas}}, force=True)

    def _recovery_note(self, git: Git, cluster: str, *, deadline: float) -> str:
        from gitfleet.layout import Branches

        ref = Branches().status(cluster)
        while time.monotonic() < deadline:
            log = git.run("log", "-20", "--format=%B", ref, check=False).decode()
            for line in log.splitlines():
                if line.strip().startswith(("recovered", "drift")):
                    return line.strip()
            time.sleep(0.2)
        return ""

    def stop(self) -> None:
        """Stop every process and server the demo started, and remove its files."""
        t = time.monotonic()
        killed = self.supervisor.stop_all()
        for sim in (*self.sims, *self.push_sims):
            with contextlib.suppress(Exception):  # stopping must go on
                sim.stop()
        self.sims.clear()
        self.push_sims.clear()
        note = f" (killed: {', '.join(killed)})" if killed else ""
        self.print(f"stopped the hub, the agents, the clusters and git daemon in "
                   f"{time.monotonic() - t:.1f}s{note}")
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
