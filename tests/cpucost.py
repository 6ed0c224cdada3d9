"""Where the suite's time goes, per test: wall time against CPU time, to tell a test that works
(CPU: make it do less) from one that waits (sleeps, timeouts, daemons: pure waste on a 2-core
machine, where only waiting tests can overlap). Opt in, for measuring the suite (bench/README
'The test suite and CI'):

    python -m pytest -n 2 -p tests.cpucost --cpu-log /tmp/cpu.jsonl

Each line: the test, its worker, its start (epoch seconds: to see how a parallel run ends), its
wall seconds (setup, call and teardown), the worker's own CPU seconds
(every thread) and its reaped children's (processes the test started and waited for: git, helm,
the hub, the daemons it stopped). Module and session fixtures count in the test that built them
(a module fixture's daemons in the module's last test, when they are stopped and reaped).

    python -m tests.cpucost /tmp/cpu.jsonl [N]     # the N costliest tests and files, and when
                                                    # each worker ran its last test
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-log", default=None, help="append one JSON line per test: wall and CPU")


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    path = item.config.getoption("--cpu-log")
    if not path:
        yield
        return
    start = time.time()
    wall, own, children = time.monotonic(), _cpu(resource.RUSAGE_SELF), \
        _cpu(resource.RUSAGE_CHILDREN)
    yield
    line = {"test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "-"),
            "start": round(start, 3), "wall": round(time.monotonic() - wall, 3),
            "cpu": round(_cpu(resource.RUSAGE_SELF) - own, 3),
            "children": round(_cpu(resource.RUSAGE_CHILDREN) - children, 3)}
    with Path(path).open("a") as f:
        f.write(json.dumps(line) + "\n")


def report(lines: list[dict[str, object]], top: int) -> str:
    """The costliest tests and files by CPU (worker + children), and each worker's end: a
    parallel run whose workers end far apart has a long test left alone at its end."""
    def cpu(line: dict[str, object]) -> float:
        return float(str(line["cpu"])) + float(str(line["children"]))

    out = [f"{len(lines)} tests, CPU {sum(map(cpu, lines)):.1f} s "
           f"(workers {sum(float(str(x['cpu'])) for x in lines):.1f} + children "
           f"{sum(float(str(x['children'])) for x in lines):.1f})", "", "tests:"]
    out += [f"{cpu(x):7.1f}  {x['test']}" for x in sorted(lines, key=cpu, reverse=True)[:top]]
    files: dict[str, float] = {}
    for x in lines:
        name = str(x["test"]).split("::", 1)[0]
        files[name] = files.get(name, 0.0) + cpu(x)
    costliest = sorted(files.items(), key=lambda kv: kv[1], reverse=True)[:top]
    out += ["", "files:"] + [f"{c:7.1f}  {f}" for f, c in costliest]
    timed = [x for x in lines if "start" in x]
    if timed:
        first = min(float(str(x["start"])) for x in timed)
        ends: dict[str, float] = {}
        for x in timed:
            end = float(str(x["start"])) + float(str(x["wall"])) - first
            ends[str(x["worker"])] = max(ends.get(str(x["worker"]), 0.0), end)
        out += ["", "workers end (s after the first test): " + ", ".join(
            f"{w} {e:.0f}" for w, e in sorted(ends.items()))]
    return "\n".join(out)


if __name__ == "__main__":
    logged = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    print(report(logged, int(sys.argv[2]) if len(sys.argv) > 2 else 20))
