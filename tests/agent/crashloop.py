"""Kill a real agent process mid-sync, change the desired state while it is down, restart.

Shared by the CI test (a few kills) and `bench/bench_agent_kills.py` (the soak, 50 and more).
Everything is real: `python -m gitfleet agent` as a subprocess, kubesim's HTTP API, a Git
remote served by `git daemon`. The agent is killed with SIGKILL (no cleanup code runs) at a
random moment while it applies; then the next round's state is published and the agent started
again. At the end the cluster must hold exactly the last state's objects with its content, no
object of an earlier state, the objects gitfleet never wrote untouched, and a status that says
so (Synced, the last commit, no failure).
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitfleet.agent.marks import ANNOTATION_STATE_COMMIT, LABEL_CLUSTER
from gitfleet.kube.client import KubeClient, KubeSettings
from gitfleet.kubesim import KubeSim
from gitfleet.layout import Branches
from gitfleet.state.git import Git
from gitfleet.wire.status import ClusterStatus, SyncResult
from tests.agent.fleetstate import configmap, description_files, publish

NAMESPACE = "app"


@dataclass
class Round:
    names: list[str]
    version: int
    commit: str = ""

    def objects(self) -> list[dict[str, Any]]:
        return [configmap(n, NAMESPACE, {"version": str(self.version), "name": n})
                for n in self.names]


@dataclass
class Tally:
    kills: int = 0
    killed_mid_apply: int = 0   # the kill came while the round's objects were partly applied
    final_objects: int = 0
    leaks: int = 0              # labelled objects the last state does not hold
    missing: int = 0            # objects the last state holds that are not in the cluster
    stale: int = 0              # objects with an earlier round's content
    foreign_touched: int = 0
    status: str = ""
    problems: list[str] = field(default_factory=list)


def next_round(rng: random.Random, previous: Round, *, size: int) -> Round:
    """Drop some names, keep the rest with new content, add new ones."""
    keep = [n for n in previous.names if rng.random() < 0.6]
    fresh = [f"cm-{previous.version + 1}-{i}" for i in range(size - len(keep))]
    return Round(names=sorted(keep + fresh), version=previous.version + 1)


def _labelled(kube: KubeClient, cluster: str) -> dict[str, dict[str, Any]]:
    items = kube.list_objects("v1", "ConfigMap", label_selector=f"{LABEL_CLUSTER}={cluster}",
                              namespace=NAMESPACE).items
    return {str(i["metadata"]["name"]): i for i in items}


def _publish(git: Git, r: Round) -> str:
    r.commit = publish(git, "c1", description_files(NAMESPACE, "web", r.objects()),
                       message=f"round {r.version}")
    return r.commit


def _wait(predicate: Callable[[], bool], timeout: float, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate() or proc.poll() is not None:
            return predicate()
        time.sleep(0.01)
    return False


def run(*, sim: KubeSim, git: Git, url: str, workdir: Path, kills: int, size: int = 40,
        seed: int = 1, latency: float = 0.01, log: Callable[[str], None] | None = None) -> Tally:
    rng = random.Random(seed)
    person = KubeClient(sim.api_client(), KubeSettings(field_manager="kubectl"))
    person.ensure_namespace(NAMESPACE)
    # Objects gitfleet never wrote: a plain one, and one carrying a hand-copied label.
    person.apply(configmap("hand-made", NAMESPACE, {"who": "person"}))
    copied = configmap("hand-labelled", NAMESPACE, {"who": "person"})
    copied["metadata"]["labels"] = {LABEL_CLUSTER: "c1"}
    person.apply(copied)
    foreign_before = {n: person.get("v1", "ConfigMap", NAMESPACE, n)
                      for n in ("hand-made", "hand-labelled")}
    kubeconfig = sim.write_kubeconfig(workdir / "kubeconfig")
    args = [sys.executable, "-m", "gitfleet", "agent", "--repo", url, "--cluster", "c1",
            "--kubeconfig", str(kubeconfig), "--workdir", str(workdir / "store"),
            "--apply-workers", "2", "--max-prune-share", "100%", "--interval", "60s"]
    tally = Tally()
    current = Round(names=[f"cm-0-{i}" for i in range(size)], version=0)
    _publish(git, current)
    sim.set_latency(latency)
    for k in range(kills):
        commit = current.commit
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            target = rng.randint(1, size)  # at `size` the kill falls after the applies

            def progressed(commit: str = commit, target: int = target) -> bool:
                live = _labelled(person, "c1")
                done = sum(1 for o in live.values() if (o["metadata"].get("annotations") or {})
                           .get(ANNOTATION_STATE_COMMIT) == commit)
                return done >= target

            _wait(progressed, 30.0, proc)
            time.sleep(rng.uniform(0, 0.3 if target == size else 0.05))
        finally:
            proc.kill()
            proc.wait(timeout=10)
        tally.kills += 1
        live = _labelled(person, "c1")
        done = sum(1 for o in live.values()
                   if (o["metadata"].get("annotations") or {}).get(ANNOTATION_STATE_COMMIT)
                   == commit)
        if 0 < done < len(current.names):
            tally.killed_mid_apply += 1
        current = next_round(rng, current, size=size)
        _publish(git, current)
        if log:
            log(f"kill {k + 1}: {done}/{len(current.names)} applied at the kill")
    sim.set_latency(0)
    done = subprocess.run([*args[:-2], "--once"], capture_output=True, timeout=120)
    if done.returncode != 0:
        tally.problems.append(f"final run exited {done.returncode}: "
                              f"{done.stdout.decode()}{done.stderr.decode()}"[-2000:])
    live = {n: o for n, o in _labelled(person, "c1").items() if n not in foreign_before}
    want = set(current.names)
    tally.final_objects = len(live)
    tally.leaks = len(set(live) - want)
    tally.missing = len(want - set(live))
    tally.stale = sum(1 for n in want & set(live)
                      if (live[n].get("data") or {}).get("version") != str(current.version))
    for name, before in foreign_before.items():
        after = person.get("v1", "ConfigMap", NAMESPACE, name)
        if after is None or after["metadata"]["uid"] != before["metadata"]["uid"] or \
                after.get("data") != before.get("data") or \
                after["metadata"].get("labels") != before["metadata"].get("labels"):
            tally.foreign_touched += 1
    raw = git.read_blob(Branches().status("c1"), "status.yaml")
    status = ClusterStatus.from_yaml(raw) if raw else None
    if status is None:
        tally.problems.append("no status")
    else:
        tally.status = str(status.sync.result)
        if status.sync.result is not SyncResult.SYNCED or status.sync.state_commit != \
                current.commit:
            tally.problems.append(f"status {status.sync.result} at {status.sync.state_commit}, "
                                  f"want Synced at {current.commit}: {status.sync.message}")
        objects = [o for d in status.descriptions for o in d.objects]
        if sorted(o.name for o in objects) != sorted(want) or any(o.error for o in objects):
            tally.problems.append("status objects do not match the last state")
    return tally
