"""The hub's incremental render gives byte for byte what a full render gives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gitfleet.filemap import Overlay
from gitfleet.model.loader import load_fleet
from gitfleet.render.core import RenderResult, render
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


def _quick(base_files: dict[str, bytes], head_files: dict[str, bytes]) -> tuple[
        RenderResult, RenderResult]:
    """(incremental with the previous totals, full) of a change, the way a hub renders it."""
    base, head = load_fleet(base_files), load_fleet(head_files)
    fleets = {"b": base, "h": head}
    previous = render(base, source_commit="b", fleet_at=fleets.__getitem__)
    full = render(head, source_commit="h", previous_files=previous.files,
                  fleet_at=fleets.__getitem__)
    quick = render_incremental(base, head, paths=changed_paths(base_files, head_files),
                               previous_files=previous.files, source_commit="h",
                               fleet_at=fleets.__getitem__,
                               previous_totals=(previous.descriptions, previous.objects))
    assert quick is not None
    assert dict(quick.files) == full.files
    assert quick.errors == full.errors and quick.warnings == full.warnings
    assert (quick.descriptions, quick.objects) == (full.descriptions, full.objects)
    assert quick.clusters == full.clusters           # counted when asked for
    return quick, full


def _written(result: RenderResult) -> set[str]:
    """The cluster folders an incremental render wrote files into."""
    assert isinstance(result.files, Overlay)
    return {p.split("/")[1] for p in result.files.changes if p.startswith("clusters/")}


def test_a_localization_change_renders_its_cluster_only() -> None:
    files = generate(clusters=40, templates=30, units=6)
    quick, _ = _quick(files, _edit(files, "policies/localizations/c00000.yaml",
                                   '"tuned": "c00000"', '"tuned": "yes"'))
    assert _written(quick) == {"c00000"}
    # a template change reaches every cluster its Subscription binds
    quick, full = _quick(files, _edit(files, "templates/app000/objects.yaml", "level", "lvl"))
    assert len(_written(quick)) == len(full.clusters)


def test_a_localization_change_keeps_the_other_clusters_problems() -> None:
    # prod-east's own Localization fails (a patch on a path its ConfigMap lacks): a warning
    # naming prod-east that a render of prod-west alone cannot make again, yet must keep
    bad = (b"apiVersion: apps.clusternet.io/v1alpha1\nkind: Localization\nmetadata:\n"
           b"  name: web-east-bad\n  namespace: gitfleet-prod-east\nspec:\n"
           b"  overridePolicy: ApplyNow\n  feed:\n    apiVersion: v1\n    kind: ConfigMap\n"
           b"    name: web-config\n    namespace: web\n  overrides:\n    - name: broken\n"
           b"      type: JSONPatch\n      value:\n        - op: replace\n"
           b"          path: /data/no-such-key/deeper\n          value: x\n")
    base = {**EXAMPLE, "policies/web/localization-prod-east.yaml": bad}
    head = _edit(base, "policies/web/localization-prod-west.yaml", '"cacheSeconds": 120',
                 '"cacheSeconds": 300')
    quick, full = _quick(base, head)
    assert any(p.message.endswith("(cluster prod-east)") for p in full.warnings)
    assert _written(quick) == {"prod-west"}
    # and the failing Localization itself is a change of prod-east only
    quick, _ = _quick(head, _edit(head, "policies/web/localization-prod-east.yaml",
                                  "value: x", "value: y"))
    assert _written(quick) == {"prod-east"}


def test_a_localization_change_under_steady_division_equals_a_full_render() -> None:
    # Dynamic division keeps replicas where the previous state put them, in every cluster:
    # scheduling then reads every cluster's previous Description, even for one cluster's change
    files = generate(clusters=12, templates=30, units=6)
    files = _edit(files, "policies/app003/subscription.yaml", "type: Static", "type: Dynamic")
    quick, _ = _quick(files, _edit(files, "policies/localizations/c00000.yaml",
                                   '"tuned": "c00000"', '"tuned": "yes"'))
    assert _written(quick) == {"c00000"}
