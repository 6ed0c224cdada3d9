"""`fleet.yaml: guards.maxDeletions` read strictly, and the rule it sets (docs/guards.md)."""

from __future__ import annotations

import pytest

from gitfleet.model.loader import load_settings
from gitfleet.model.settings import FleetSettings, MaxDeletions
from gitfleet.render.guards import Hold, approvals, judge


def _paths(cluster: str, n: int) -> list[str]:
    return [f"clusters/{cluster}/app/app/ConfigMap.cfg-{i}.yaml" for i in range(n)] + \
        [f"clusters/{cluster}/app/app/description.yaml", f"clusters/{cluster}/cluster.yaml"]


def test_guards_are_read_from_fleet_yaml_with_their_defaults() -> None:
    settings, problems = load_settings({"fleet.yaml": b"guards:\n  maxDeletions:\n"
                                                      b"    share: 0.5\n    count: 50\n"})
    assert problems == []
    assert settings.max_deletions == MaxDeletions(share=0.5, count=50)
    assert FleetSettings().max_deletions == MaxDeletions(share=0.2, count=10)
    settings, problems = load_settings({"fleet.yaml": b"guards:\n  maxDeletions: {count: 3}\n"})
    assert problems == [] and settings.max_deletions == MaxDeletions(share=0.2, count=3)


@pytest.mark.parametrize(("text", "message"), [
    (b"guards:\n  maxDeletion: {count: 5}\n", "`guards.maxDeletion` is not a field of "
                                               "FleetSettings; did you mean `maxDeletions`?"),
    (b"guards:\n  maxDeletions: {shares: 0.1}\n", "`guards.maxDeletions.shares` is not a "
                                                   "field of FleetSettings; did you mean "
                                                   "`share`?"),
    (b"guards:\n  maxDeletions: {share: 2}\n", "guards.maxDeletions.share"),
    (b"guards:\n  maxDeletions: {count: -1}\n", "guards.maxDeletions.count"),
])
def test_a_wrong_guard_is_an_error_naming_it(text: bytes, message: str) -> None:
    settings, problems = load_settings({"fleet.yaml": text})
    assert settings == FleetSettings()
    assert any(message in p.message for p in problems), [p.message for p in problems]


def test_a_cluster_is_held_only_past_both_the_count_and_the_share() -> None:
    limit = MaxDeletions(share=0.2, count=10)
    before = [*_paths("big", 100), *_paths("small", 8), *_paths("mid", 40)]
    after = [*_paths("big", 89), *_paths("mid", 28)]      # small emptied, big -11, mid -12
    verdict = judge(limit, before=before, after=after, globs=())
    # big: 11 > 10 but 11% of 100; small: 100% but 8 objects; mid: 12 > 10 and 30%
    assert verdict.held == (Hold("mid", 12, 40),)
    assert verdict.held[0].message == "held: would delete 12 of 40 objects in mid"
    assert judge(limit, before=before, after=[], globs=()).held == (
        Hold("big", 100, 100), Hold("mid", 40, 40))


def test_an_approval_names_clusters_by_glob() -> None:
    globs = approvals(["prod-*, staging-east", " ", "c1"])
    assert globs == ("c1", "prod-*", "staging-east")
    before = [*_paths("prod-east", 20), *_paths("staging-west", 20), *_paths("c1", 20)]
    verdict = judge(MaxDeletions(), before=before, after=[], globs=globs)
    assert [h.cluster for h in verdict.held] == ["staging-west"]
    assert verdict.approved == ("c1", "prod-east")
