"""A live fleet for the dashboard's tests: the worked example in a bare repo, a hub serving the
dashboard, kubesim clusters with real agents (prod-east, prod-west) and the hub's push worker
(staging). Every process is stopped at the end; short heartbeats so a stopped agent turns its
cluster Unknown within seconds.

    python -m tests.dashboard.livefleet DIR    # the same fleet by hand, until Ctrl-C
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitfleet.demo.example import DEMO_CLUSTERS, PUSH_CLUSTERS, worked_example
from gitfleet.demo.processes import Supervisor, wait_listening
from gitfleet.kubesim import KubeSim
from tests.gitserver import free_port

# Unknown after 3 intervals without one (the hub's HEARTBEAT_GRACE): at 2 s (6 s of silence) a
# loaded machine let heartbeats lapse and the whole grid read Unknown for a moment
HEARTBEAT = "5s"


def git(cwd: Path, *args: str) -> str:
    """`git` with an identity of its own: the fleet lives for a whole module, set up before
    (and outliving) any one test's environment."""
    env = ["-c", "user.name=Ada Lovelace", "-c", "user.email=ada@example.com",
           "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *env, *args], cwd=cwd, check=True, capture_output=True,
                          text=True, timeout=60).stdout.strip()


@dataclass
class LiveFleet:
    root: Path
    url: str = ""
    work: Path = field(default_factory=Path)
    bare: Path = field(default_factory=Path)
    supervisor: Supervisor | None = None
    sims: dict[str, KubeSim] = field(default_factory=dict)

    def api(self, path: str) -> Any:
        try:
            with urllib.request.urlopen(f"{self.url}api/{path}", timeout=60) as resp:
                return json.loads(resp.read())
        except (OSError, ValueError):      # not answering (yet), or slow: "not yet"
            return None

    def tiles(self) -> dict[tuple[str, str], str]:
        data = self.api("fleet?limit=500") or {"clusters": []}
        return {(c["name"], key): t["word"] for c in data["clusters"]
                for key, t in c["tiles"].items()}

    def push(self, rel: str, old: str, new: str, message: str) -> str:
        path = self.work / rel
        text = path.read_text()
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new, 1))
        git(self.work, "commit", "-qam", message)
        git(self.work, "push", "-q", "origin", "HEAD:main")
        return git(self.work, "rev-parse", "HEAD")

    def start_agent(self, name: str) -> None:
        assert self.supervisor is not None
        kubeconfig = self.sims[name].write_kubeconfig(self.root / f"{name}.kubeconfig")
        self.supervisor.gitfleet(
            f"agent-{name}", "agent", "--repo", str(self.bare), "--cluster", name,
            "--kubeconfig", str(kubeconfig), "--interval", "1s",
            "--heartbeat-interval", HEARTBEAT, "--workdir", str(self.root / "agents" / name))

    def stop_agent(self, name: str) -> None:
        assert self.supervisor is not None
        self.supervisor.stop(f"agent-{name}")


@contextmanager
def live_fleet(root: Path) -> Iterator[LiveFleet]:
    fleet = LiveFleet(root)
    (root / "logs").mkdir(parents=True, exist_ok=True)
    fleet.work = root / "work"
    for rel, data in worked_example().items():
        target = fleet.work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    git(fleet.work, "init", "-q", "-b", "main")
    git(fleet.work, "add", "-A")
    git(fleet.work, "commit", "-qm", "the worked example")
    fleet.bare = root / "fleet.git"
    git(root, "clone", "-q", "--bare", str(fleet.work), str(fleet.bare))
    git(fleet.work, "remote", "add", "origin", str(fleet.bare))
    supervisor = fleet.supervisor = Supervisor(root / "logs")
    try:
        for name in (*DEMO_CLUSTERS, *PUSH_CLUSTERS):
            # a rollout stays Progressing 5 s: the push test must see that word go by, and it
            # goes by only if an agent's report, the hub's fold and the page's poll all fall in
            # it (at 2 s, a CI run at load 12 saw Healthy only, and waited 120 s for it)
            fleet.sims[name] = KubeSim(controller_delay=5.0, name=name, pods=True).start()
        pushed = root / "push-kubeconfigs"
        for name in PUSH_CLUSTERS:
            fleet.sims[name].write_kubeconfig(pushed / f"{name}.yaml")
        port = free_port()
        hub = supervisor.gitfleet(
            "hub", "hub", "--repo", str(fleet.bare), "--interval", "1s",
            "--listen", f"127.0.0.1:{port}", "--push-kubeconfigs", str(pushed),
            "--push-agentless", "--push-interval", "1s",
            "--push-heartbeat-interval", HEARTBEAT, "--cache-dir", str(root / "hub-cache"))
        wait_listening(port, timeout=120, alive=hub.proc)
        fleet.url = f"http://127.0.0.1:{port}/"
        for name in DEMO_CLUSTERS:
            fleet.start_agent(name)
        yield fleet
    finally:
        supervisor.stop_all()
        for sim in fleet.sims.values():
            sim.stop()


def main() -> int:
    root = Path(sys.argv[1])
    with live_fleet(root) as fleet:
        print(f"dashboard: {fleet.url}  work tree: {fleet.work}", flush=True)
        try:
            while True:
                time.sleep(1)
                assert fleet.supervisor is not None
                fleet.supervisor.check()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
