"""fleet.yaml `heartbeat:`: read, checked at its lines, and turned into what agents get."""

from __future__ import annotations

import pytest
import yaml

from gitfleet.model.heartbeats import TARGET_RATE, HeartbeatSettings, automatic_interval
from gitfleet.model.loader import load_fleet, load_settings
from gitfleet.render.core import render
from gitfleet.wire.heartbeat import HeartbeatTiming


def _problems(text: bytes) -> list[str]:
    return [p.format() for p in load_settings({"fleet.yaml": text})[1]]


def test_the_settings_are_read() -> None:
    settings, problems = load_settings({"fleet.yaml": b"heartbeat:\n  interval: 5m\n"
                                                      b"  jitter: 20%\n  tolerance: 7m\n"})
    assert problems == []
    assert settings.heartbeat == HeartbeatSettings(interval=300.0, jitter=0.2, tolerance=420.0)
    assert settings.heartbeat.timing(10) == HeartbeatTiming(300.0, 0.2, 420.0)


def test_the_older_intervals_heartbeat_is_the_same_interval() -> None:
    settings, problems = load_settings({"fleet.yaml": b"intervals:\n  heartbeat: 2m\n"})
    assert problems == [] and settings.heartbeat.interval == 120.0
    assert _problems(b"intervals:\n  heartbeat: 1m\nheartbeat:\n  interval: 2m\n") == [
        "fleet.yaml:2: FleetSettings: intervals.heartbeat 1m and heartbeat.interval 2m "
        "disagree (they are the same setting: keep one)"]


@pytest.mark.parametrize(("text", "expected"), [
    (b"kind: FleetSettings\nheartbeat:\n  intervall: 5m\n",
     "fleet.yaml:3: FleetSettings: `heartbeat.intervall` is not a field of FleetSettings; "
     "did you mean `interval`?"),
    (b"heartbeet:\n  interval: 5m\n",
     "fleet.yaml:1: FleetSettings: `heartbeet` is not a field of FleetSettings; "
     "did you mean `heartbeat`?"),
    (b"heartbeat:\n  interval: 5 minutes\n", "fleet.yaml:2: FleetSettings: heartbeat.interval: "
                                             "'5 minutes' is not valid here"),
    (b"heartbeat:\n  interval: 5m\n  jitter: 60%\n",
     "fleet.yaml:3: FleetSettings: heartbeat.jitter: 60% is more than 50%"),
    (b"heartbeat:\n  jitter: 0.1\n", "fleet.yaml:2: FleetSettings: heartbeat.jitter: "),
    (b"heartbeat:\n  interval: 500ms\n",
     "fleet.yaml:2: FleetSettings: heartbeat interval 500ms is less than 1s"),
    (b"heartbeat:\n  interval: 5m\n  jitter: 10%\n  tolerance: 330s\n",
     "fleet.yaml:4: FleetSettings: heartbeat.tolerance 330s is too short for the interval "
     "300s and its jitter 10%: a live agent may stay silent 330s, and its heartbeat needs "
     "time to reach the hub; give at least 360s"),
    (b"heartbeat:\n  interval: 1m\n  jitter: 0%\n  tolerance: 61s\n",   # no margin at all
     "fleet.yaml:4: FleetSettings: heartbeat.tolerance 61s is too short for the interval 60s"),
])
def test_a_wrong_setting_is_said_at_its_line(text: bytes, expected: str) -> None:
    settings, problems = load_settings({"fleet.yaml": text})
    assert any(p.format().startswith(expected) for p in problems), \
        [p.format() for p in problems]
    assert settings.heartbeat == HeartbeatSettings()


def test_the_automatic_interval_keeps_idle_heartbeats_within_the_budget() -> None:
    for clusters in (1, 10, 300, 1_000, 3_000, 10_000, 30_000, 100_000):
        for repositories in (1, 2, 4, 10):
            interval = automatic_interval(clusters, repositories)
            assert interval >= 60.0
            assert clusters / (repositories * interval) <= TARGET_RATE
    assert automatic_interval(3) == 60.0               # small fleets: as before
    assert automatic_interval(10_000) == 2400.0        # 4.2 pushes/s on one repository
    assert automatic_interval(10_000, 4) == 600.0      # 4.2 pushes/s on each of 4
    # the steps are coarse: a fleet growing by one cluster keeps its interval
    assert automatic_interval(10_001) == automatic_interval(10_000)


CLUSTERS = {f"clusters/c{i}.yaml": (
    f"apiVersion: clusters.clusternet.io/v1beta1\nkind: ManagedCluster\n"
    f"metadata: {{name: c{i}}}\nspec: {{clusterId: id-{i}}}\n").encode() for i in range(400)}
SHARDS = b"""status:
  repositories:
    - {name: a, url: https://git.example.com/status-a.git}
    - {name: b, url: https://git.example.com/status-b.git}
"""


def test_a_tolerance_an_automatic_interval_outgrows_is_an_error_of_the_fleet() -> None:
    fleet_yaml = b"kind: FleetSettings\nheartbeat:\n  tolerance: 2m\n"
    small = load_fleet({"fleet.yaml": fleet_yaml, **dict(list(CLUSTERS.items())[:5])})
    assert small.errors == () and small.heartbeat == HeartbeatTiming(60, 0.1, 120)
    big = load_fleet({"fleet.yaml": fleet_yaml, **CLUSTERS})
    assert [p.format() for p in big.errors] == [
        "fleet.yaml:3: FleetSettings: heartbeat.tolerance 120s is too short for the interval "
        "120s (the automatic interval for 400 clusters in one status repository) and its "
        "jitter 10%: a live agent may stay silent 132s, and its heartbeat needs time to reach "
        "the hub; give at least 162s or lower the interval"]
    assert big.heartbeat == HeartbeatTiming(120, 0.1, 300)   # the default tolerance meanwhile
    # over two status repositories each holds about 200: a minute again, and 2m is enough
    sharded = load_fleet({"fleet.yaml": fleet_yaml + SHARDS, **CLUSTERS})
    assert sharded.errors == () and sharded.heartbeat == HeartbeatTiming(60, 0.1, 120)


def test_the_automatic_interval_follows_the_busiest_status_repository() -> None:
    assert load_fleet(CLUSTERS).heartbeat == HeartbeatTiming(120, 0.1, 300)
    assert load_fleet({"fleet.yaml": SHARDS, **CLUSTERS}).heartbeat.interval == 60
    rendered = render(load_fleet(CLUSTERS))
    shipped = yaml.safe_load(rendered.files["clusters/c7/cluster.yaml"])["agent"]
    assert shipped == {"heartbeatInterval": "2m", "heartbeatJitter": "10%",
                       "heartbeatTolerance": "5m"}
