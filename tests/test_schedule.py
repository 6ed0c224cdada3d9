"""The suite's order under worksteal (tests/schedule.py): every test runs once, each worker's
first slice has the size xdist gives it, and the long tests are spread over the slices, longest
first, with the tests of a shared fixture kept together."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.schedule import slice_sizes, worksteal_order


def _item(nodeid: str, shared: bool = False) -> Any:
    """What the schedule reads of a pytest item: its id, its `slow` mark and its fixtures."""
    def fixture() -> None: ...
    fixture.__code__ = fixture.__code__.replace(co_filename=__file__)
    scope = "module" if shared else "function"
    info = SimpleNamespace(name2fixturedefs={"f": [SimpleNamespace(scope=scope, func=fixture)]})
    return SimpleNamespace(nodeid=nodeid, _fixtureinfo=info, get_closest_marker=lambda _: None)


def test_slices_have_xdists_sizes() -> None:
    assert slice_sizes(10, 4) == [2, 2, 3, 3]
    assert slice_sizes(2185, 4) == [546, 546, 546, 547]


def test_long_tests_are_dealt_out_longest_first_and_shared_fixtures_stay_together() -> None:
    long = {f"t/a.py::long{i}": float(10 * (i + 1)) for i in range(8)}   # 10 .. 80 s
    items = [_item(f"t/q.py::quick{i}") for i in range(30)]
    items[5:5] = [_item(t) for t in long]
    items += [_item(f"t/fleet.py::view{i}", shared=True) for i in range(3)]
    known = {**long, **{f"t/fleet.py::view{i}": 20.0 for i in range(3)}}

    order = worksteal_order(items, 4, known)

    assert sorted(i.nodeid for i in order) == sorted(i.nodeid for i in items)
    slices, start = [], 0
    for size in slice_sizes(len(items), 4):
        slices.append(order[start:start + size])
        start += size
    loads = [sum(known.get(i.nodeid, 0.2) for i in s) for s in slices]
    assert max(loads) - min(loads) <= 30                  # 420 s in all, ~105 a worker
    for s in slices:
        secs = [known.get(i.nodeid, 0.0) for i in s]
        quick = secs.index(0.0)
        assert all(secs[:quick]) and not any(secs[quick:])   # long ones at the front
        assert s[0].nodeid in known                        # every worker starts with a long one
    homes = {n for n, s in enumerate(slices) for i in s if i.nodeid.startswith("t/fleet.py")}
    assert len(homes) == 1                                 # one live fleet, not three
    assert slices[0][0].nodeid == "t/a.py::long7"          # the longest starts at once
    (home,) = homes
    assert [i.nodeid for i in slices[home][:3]] == [f"t/fleet.py::view{i}" for i in range(3)]
