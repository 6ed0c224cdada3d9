"""Heartbeat judgement and the taints it gives, in virtual time (plain numbers for "now")."""

from __future__ import annotations

from typing import Any

import pytest

from gitfleet.clock import isoformat, parse_iso
from gitfleet.lifecycle.judgement import Condition, judge
from gitfleet.lifecycle.taints import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    HubTaint,
    cluster_taints,
    toleration_seconds,
)
from gitfleet.wire.status import ClusterStatus

T0 = 1_767_225_600.0


def reported(doc: dict[str, Any]) -> ClusterStatus:
    """A status.yaml as the hub reads it."""
    return ClusterStatus.from_dict({"kind": "ClusterStatus", "cluster": "c", **doc})


def status(*, at: float = T0, interval: int = 60, **probes: bool) -> ClusterStatus:
    hb = {"time": isoformat(at), "intervalSeconds": interval,
          "livez": True, "readyz": True, "healthz": True, **probes}
    return reported({"heartbeat": hb})


def condition(doc: ClusterStatus | dict[str, Any] | None, now: float) -> Condition:
    typed = reported(doc) if isinstance(doc, dict) else doc
    return judge(typed, now=now, parse_time=parse_iso).condition


def test_no_heartbeat_is_never_reported() -> None:
    assert condition(None, T0) is Condition.NEVER_REPORTED
    assert condition({"heartbeat": {}}, T0) is Condition.NEVER_REPORTED
    assert condition({"heartbeat": {"time": "yesterday"}}, T0) is Condition.NEVER_REPORTED


def test_a_heartbeat_older_than_three_intervals_is_unknown_from_its_expiry() -> None:
    assert condition(status(), T0 + 180) is Condition.READY        # exactly 3 intervals
    j = judge(status(), now=T0 + 181, parse_time=parse_iso)
    assert (j.condition, j.since, j.last_heartbeat) == (Condition.UNKNOWN, T0 + 180, T0)
    assert condition(status(interval=10), T0 + 31) is Condition.UNKNOWN


@pytest.mark.parametrize(("probes", "expected"), [
    ({}, Condition.READY),
    ({"healthz": False}, Condition.READY),                       # livez and readyz
    ({"livez": False, "readyz": False}, Condition.READY),        # or healthz
    ({"livez": False, "healthz": False}, Condition.NOT_READY),
    ({"readyz": False, "healthz": False}, Condition.NOT_READY),
])
def test_ready_is_livez_and_readyz_or_healthz(probes: dict[str, bool],
                                              expected: Condition) -> None:
    assert condition(status(**probes), T0 + 1) is expected


def test_unknown_is_tainted_noschedule_at_once_and_noexecute_after_the_eviction_timeout() -> None:
    j = judge(status(), now=T0 + 200, parse_time=parse_iso)
    assert cluster_taints(j, now=T0 + 200, first_seen=None, eviction_timeout=300) == (
        HubTaint(UNREACHABLE_TAINT, "NoSchedule", T0 + 180),)
    later = judge(status(), now=T0 + 480, parse_time=parse_iso)
    assert cluster_taints(later, now=T0 + 480, first_seen=None, eviction_timeout=300) == (
        HubTaint(UNREACHABLE_TAINT, "NoSchedule", T0 + 180),
        HubTaint(UNREACHABLE_TAINT, "NoExecute", T0 + 480))


def test_not_ready_counts_from_when_the_hub_first_saw_it() -> None:
    doc = status(at=T0 + 100, livez=False, healthz=False)
    j = judge(doc, now=T0 + 110, parse_time=parse_iso)
    assert cluster_taints(j, now=T0 + 110, first_seen=None, eviction_timeout=60) == (
        HubTaint(NOT_READY_TAINT, "NoSchedule", T0 + 110),)
    assert cluster_taints(j, now=T0 + 110, first_seen=T0, eviction_timeout=60) == (
        HubTaint(NOT_READY_TAINT, "NoSchedule", T0),
        HubTaint(NOT_READY_TAINT, "NoExecute", T0 + 60))
    ready = judge(status(at=T0 + 100), now=T0 + 110, parse_time=parse_iso)
    assert cluster_taints(ready, now=T0 + 110, first_seen=T0, eviction_timeout=60) == ()


@pytest.mark.parametrize(("tolerations", "expected"), [
    ([], 300.0),
    ([{"key": UNREACHABLE_TAINT, "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 30}], 30.0),
    ([{"key": "cluster.karmada.io/unreachable", "operator": "Exists",
       "tolerationSeconds": 10}], 10.0),                          # Karmada's name
    ([{"operator": "Exists", "tolerationSeconds": 5}], 5.0),      # every taint
    ([{"key": UNREACHABLE_TAINT, "operator": "Exists"}], None),   # forever
    ([{"key": UNREACHABLE_TAINT, "operator": "Exists", "effect": "NoSchedule",
       "tolerationSeconds": 1}], 300.0),                          # another effect
    ([{"key": NOT_READY_TAINT, "operator": "Exists", "tolerationSeconds": 1}], 300.0),
    ([{"key": UNREACHABLE_TAINT, "value": "x", "tolerationSeconds": 1}], 300.0),
])
def test_how_long_a_policy_tolerates_the_unreachable_taint(
        tolerations: list[dict[str, Any]], expected: float | None) -> None:
    assert toleration_seconds(tolerations, UNREACHABLE_TAINT, 300.0) == expected
