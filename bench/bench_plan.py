"""Benchmark of `gitfleet plan` on a one-file change of the synthetic fleet (issue 33).

    .venv/bin/python bench/bench_plan.py [--clusters 1000] [--templates 100] [--answers 1000]

1. The CLI's side: the synthetic fleet (bench/fleetgen.py) rendered once by a hub (state and
   cluster branches), then a one-file change (a template every cluster receives) on a branch;
   measured in-process: rendering it as the hub would and comparing every cluster's tree with
   its cluster branch (`render_candidates`), and writing + pushing the signed requests of every
   changed cluster in one atomic push (`publish`).
2. One agent's answer: kubesim holding cluster c00000's tree as a real agent applied it, then
   the reviewer answering that cluster's request; the API requests it sends (counted at the
   client) beside a no-op sync's.
3. Collecting: --answers answers (one per cluster, as agents write them) found, fetched, checked
   and read by `collect`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleetgen  # noqa: E402

from gitfleet.agent.agent import Agent, AgentSettings  # noqa: E402
from gitfleet.agent.planreview import PlanReviewer, PlanReviewSettings  # noqa: E402
from gitfleet.charts.renderer import Charts  # noqa: E402
from gitfleet.clock import FakeClock  # noqa: E402
from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.kube.client import KubeClient  # noqa: E402
from gitfleet.kubesim import KubeSim  # noqa: E402
from gitfleet.layout import Branches  # noqa: E402
from gitfleet.model.loader import Fleet  # noqa: E402
from gitfleet.planning import answers, requests  # noqa: E402
from gitfleet.state.git import Git, RefUpdate, init_repo  # noqa: E402
from gitfleet.state.signing import SigningKey  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402
from gitfleet.wire.plans import Act, PlanAnswer, PlannedAction  # noqa: E402

GIT = ["-c", "user.name=bench", "-c", "user.email=bench@example.test"]


class Counting(KubeClient):
    """The real client, counting the requests it sends (method, dry run or not)."""

    def __init__(self, api: Any) -> None:
        super().__init__(api)
        self.sent: Counter[str] = Counter()

    def _send(self, method: str, path: str, **kw: Any) -> Any:
        dry = any(k == "dryRun" for k, _ in kw.get("query") or ())
        self.sent[f"{method}{' dryRun' if dry else ''}"] += 1
        return super()._send(method, path, **kw)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT, "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--templates", type=int, default=100)
    p.add_argument("--answers", type=int, default=1000)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitfleet-bench-plan-") as tmp_name:
        tmp = Path(tmp_name)
        repo = tmp / "fleet"
        fleetgen.write(fleetgen.generate(clusters=a.clusters, templates=a.templates), repo,
                       git=True)
        started = time.perf_counter()
        Hub(open_store(str(repo)), settings=HubSettings(fleet_status=False)).run_once()
        print(f"hub's first render and write: {time.perf_counter() - started:.1f} s")
        _git(repo, "checkout", "-q", "-b", "pr")
        path = repo / "templates/app009/objects.yaml"
        path.write_text(path.read_text().replace("level", "lvl", 1))
        _git(repo, "commit", "-qam", "one template")
        _git(repo, "checkout", "-q", "main")

        # 1. render, compare, publish
        started = time.perf_counter()
        rendered = requests.render_candidates(repo, "pr", charts=Charts(tmp / "charts"))
        render_s = time.perf_counter() - started
        git = Git(repo, signer=SigningKey.generate(comment="plan"))
        expires = time.time() + 3600
        plan = requests.plan_id(rendered.revision, expires)
        started = time.perf_counter()
        asked = requests.publish(git, str(repo), rendered, plan=plan, expires=expires,
                                 now=time.time(), prefix="gitfleet")
        publish_s = time.perf_counter() - started
        print(f"render as the hub + compare {len(rendered.candidates)} cluster trees: "
              f"{render_s:.2f} s; {len(asked)} changed")
        print(f"write, sign and push {len(asked)} plan requests (one atomic push): "
              f"{publish_s:.2f} s")

        # 2. one agent's answer, beside its no-op sync
        sim = KubeSim(nodes=2, controller_delay=0.05)
        sim.start()
        try:
            c0 = fleetgen.cluster_name(0)
            agent = Agent(AgentSettings(repo_url=str(repo), cluster=c0, workdir=tmp / "agent",
                                        heartbeat_jitter=0.0, register=False),
                          KubeClient(sim.api_client()), clock=FakeClock())
            agent.step()
            kube = Counting(sim.api_client())
            agent.kube = agent.engine.kube = kube
            agent.engine.record.kube = kube
            started = time.perf_counter()
            report = agent.engine.sync(agent.branch.read(agent.branch.last_fetched or ""))
            noop_s = time.perf_counter() - started
            noop = dict(kube.sent)
            objects = len(report.objects)
            kube.sent.clear()
            reviewer = PlanReviewer(PlanReviewSettings(repo_url=str(repo), cluster=c0),
                                    kube, Git(agent.git.path))
            started = time.perf_counter()
            reviewer.step()
            answer_s = time.perf_counter() - started
            assert reviewer.last.answered == [plan], reviewer.last.errors
            print(f"agent {c0} ({objects} objects): no-op sync {noop_s:.2f} s, API requests "
                  f"{noop}; plan answer (fetch, dry run, commit, push) {answer_s:.2f} s, API "
                  f"requests {dict(kube.sent)}")
        finally:
            sim.stop()

        # 3. collect --answers answers
        fake = Git(repo, signer=None)
        updates = []
        blob_answer = PlanAnswer(plan, "x", "", time.time(), actions=(PlannedAction(
            Act.UPDATE, "v1", "ConfigMap", "app", "cm", "data.level: a -> b"),))
        names = [fleetgen.cluster_name(i) for i in range(min(a.answers, a.clusters))]
        for name in names:
            if name == c0:
                continue
            body = PlanAnswer(plan, name, "", blob_answer.answered_at,
                              actions=blob_answer.actions).to_yaml()
            tree = fake.write_tree({"plan.yaml": body})
            updates.append(RefUpdate(Branches().plan_answer(name, plan),
                                     fake.commit(tree, [], f"{name}: plan"), None))
        fake.update_refs(updates)
        fleet: Fleet = rendered.fleet
        started = time.perf_counter()
        found = answers.collect(init_repo(tmp / "collector"), str(repo), plan=plan, asked=names,
                                fleet=fleet, wait=0)
        collect_s = time.perf_counter() - started
        planned = sum(1 for o in found.values() if o.planned)
        print(f"collect {len(names)} answers (one glob-refspec fetch, read): {collect_s:.2f} s; "
              f"{planned} planned")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
