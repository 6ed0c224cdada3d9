"""Incremental renders in a row reuse the last scheduling only while it holds: each render
still gives byte for byte what a full render gives."""

from __future__ import annotations

import sys
from pathlib import Path

from gitfleet.model.loader import load_fleet
from gitfleet.render.lastplans import plans_for
from gitfleet.render.previous import PreviousState
from gitfleet.render.status import StatusSnapshot
from tests.render.test_incremental import _check, _edit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from fleetgen import cluster_name, generate  # noqa: E402

LOCALIZATION = f"policies/localizations/{cluster_name(0)}.yaml"
TUNED = f'"tuned": "{cluster_name(0)}"'


def test_renders_in_a_row_equal_full_renders_when_templates_and_clusters_move() -> None:
    # a Localization tuned (the last scheduling holds), then the divided Deployment's
    # replicas, then a cluster's group (each moves every cluster's share), then tuned again
    fleet = generate(clusters=24, templates=10, units=1, karmada_share=0.0)
    template = next(p for p in fleet if p.startswith("templates/"))
    steps = [
        lambda f: _edit(f, LOCALIZATION, TUNED, '"tuned": "one"'),
        lambda f: _edit(f, LOCALIZATION, '"tuned": "one"', '"tuned": "two"'),
        lambda f: _edit(_edit(f, template, "replicas: 72", "replicas: 50"),
                        LOCALIZATION, '"tuned": "two"', '"tuned": "three"'),
        lambda f: _edit(f, f"clusters/{cluster_name(1)}.yaml", "group: b", "group: a"),
        lambda f: _edit(f, LOCALIZATION, '"tuned": "three"', '"tuned": "four"'),
    ]
    for step in steps:
        head = step(fleet)
        _check(fleet, head)
        fleet = head


def test_plans_handed_out_again_are_copies() -> None:
    fleet = load_fleet(generate(clusters=6, templates=4, units=1, karmada_share=0.0))
    status, previous = StatusSnapshot(), PreviousState(None)
    first, _ = plans_for(fleet, status, previous)
    cluster = next(iter(first[0].clusters))
    placed = list(first[0].clusters[cluster])
    first[0].clusters[cluster].append(placed[0])          # what a render may add
    first[0].warnings.append("added by a render")
    again, _ = plans_for(fleet, status, previous)
    assert again[0].clusters[cluster] == placed and "added by a render" not in again[0].warnings
    assert again[0] is not first[0]
