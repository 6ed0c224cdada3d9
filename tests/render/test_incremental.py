"""The hub's incremental render gives byte for byte what a full render gives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from gitfleet.render.incremental import render_incremental
from gitfleet.render.scope import changed_paths
from gitfleet.source import read_worktree

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from fleetgen import generate  # noqa: E402

EXAMPLE = read_worktree(ROOT)


def _edit(files: dict[str, bytes], path: str, old: str, new: str) -> dict[str, bytes]:
    text = files[path].decode()
    assert old in text, (path, old)
    return {**files, path: text.replace(old, new, 1).encode()}


def _check(base_files: dict[str, bytes], head_files: dict[str, bytes]) -> bool:
    """Incremental == full; returns whether the incremental path was taken."""
    base, head = load_fleet(base_files), load_fleet(head_files)
    fleets = {"b": base, "h": head}
    previous = render(base, source_commit="b", fleet_at=fleets.__getitem__)
    full = render(head, source_commit="h", previous_files=previous.files,
                  fleet_at=fleets.__getitem__)
    quick = render_incremental(base, head, paths=changed_paths(base_files, head_files),
                               previous_files=previous.files, source_commit="h",
                               fleet_at=fleets.__getitem__)
    if quick is None:
        return False
    assert sorted(quick.files) == sorted(full.files)
    for path in full.files:
        assert quick.files[path] == full.files[path], path
    assert quick.errors == full.errors and quick.warnings == full.warnings
    assert quick.clusters == full.clusters
    return True


EXAMPLE_CHANGES = {
    "localization": ("policies/web/localization-prod-west.yaml", '"cacheSeconds": 120',
                     '"cacheSeconds": 300'),
    "applylater localization": ("policies/web/localization-prod-west.yaml", '"team": "web-west"',
                                '"team": "west"'),
    "globalization": ("policies/web/globalization.yaml", "nginx:1.25.4", "nginx:1.25.5"),
    "template of a subscription": ("templates/web/web.yaml", "replicas: 6", "replicas: 8"),
    "subscription weights": ("policies/web/subscription.yaml", "weight: 1\n    - cluster",
                             "weight: 3\n    - cluster"),
    "karmada template": ("templates/metrics/metrics.yaml", "scrape_interval: 30s",
                         "scrape_interval: 10s"),
    "karmada weights": ("policies/metrics/propagation.yaml", "weight: 3", "weight: 5"),
    "karmada override": ("policies/metrics/overrides.yaml", "mirror: us-west", "mirror: west"),
    "cluster label": ("clusters/prod-west.yaml", "region: us-west\nspec",
                      "region: us-west\n    tier: large\nspec"),
    "new feed missing": ("policies/api/subscription.yaml", "name: api\n",
                         "name: api-missing\n"),
}


@pytest.mark.parametrize("change", sorted(EXAMPLE_CHANGES))
def test_incremental_equals_full_on_the_worked_example(change: str) -> None:
    path, old, new = EXAMPLE_CHANGES[change]
    assert _check(EXAMPLE, _edit(EXAMPLE, path, old, new))


def test_new_and_removed_units_and_shared_templates() -> None:
    sub = EXAMPLE["policies/api/subscription.yaml"].decode()
    twin = sub.replace("name: api\n  namespace: api", "name: api-twin\n  namespace: api", 1)
    with_twin = {**EXAMPLE, "policies/api/twin.yaml": twin.encode()}
    assert _check(EXAMPLE, with_twin)  # a second Subscription claims the same objects
    assert _check(with_twin, EXAMPLE)
    without = {p: d for p, d in EXAMPLE.items() if p != "policies/metrics/overrides.yaml"}
    assert _check(EXAMPLE, without)


def test_declines_when_only_a_full_render_is_safe() -> None:
    broken = {**EXAMPLE, "policies/web/globalization.yaml": b"{"}
    assert not _check(EXAMPLE, broken)
    assert not _check(broken, EXAMPLE)
    faster = EXAMPLE["fleet.yaml"].replace(b"fetch: 15s", b"fetch: 5s")
    assert not _check(EXAMPLE, {**EXAMPLE, "fleet.yaml": faster})
    fewer = {p: d for p, d in EXAMPLE.items() if p != "clusters/staging.yaml"}
    assert not _check(EXAMPLE, fewer)


def test_incremental_equals_full_on_a_synthetic_fleet() -> None:
    files = generate(clusters=40, templates=30, units=6)
    assert _check(files, _edit(files, "policies/localizations/c00000.yaml", '"tuned": "c00000"',
                               '"tuned": "yes"'))
    assert _check(files, _edit(files, "templates/app005/objects.yaml", "level", "lvl"))
    assert _check(files, _edit(files, "templates/app000/objects.yaml", "level", "lvl"))
    assert _check(files, _edit(files, "clusters/c00001.yaml", "group: b", "group: a"))
