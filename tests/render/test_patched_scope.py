"""A render whose fleets were patched from one another (gitfleet.model.fleetpatch) asks about
the changed files' clusters and Localizations alone: the same scope as comparing the whole
fleets, and, over a row of commits, byte for byte what a full render of a freshly loaded
fleet gives."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

from gitfleet.model.fleetpatch import FleetPatcher
from gitfleet.model.loader import Fleet, change_between, load_fleet
from gitfleet.render.core import render
from gitfleet.render.incremental import (
    _localized_clusters,
    _same_but_localizations,
    render_incremental,
)
from gitfleet.render.plans import keeps_placement
from gitfleet.render.scope import (
    _changed_clusters,
    _changed_override_targets,
    changed_paths,
    scope_of,
)
from tests.render.test_incremental import _edit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from fleetgen import cluster_name, generate  # noqa: E402

LOCALIZATION = f"policies/localizations/{cluster_name(0)}.yaml"
TUNED = f'"tuned": "{cluster_name(0)}"'
Step = Callable[[dict[str, bytes]], dict[str, bytes]]


def _without(files: dict[str, bytes], path: str) -> dict[str, bytes]:
    return {p: d for p, d in files.items() if p != path}


def _steps(fleet: dict[str, bytes]) -> list[tuple[str, Step]]:
    second = f"clusters/{cluster_name(1)}.yaml"
    third = f"policies/localizations/{cluster_name(1)}.yaml"
    return [
        ("a Localization tuned", lambda f: _edit(f, LOCALIZATION, TUNED, '"tuned": "one"')),
        ("a cluster's group", lambda f: _edit(f, second, "group: b", "group: a")),
        ("tuned again and a label", lambda f: _edit(
            _edit(f, LOCALIZATION, '"tuned": "one"', '"tuned": "two"'),
            second, "shard: '1'", "shard: '7'")),
        ("a Localization removed", lambda f: _without(f, third)),
        ("it comes back", lambda f: {**f, third: fleet[third]}),
        ("a cluster removed", lambda f: _without(f, second)),
        ("it comes back", lambda f: {**f, second: fleet[second]}),
        ("a cluster file broken", lambda f: {**f, second: b"kind: [\n"}),
        ("fixed", lambda f: {**f, second: fleet[second]}),
        ("tuned once more", lambda f: _edit(f, LOCALIZATION, '"tuned": "two"',
                                            '"tuned": "three"')),
    ]


def _unpatched(fleet: Fleet) -> Fleet:
    """The same fleet without what its patch says: the render compares it in full."""
    return dataclasses.replace(fleet, change=None)


def test_what_a_patch_says_gives_the_scope_the_whole_fleets_give() -> None:
    files = generate(clusters=24, templates=10, units=2, karmada_share=0.5)
    patcher = FleetPatcher()
    base = patcher.load(dict(files))
    for what, step in _steps(files):
        head_files = step(files)
        head = patcher.load(dict(head_files))
        assert change_between(base, head) is not None, what
        full = _unpatched(head)
        assert change_between(base, full) is None
        paths = changed_paths(files, head_files)
        assert scope_of(base, head, paths) == scope_of(base, full, paths), what
        assert _changed_clusters(base, head) == _changed_clusters(base, full), what
        assert _changed_override_targets(base, head) == \
            _changed_override_targets(base, full), what
        assert _same_but_localizations(base, head) == _same_but_localizations(base, full)
        assert _localized_clusters(base, head) == _localized_clusters(base, full), what
        files, base = head_files, head


def test_renders_of_patched_fleets_in_a_row_equal_full_renders_of_fresh_loads() -> None:
    files = generate(clusters=24, templates=10, units=1, karmada_share=0.0)
    patcher = FleetPatcher()
    base = patcher.load(dict(files))
    fleets = {"c0": base}
    state = render(base, source_commit="c0", fleet_at=fleets.__getitem__).files
    incremental = 0
    for n, (what, step) in enumerate(_steps(files), start=1):
        head_files = step(files)
        head = patcher.load(dict(head_files))
        fresh = load_fleet(dict(head_files))
        commit = f"c{n}"
        fleets[commit] = head
        full = render(fresh, source_commit=commit, previous_files=state,
                      fleet_at={**fleets, commit: fresh}.__getitem__)
        quick = render_incremental(base, head, paths=changed_paths(files, head_files),
                                   previous_files=state, source_commit=commit,
                                   fleet_at=fleets.__getitem__)
        if quick is not None:
            incremental += 1
            assert sorted(quick.files) == sorted(full.files), what
            for path in full.files:
                assert quick.files[path] == full.files[path], (what, path)
            assert quick.errors == full.errors and quick.warnings == full.warnings, what
        state = full.files
        files, base = head_files, head
    assert incremental >= 5       # (broken files and changed cluster sets render in full)


def test_a_taint_a_patch_brings_or_takes_is_seen_by_the_scheduling() -> None:
    files = generate(clusters=6, templates=4, units=1, karmada_share=0.0)
    path = f"clusters/{cluster_name(3)}.yaml"
    tainted = files[path].replace(
        b"spec:\n", b"spec:\n  taints:\n  - {key: maintenance, effect: NoSchedule}\n", 1)
    steps = (files, {**files, path: tainted}, files, {**files, path: tainted})
    assert [keeps_placement(load_fleet(dict(s))) for s in steps] == [False, True, False, True]
    patcher = FleetPatcher()
    # (asked in a row: each patched fleet is counted from the one before, kept alive here)
    fleets, seen = [], []
    for s in steps:
        fleets.append(patcher.load(dict(s)))
        seen.append(keeps_placement(fleets[-1]))
    assert seen == [False, True, False, True]
    assert patcher.patched == 3
