"""Benchmark: a plan of a one-file change over N clusters with tip documents (issue 33), from
the moment `gitfleet plan` has published its requests to the moment it has collected every
answer.

    .venv/bin/python bench/bench_plan_tips.py [--clusters 1000] [--templates 100] [--sample 3]

N real agents doing dry runs cannot run on one 2-core machine, so the run is in parts, each
real where it runs, and combined in a stated model (bench/README.md "Live plans with tip
documents"):

1. **The agent, real** (`--sample` clusters): kubesim holding the cluster's tree as a real agent
   applied it, the agent's `PlanReviewer` told of a request by its tip document (the hub's
   own document, decoded as the agent's tip poller decodes it): the look (one glob-refspec
   fetch), the dry run, the signed answer pushed. Times, and the API requests counted at the
   client beside a no-op sync's.
2. **The fleet's Git work, real, at N**: the fleet repository served by `git daemon`, a real
   hub (remote store, tip documents signed into its board) that rendered the fleet and reads
   every cluster's heartbeat (0.2.0: the documents list plans). `gitfleet plan`'s publish (one
   atomic push of N requests), the hub's next round (it fetches, finds the N requests and
   re-signs N documents), then N answerers, each the agent's own `PlanReviewer` (its fetch,
   its answer commit, its push, over a repository of its own) with the dry run replaced by
   the longest dry run of part 1, each starting when its agent would read the new document:
   at once for the agents whose request the hub's listener holds (`tip_slots` of the
   default 64 connections), after a uniform 0-11 s for the others (the tip poll of an agent
   not held: `--interval` 10 s, +-10 %). Meanwhile `collect` (as `gitfleet plan --wait`)
   polls for the answers.

The model adds what part 2 does not wait for: the hub learning of the push. With the Git
host's webhook (or a local repository's ref events) that is the debounce (0.05 s); without,
up to the hub's fetch interval (15 s).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleetgen  # noqa: E402
from bench_plan import Counting  # noqa: E402  (the real client, counting its requests)

from bench.gitsim.servers import tree_cpu  # noqa: E402
from gitfleet.agent.agent import Agent, AgentSettings  # noqa: E402
from gitfleet.agent.planreview import PlanReviewer, PlanReviewSettings  # noqa: E402
from gitfleet.charts.renderer import Charts  # noqa: E402
from gitfleet.clock import FakeClock  # noqa: E402
from gitfleet.hooks.install import PACK_HOOK, pack_script  # noqa: E402
from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.hub.tips import TipBoard  # noqa: E402
from gitfleet.hub.tipserver import tip_slots  # noqa: E402
from gitfleet.kube.client import KubeClient  # noqa: E402
from gitfleet.kubesim import KubeSim  # noqa: E402
from gitfleet.layout import Branches  # noqa: E402
from gitfleet.planning import answers, requests  # noqa: E402
from gitfleet.state.git import Git, RefUpdate, init_repo  # noqa: E402
from gitfleet.state.signing import SigningKey, TrustedKeys  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402
from gitfleet.timestamps import isoformat  # noqa: E402
from gitfleet.wire.plans import Act, PlanAnswer, PlannedAction  # noqa: E402
from gitfleet.wire.status import ClusterStatus, Heartbeat  # noqa: E402
from gitfleet.wire.tips import decode  # noqa: E402
from tests.gitserver import GitDaemon  # noqa: E402

GIT = ["-c", "user.name=bench", "-c", "user.email=bench@example.test"]
BRANCHES = Branches()
HELD = tip_slots(HubSettings().http_connections)     # requests the hub's listener holds
POLL = 10.0 * 1.1                                     # the longest tip poll of one not held
WEBHOOK = HubSettings().debounce
INTERVAL = 15.0                                       # the hub's default fetch interval


class Stand(PlanReviewer):
    """An answerer whose Git work is the agent's own reviewer's (fetch, answer commit, push)
    and whose dry run is a wait of the measured length."""

    dry_run = 1.0

    def _judge(self, plan_id: str, sha: str, now: float) -> PlanAnswer | None:
        time.sleep(self.dry_run)
        return PlanAnswer(plan_id, self.settings.cluster, sha, now, actions=(PlannedAction(
            Act.UPDATE, "v1", "ConfigMap", "app009", "cm", "data.level: a -> b"),))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT, "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout


def _listed(board: TipBoard, cluster: str) -> frozenset[str] | None:
    """The plans the hub's document for `cluster` lists, read as the agent's poller reads it."""
    doc = board.get(cluster)
    if doc is None:
        return None
    plans = decode(doc.body, cluster=cluster, ref=BRANCHES.cluster(cluster),
                   trusted=None).tip.plans
    return None if plans is None else frozenset(plans)


def _heartbeats(repo: Path, clusters: list[str]) -> None:
    """A 0.2.0 heartbeat on every cluster's status branch, as its agent pushes it."""
    git = Git(repo)
    updates = []
    for cluster in clusters:
        status = ClusterStatus(cluster=cluster, heartbeat=Heartbeat(
            time=isoformat(time.time()), interval_seconds=60, agent_version="0.2.0",
            healthz=True))
        tree = git.write_tree({"status.yaml": status.to_yaml().encode()})
        updates.append(RefUpdate(BRANCHES.status(cluster),
                                 git.commit(tree, [], f"status of {cluster}"), None))
    git.update_refs(updates)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--templates", type=int, default=100)
    p.add_argument("--sample", type=int, default=3, help="real agents against kubesim")
    p.add_argument("--workers", type=int, default=8,
                   help="answerers at work at once (their git processes share this machine's "
                   "cores with the server)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pack-refs", action="store_true",
                   help="pack the served repository's refs before the plans (its ~3,000 "
                   "branches; git daemon never does, a Git host's maintenance does)")
    p.add_argument("--pack-refs-hook", action="store_true",
                   help="install `gitfleet hooks install --pack-refs`'s post-receive hook in the "
                   "served repository: its refs packed after every push")
    a = p.parse_args(argv)
    rng = random.Random(a.seed)
    print(f"load average at start: {_load()}")
    with tempfile.TemporaryDirectory(prefix="gitfleet-bench-plan-tips-") as tmp_name:
        tmp = Path(tmp_name)
        source = tmp / "source"
        fleetgen.write(fleetgen.generate(clusters=a.clusters, templates=a.templates), source,
                       git=True)
        base = tmp / "served"
        base.mkdir()
        subprocess.run(["git", "clone", "-q", "--bare", str(source), str(base / "fleet.git")],
                       check=True)
        daemon = GitDaemon(base, max_connections=512)
        daemon.up()
        try:
            assert daemon.proc is not None
            return _run(a, rng, tmp, source, base / "fleet.git", daemon.url + "/fleet.git",
                        daemon.proc.pid)
        finally:
            daemon.down()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(a: argparse.Namespace, rng: random.Random, tmp: Path, source: Path, bare: Path,
         url: str, server: int) -> int:
    names = [fleetgen.cluster_name(i) for i in range(a.clusters)]
    key = SigningKey.generate(comment="hub")
    hub = Hub(open_store(url, cache_dir=tmp / "hub-cache"),
              settings=HubSettings(fleet_status=False, tips=True, signing_key=key))
    started = time.perf_counter()
    hub.run_once()
    print(f"hub's first render and write: {time.perf_counter() - started:.1f} s")
    _heartbeats(bare, names)
    hub.run_once()                                   # every agent reads `plans` now
    if a.pack_refs:       # as a Git host's maintenance keeps them: one packed-refs file
        _git(bare, "pack-refs", "--all")
    if a.pack_refs_hook:  # packed as they come, by every push
        hook = bare / "hooks" / PACK_HOOK
        hook.write_text(pack_script())
        hook.chmod(0o755)
    assert hub.tips is not None and hub.tips.board is not None
    board = hub.tips.board
    assert _listed(board, names[0]) == frozenset(), "the documents list no plans"

    _git(source, "checkout", "-q", "-b", "pr")
    path = source / "templates/app009/objects.yaml"
    text = path.read_text()      # a label on Deployment d0, or on the Namespace when the unit
    changed = text.replace("    app: d0\n", "    app: d0\n    tier: one\n", 1)  # has none
    if changed == text:          # (--templates under 20: one object per unit)
        changed = text.replace("  name: app009\n", "  labels:\n    tier: one\n  name: app009\n", 1)
    path.write_text(changed)
    _git(source, "commit", "-qam", "one template")
    _git(source, "push", "-q", str(bare), "pr")
    planner = init_repo(tmp / "plan.git", bare=True)
    planner.fetch(url, ["+refs/heads/*:refs/heads/*"])
    rendered = requests.render_candidates(planner.path, "pr", charts=Charts(tmp / "charts"))
    planner.signer = key

    def publish() -> tuple[str, tuple[str, ...], float]:
        expires = time.time() + 3600
        plan = requests.plan_id(rendered.revision, expires)
        began = time.perf_counter()
        asked = requests.publish(planner, url, rendered, plan=plan, expires=expires,
                                 now=time.time(), prefix="gitfleet")
        return plan, asked, time.perf_counter() - began

    # 1. real agents: a no-op sync beside a plan told of by the tip document
    plan, asked, _ = publish()
    hub.run_once()
    sample = names[:a.sample]
    looks, dry_runs = [], []
    for cluster in sample:
        assert _listed(board, cluster) == frozenset({plan}), cluster
        sim = KubeSim(nodes=2, controller_delay=0.05)
        sim.start()
        try:
            agent = Agent(AgentSettings(repo_url=url, cluster=cluster,
                                        workdir=tmp / "agents" / cluster,
                                        heartbeat_jitter=0.0, register=False),
                          KubeClient(sim.api_client()), clock=FakeClock())
            agent.step()
            kube = Counting(sim.api_client())
            agent.kube = agent.engine.kube = kube
            agent.engine.record.kube = kube
            began = time.perf_counter()
            report = agent.engine.sync(agent.branch.read(agent.branch.last_fetched or ""))
            noop_s, noop = time.perf_counter() - began, dict(kube.sent)
            kube.sent.clear()
            reviewer = PlanReviewer(
                PlanReviewSettings(repo_url=url, cluster=cluster,
                                   trusted=TrustedKeys.of(key)),
                kube, Git(agent.git.path, signer=agent.signer.key),
                notices=lambda c=cluster: _listed(board, c))   # type: ignore[misc]
            judge = reviewer._judge

            def timed(plan_id: str, sha: str, now: float, judge: Any = judge) -> Any:
                began = time.perf_counter()
                try:
                    return judge(plan_id, sha, now)
                finally:
                    dry_runs.append(time.perf_counter() - began)

            reviewer._judge = timed  # type: ignore[method-assign]
            assert reviewer.due() == 0
            began = time.perf_counter()
            reviewer.step()
            look_s = time.perf_counter() - began
            assert reviewer.last.answered == [plan], reviewer.last.errors
            looks.append(look_s)
            print(f"agent {cluster} ({len(report.objects)} objects): no-op sync {noop_s:.2f} s, "
                  f"API {noop}; plan told by its tip document: fetch, dry run, signed answer "
                  f"pushed {look_s:.2f} s (of which reading + dry run {dry_runs[-1]:.2f} s), "
                  f"API {dict(kube.sent)}; next look "
                  f"{reviewer.due():g} s (nothing new listed)")
        finally:
            sim.stop()

    # the first plan removed (as its TTL would), so that each answerer below has one to answer
    served = Git(bare)
    served.update_refs([RefUpdate(ref, None, sha) for ref, sha in served.refs(
        "refs/heads/gitfleet/").items() if ref.endswith("/" + plan)])
    hub.run_once()

    # 2. the fleet's Git work at N
    Stand.dry_run = max(dry_runs)
    plan, asked, publish_s = publish()
    published = time.perf_counter()
    print(f"publish {len(asked)} requests (one atomic push): {publish_s:.2f} s "
          f"(load {_load()})")
    collected: dict[str, float] = {}
    done = threading.Event()

    def collect() -> None:
        answers.collect(init_repo(tmp / "collector.git", bare=True), url, plan=plan,
                        asked=asked, fleet=rendered.fleet, wait=600,
                        on_answer=lambda o: collected.setdefault(
                            o.cluster, time.perf_counter() - published))
        done.set()

    collector = threading.Thread(target=collect, daemon=True)
    collector.start()
    began = time.perf_counter()
    hub.run_once()                                  # woken by the push (webhook, ref event)
    round_s = time.perf_counter() - began
    documents = time.perf_counter() - published
    listed = sum(1 for c in asked if plan in (_listed(board, c) or ()))
    print(f"hub's round after the push (fetch, {listed} documents re-signed listing the plan): "
          f"{round_s:.2f} s")
    order = list(asked)
    rng.shuffle(order)
    starts = {c: (0.0 if i < HELD else rng.uniform(0.0, POLL)) for i, c in enumerate(order)}
    pushed: dict[str, float] = {}
    local = threading.local()      # one repository per worker: each look mirrors its cluster's

    def answer(cluster: str) -> None:
        wait = documents + starts[cluster] - (time.perf_counter() - published)
        if wait > 0:
            time.sleep(wait)
        if not hasattr(local, "git"):
            local.git = init_repo(tmp / "answerers" / f"{threading.get_ident()}.git", bare=True)
            local.git.signer = key
        stand = Stand(PlanReviewSettings(repo_url=url, cluster=cluster), None,  # type: ignore[arg-type]
                      local.git, notices=lambda: frozenset({plan}))
        stand.step()
        assert stand.last.answered == [plan], (cluster, stand.last.errors)
        pushed[cluster] = time.perf_counter() - published

    (tmp / "answerers").mkdir()
    server_cpu, client_cpu = tree_cpu([server]), _children_cpu()
    with ThreadPoolExecutor(max_workers=a.workers) as pool:
        for _ in pool.map(answer, sorted(order, key=starts.__getitem__)):
            pass
    done.wait(600)
    total = time.perf_counter() - published
    server_cpu, client_cpu = tree_cpu([server]) - server_cpu, _children_cpu() - client_cpu
    lags = [pushed[c] - documents - starts[c] for c in asked]
    print(f"answers pushed: last at {max(pushed.values()):.1f} s after the publish; per answer "
          f"from its agent's read of the document (look, {Stand.dry_run:.2f} s dry run, push): "
          f"p50 {statistics.median(lags):.2f} s, p99 {_pct(lags, 0.99):.2f} s, "
          f"max {max(lags):.2f} s; Git server CPU {server_cpu:.1f} s "
          f"({1000 * server_cpu / len(asked):.0f} ms an answer, the collector's fetches "
          f"included), the answerers' and collector's git processes {client_cpu:.1f} s, on the "
          f"same {os.cpu_count()} cores")
    print(f"collect: {len(collected)} of {len(asked)} answers, the last at "
          f"{max(collected.values(), default=0):.1f} s; every answer collected {total:.1f} s "
          f"after the publish (load {_load()})")
    print(f"model: with the webhook {total + WEBHOOK:.1f} s; without (hub interval "
          f"{INTERVAL:g} s) at most {total + INTERVAL:.1f} s; from the start of `gitfleet "
          f"plan`'s push {publish_s + total + INTERVAL:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
