"""How many Git processes a hub round and an agent round start, of which kinds, and what the
rounds cost in CPU (issues 30, 34: gitbatch).

    .venv/bin/python bench/bench_git_calls.py [--clusters 25] [--templates 20] [--rounds 3]
                                              [--code /path/to/another/checkout]

On a fleet from `bench/fleetgen.py` in a repository the hub works in place (its `--repo`),
an in-process hub (fleet status folded, fake clock) and an in-process agent of cluster
c00000 against kubesim (fetching the same repository by its file:// URL): after the first
rounds, `--rounds` no-op hub rounds and agent steps, then `--rounds` one-line changes of
c00000's Localization, each followed by a hub round and an agent step. A `git` on PATH in
front of the real one logs every command gitfleet starts (Git's own helpers, as the
upload-pack of a fetch, are not counted); each line prints the processes started and their
kinds (the first word, `for-each-ref` etc., with `--batch`/`--batch-check` kept for
`cat-file`), and the CPU of the round: this process, its reaped children and the children
still running (a long-lived `cat-file` counts its CPU while it lives), medians of the rounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--clusters", type=int, default=25)
parser.add_argument("--templates", type=int, default=20)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--show", action="store_true", help="print each command line")
parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent)
args = parser.parse_args()
sys.path.insert(0, str(args.code))
sys.path.insert(0, str(args.code / "bench"))

from bench_hub import change_one, make_repo  # noqa: E402
from fleetgen import generate  # noqa: E402

from gitfleet.agent.agent import Agent, AgentSettings  # noqa: E402
from gitfleet.clock import FakeClock  # noqa: E402
from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.kube.client import KubeClient  # noqa: E402
from gitfleet.kubesim import KubeSim  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu() -> float:
    """CPU seconds of this process, its reaped children and its children still running."""
    times = os.times()
    total = times.user + times.system + times.children_user + times.children_system
    me = str(os.getpid())
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[1] == me:        # ppid; utime stime cutime cstime
            total += sum(int(f) for f in fields[11:15]) / TICK
    return total


def kind(line: str) -> str:
    words = line.split()
    while words and words[0] in ("-c", "-C"):
        words = words[2:]
    if not words:
        return "?"
    if words[0] == "cat-file" and len(words) > 1:
        return f"cat-file {words[1].split('=')[0]}"
    return words[0]


class Calls:
    """The log the `git` in front of the real one appends to."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / "calls.log"
        self.log.touch()
        real = shutil.which("git")
        wrapper = folder / "bin" / "git"
        wrapper.parent.mkdir()
        wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {self.log}\nexec {real} "$@"\n')
        wrapper.chmod(0o755)
        os.environ["PATH"] = f"{wrapper.parent}:{os.environ['PATH']}"
        self.seen = 0

    def since(self) -> Counter[str]:
        lines = self.log.read_text().splitlines()
        new, self.seen = lines[self.seen:], len(lines)
        if args.show:
            print("\n".join(f"    git {line[:150]}" for line in new), flush=True)
        return Counter(kind(line) for line in new)


def report(label: str, counts: list[Counter[str]], cpus: list[float]) -> None:
    total = [sum(c.values()) for c in counts]
    mix: Counter[str] = Counter()
    for c in counts:
        mix.update(c)
    kinds = ", ".join(f"{k} {v / len(counts):g}" for k, v in mix.most_common())
    print(f"{label}: git processes median {statistics.median(total):g} "
          f"(min {min(total)}, max {max(total)}); cpu_s median {statistics.median(cpus):.3f}; "
          f"per round: {kinds}", flush=True)


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-gitcalls-"))
    try:
        calls = Calls(base)
        work = base / "fleet"
        make_repo(work, generate(clusters=args.clusters, templates=args.templates, units=4))
        hub = Hub(open_store(str(work)), settings=HubSettings(), clock=FakeClock())
        print(f"clusters={args.clusters} templates={args.templates} code={args.code} "
              f"load_avg={os.getloadavg()[0]:.1f}", flush=True)
        with KubeSim(nodes=2) as sim:
            agent = Agent(AgentSettings(repo_url=f"file://{work}", cluster="c00000",
                                        workdir=base / "agent", interval=1.0,
                                        heartbeat_jitter=0.0),
                          KubeClient(sim.api_client()), clock=FakeClock())
            try:
                calls.since()
                c = cpu()
                hub.run_once()
                print(f"hub first round: {sum(calls.since().values())} git processes, "
                      f"cpu_s {cpu() - c:.2f}", flush=True)
                for _ in range(3):      # the agent's first steps, the hub folds its status
                    agent.step()
                    hub.run_once()
                calls.since()
                rounds: dict[str, tuple[list[Counter[str]], list[float]]] = {
                    k: ([], []) for k in ("hub no-op round", "agent no-op step",
                                          "hub one-change round", "agent one-change step")}

                def measure(label: str, step: object) -> None:
                    c = cpu()
                    step()  # type: ignore[operator]
                    rounds[label][1].append(cpu() - c)
                    rounds[label][0].append(calls.since())

                for _ in range(args.rounds):
                    measure("hub no-op round", hub.run_once)
                    measure("agent no-op step", agent.step)
                for n in range(1, args.rounds + 1):
                    change_one(work, n)
                    calls.since()
                    measure("hub one-change round", hub.run_once)
                    measure("agent one-change step", agent.step)
                for label, (counts, cpus) in rounds.items():
                    report(label, counts, cpus)
            finally:
                agent.stop()
                agent.close()
        print(f"load_avg={os.getloadavg()[0]:.1f} at the end", flush=True)
    finally:
        hub_close = getattr(hub, "close", None) if "hub" in locals() else None
        if callable(hub_close):
            hub_close()
        time.sleep(0)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
