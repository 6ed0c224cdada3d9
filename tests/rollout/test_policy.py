"""RolloutPolicy loading: a valid policy becomes typed waves; every mistake is an error at its
line, naming the object, and the policy is left out (it releases nothing half-understood)."""

from __future__ import annotations

import pytest

from gitfleet.model.loader import load_fleet
from gitfleet.model.rollouts import MaxUnavailable

GOOD = """apiVersion: gitfleet.io/v1alpha1
kind: RolloutPolicy
metadata:
  name: web
spec:
  selector: {matchLabels: {tier: web}}
  waves:
  - {name: canary, clusterAffinity: {matchLabels: {ring: canary}}, bake: 10m}
  - {name: early, percent: 20, bake: 30m}
  - {name: rest}
  maxUnavailable: 10%
  healthTimeout: 15m
  onFailure: Rollback
"""


def errors(text: str, path: str = "policies/rollout.yaml") -> list[str]:
    fleet = load_fleet({path: text.encode()})
    assert not fleet.rollouts or not fleet.errors
    return [p.format() for p in fleet.errors]


def test_a_valid_policy_loads_typed() -> None:
    fleet = load_fleet({"policies/rollout.yaml": GOOD.encode()})
    assert fleet.errors == ()
    (policy,) = fleet.rollouts
    assert [w.name for w in policy.waves] == ["canary", "early", "rest"]
    assert policy.waves[0].bake == 600 and policy.waves[1].percent == 20
    assert policy.waves[2].affinity is None and policy.waves[2].percent is None
    assert policy.max_unavailable == MaxUnavailable(10, percent=True)
    assert policy.max_unavailable.of(25) == 2 and policy.max_unavailable.of(3) == 1
    assert policy.health_timeout == 900 and policy.on_failure == "Rollback"


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("{name: rest}", "{name: canary}",
     "policies/rollout.yaml:10: RolloutPolicy/web: spec.waves[2].name: wave 'canary' is named "
     "twice"),
    ("{name: early, percent: 20, bake: 30m}",
     "{name: early, percent: 20, clusterAffinity: {}, bake: 30m}",
     "policies/rollout.yaml:9: RolloutPolicy/web: spec.waves[1]: clusterAffinity or percent, "
     "not both"),
    ("{name: early, percent: 20, bake: 30m}", "{name: early}",
     "policies/rollout.yaml:9: RolloutPolicy/web: spec.waves[1] (early): needs clusterAffinity "
     "or percent"),
    ("bake: 30m", "bake: 30 minutes",
     "policies/rollout.yaml:9: RolloutPolicy/web: spec.waves[1].bake: not a duration"),
    ("healthTimeout: 15m", "healthTimeout: soon",
     "policies/rollout.yaml:12: RolloutPolicy/web: spec.healthTimeout: not a duration"),
    ("maxUnavailable: 10%", "maxUnavailable: 0",
     "policies/rollout.yaml:11: RolloutPolicy/web: spec.maxUnavailable: 0 must be at least 1"),
    ("maxUnavailable: 10%", "maxUnavailable: 120%",
     "policies/rollout.yaml:11: RolloutPolicy/web: spec.maxUnavailable: '120%' must be between"),
    ("onFailure: Rollback", "onFailure: Retry", "policies/rollout.yaml:13: RolloutPolicy/web: "),
    ("  - {name: rest}\n", "  - {name: rest, bakes: 1m}\n",
     "policies/rollout.yaml:10: RolloutPolicy/web: `spec.waves[2].bakes` is not a field of "
     "RolloutPolicy; did you mean `bake`?"),
    ("  waves:\n", "  wave:\n", "RolloutPolicy/web: `spec.wave` is not a field of RolloutPolicy; "
     "did you mean `waves`?"),
    ("  name: web\n", "  name: web\n  namespace: default\n",
     "policies/rollout.yaml:5: RolloutPolicy/default/web: RolloutPolicy is fleet-wide"),
    ("gitfleet.io/v1alpha1", "gitfleet.io/v1",
     "policies/rollout.yaml:1: RolloutPolicy/web: RolloutPolicy is read at apiVersion "
     "gitfleet.io/v1alpha1"),
])
def test_mistakes_are_errors_at_their_line(old: str, new: str, expected: str) -> None:
    assert old in GOOD
    found = errors(GOOD.replace(old, new, 1))
    assert any(e.startswith(expected) or expected in e for e in found), found


def test_no_waves_is_an_error() -> None:
    text = GOOD.split("  waves:")[0] + "  waves: []\n"
    found = errors(text)
    assert found and "spec.waves" in found[0], found


def test_a_misspelled_kind_is_named() -> None:
    found = errors(GOOD.replace("kind: RolloutPolicy", "kind: RolloutPolicie"))
    assert found and "did you mean `RolloutPolicy`?" in found[0]


def test_a_policy_under_templates_is_refused() -> None:
    found = errors(GOOD, path="templates/rollout.yaml")
    assert found and "belongs under policies/" in found[0]


def test_policy_labels_are_read_for_the_selector() -> None:
    sub = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: web, namespace: web, labels: {tier: web}}
spec:
  subscribers: [{clusterAffinity: {}}]
  feeds: [{apiVersion: v1, kind: Namespace, name: web}]
"""
    fleet = load_fleet({"policies/sub.yaml": sub.encode()})
    assert fleet.subscriptions[0].labels == {"tier": "web"}
