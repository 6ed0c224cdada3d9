"""Where the suite's time goes, per test: wall time against CPU time, to tell a test that works
(CPU: make it do less) from one that waits (sleeps, timeouts, daemons: pure waste on a 2-core
machine, where only waiting tests can overlap). Opt in, for measuring the suite (bench/README
'The test suite and CI'):

    python -m pytest -n 2 -p tests.cpucost --cpu-log /tmp/cpu.jsonl

Each line: the test, its worker, its start (epoch seconds: to see how a parallel run ends), its
wall seconds (setup, call and teardown), the worker's own CPU seconds
(every thread) and its reaped children's (processes the test started and waited for: git, helm,
the hub, the daemons it stopped). Module and session fixtures count in the test that built them.
"""

from __future__ import annotations

import json
import os
import resource
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
