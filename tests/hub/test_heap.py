"""The hub's heap between rounds (gitfleet.collector): what a round keeps is frozen, so later
collections do not scan it again (at 100,000 clusters a full pass over a shard's heap cost
2 s of CPU every few one-change rounds), and cyclic garbage is still freed: a round's at once,
an older round's at the next whole-heap collection."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from gitfleet.collector import HEAP
from gitfleet.hub.hub import Hub
from gitfleet.hub.round import Contribution, RoundInputs
from gitfleet.state.store import open_store
from tests.hub.fleet import commit, example_repo


class Cycle:
    """An object in a reference cycle (only the cycle collector frees it)."""

    def __init__(self) -> None:
        self.me = self


class CyclicPlanner:
    """A planner that leaves cyclic garbage in every round and keeps one cycle alive until
    the round after (as a hub's caches drop an older round's result)."""

    def __init__(self) -> None:
        self.kept: Cycle | None = None
        self.made: list[weakref.ref[Cycle]] = []

    def plan(self, inputs: RoundInputs) -> Contribution:
        garbage, self.kept = Cycle(), Cycle()      # the last round's kept one is dropped
        self.made += [weakref.ref(garbage), weakref.ref(self.kept)]
        return Contribution()


def change(repo: Path, line: str) -> None:
    commit(repo, line, {"fleet.yaml": (repo / "fleet.yaml").read_text() + f"{line}\n"})


def tracked(obj: object) -> bool:
    """Whether the collector's generations (not the frozen objects) hold `obj`."""
    return any(o is obj for o in gc.get_objects())


def test_a_round_freezes_what_it_keeps_and_frees_its_cycles(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HEAP, "full_every", 3)
    monkeypatch.setattr(HEAP, "rounds", 0)
    repo = example_repo(tmp_path / "fleet")
    hub = Hub(open_store(str(repo)))
    planner, passes = CyclicPlanner(), HEAP.full_passes
    hub.planners.append(planner)
    try:
        hub.run_once()
        assert hub.writer is not None
        index = hub.writer.index.folders
        assert not tracked(index)           # frozen: no later pass scans the state's index
        assert planner.made[0]() is None    # the round's own garbage cycle: freed at once
        assert planner.made[1]() is not None
        change(repo, "# a change")
        hub.run_once()
        # the first round's kept cycle, dropped now, was frozen: it waits for a whole pass
        assert planner.made[1]() is not None and planner.made[2]() is None
        change(repo, "# another")
        hub.run_once()                      # the third round since: the whole heap collected
        assert planner.made[1]() is None and planner.made[3]() is None
        assert planner.made[5]() is not None
        assert HEAP.full_passes == passes + 1 and not tracked(index)
    finally:
        gc.unfreeze()
