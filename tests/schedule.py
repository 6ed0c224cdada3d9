"""The order of the suite for pytest-xdist's `worksteal`, so that a parallel run ends together.

worksteal first hands each worker one contiguous slice of the collected list (sizes
`remaining // workers_left`), then idle workers steal the *tail* of the longest queue. Sorting
the long tests to the front therefore gave all of them to the first worker, and the ones it had
not reached were stolen last: a 40-second test starting near the end kept one worker busy while
the others idled (idle runs differed by up to 100 s). Here the long tests are dealt out longest
first to the least loaded slice (LPT), each slice starts with its long tests and ends with quick
ones, which are what gets stolen. Tests sharing a module- or session-scoped fixture of their own
(a live fleet, a browser, a fresh clone) stay on one worker, as one unit.

Seconds come from tests/durations.json (`python -m tests.schedule CPU_LOG...` rewrites it from
`-p tests.cpucost --cpu-log` files); a test not listed counts SLOW seconds if marked `slow`,
else QUICK. Only the order changes: every test still runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
LISTED = 1.0         # tests at least this long are written into durations.json
SLOW = 10.0          # an unlisted test marked `slow`
QUICK = 0.2          # any other unlisted test
DIST = "gitfleet_dist"  # workerinput key: the run's --dist (a worker's own option says "no")
LONG = 2.0           # units dealt out first (longest first); the rest fill the slices


def _durations() -> dict[str, float]:
    try:
        data = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _seconds(item: pytest.Item, known: dict[str, float]) -> float:
    if item.nodeid in known:
        return known[item.nodeid]
    return SLOW if item.get_closest_marker("slow") is not None else QUICK


def _shared_key(item: pytest.Item) -> str | None:
    """The module of a test that uses a module-, package- or session-scoped fixture of the
    suite's own (built once per worker: splitting its tests builds it again); pytest's own
    (tmp_path_factory, say) do not count."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    root = Path(__file__).parent
    for defs in info.name2fixturedefs.values():
        for fixturedef in defs:
            if fixturedef.scope == "function":
                continue
            code = getattr(fixturedef.func, "__code__", None)
            if code is not None and root in Path(code.co_filename).parents:
                return item.nodeid.split("::", 1)[0]
    return None


def _units(items: list[pytest.Item]) -> list[list[pytest.Item]]:
    units: list[list[pytest.Item]] = []
    shared: dict[str, list[pytest.Item]] = {}
    for item in items:
        key = _shared_key(item)
        if key is None:
            units.append([item])
        elif key in shared:
            shared[key].append(item)
        else:
            shared[key] = [item]
            units.append(shared[key])
    return units


def slice_sizes(total: int, workers: int) -> list[int]:
    """The sizes of worksteal's first slices (xdist 3.x `check_schedule`, all workers idle)."""
    sizes = []
    for left in range(workers, 0, -1):
        sizes.append(total // left)
        total -= sizes[-1]
    return sizes


def worksteal_order(items: list[pytest.Item], workers: int,
                    known: dict[str, float] | None = None) -> list[pytest.Item]:
    known = _durations() if known is None else known
    units = _units(items)
    cost = {id(u): sum(_seconds(i, known) for i in u) for u in units}
    sizes = slice_sizes(len(items), workers)
    slices: list[list[pytest.Item]] = [[] for _ in range(workers)]
    load = [0.0] * workers

    def place(unit: list[pytest.Item], seconds: float) -> None:
        room = [w for w in range(workers) if len(slices[w]) + len(unit) <= sizes[w]]
        w = min(room or range(workers), key=lambda w: (load[w], w))
        slices[w].extend(unit)
        load[w] += seconds

    for unit in sorted((u for u in units if cost[id(u)] >= LONG), key=lambda u: -cost[id(u)]):
        place(unit, cost[id(unit)])
    for unit in (u for u in units if cost[id(u)] < LONG):   # collection order: modules together
        place(unit, cost[id(unit)])
    order = [item for s in slices for item in s]
    assert len(order) == len(items)
    return order


def order(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Reorder `items` in place for this run: dealt out per worker under worksteal, else the
    long tests first (a serial run: the order only matters for `-x`)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get(DIST) == "worksteal":
        items[:] = worksteal_order(items, int(workerinput["workercount"]))
        return
    known = _durations()
    items.sort(key=lambda item: -_seconds(item, known) if _seconds(item, known) >= LONG else 0)


def tell_worker(node: object) -> None:
    """pytest_configure_node (controller side): hand the worker the run's --dist."""
    config = node.config  # type: ignore[attr-defined]
    node.workerinput[DIST] = config.getoption("dist", None)  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    """Rewrite tests/durations.json from cpucost logs (the largest wall time of each test)."""
    if not argv:
        print("usage: python -m tests.schedule CPU_LOG...", file=sys.stderr)
        return 2
    seconds: dict[str, float] = {}
    for path in argv:
        for line in Path(path).read_text().splitlines():
            row = json.loads(line)
            seconds[row["test"]] = max(seconds.get(row["test"], 0.0), float(row["wall"]))
    listed = {t: round(s, 1) for t, s in sorted(seconds.items()) if s >= LISTED}
    DURATIONS.write_text(json.dumps(listed, indent=0, sort_keys=True) + "\n")
    print(f"{len(listed)} tests of {len(seconds)} at least {LISTED} s: {DURATIONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
