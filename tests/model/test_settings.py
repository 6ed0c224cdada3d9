"""fleet.yaml: defaults, every setting read, durations, and a broken file falling back to the
defaults with an error naming it."""

from __future__ import annotations

import pytest

from gitfleet.model.loader import load_fleet, load_settings
from gitfleet.model.settings import DEFAULT_MAX_FILE_BYTES, FleetSettings, parse_duration
from tests.conftest import ROOT

FULL = b"""apiVersion: gitfleet.io/v1alpha1
kind: FleetSettings
branchPrefix: fleet/prod
sourceBranch: release
registration:
  approval: auto
limits:
  maxFileBytes: 2048
  maxPruneShare: 0.25
intervals:
  fetch: 500ms
  heartbeat: 2m
failover:
  tolerationSeconds: 60
  purgeMode: Directly
  gracePeriodSeconds: 30
"""


def test_no_fleet_yaml_means_defaults() -> None:
    settings, problems = load_settings({})
    assert problems == []
    assert settings == FleetSettings()
    assert (settings.branch_prefix, settings.source_branch, settings.registration_approval,
            settings.max_file_bytes, settings.max_prune_share) == (
        "gitfleet", "main", "manual", 10 * 1024 * 1024, 0.5)
    assert (settings.failover_toleration_seconds, settings.purge_mode,
            settings.grace_period_seconds) == (300, "Gracefully", 600)
    assert settings.interval("fetch", 15.0) == 15.0


def test_empty_fleet_yaml_means_defaults() -> None:
    assert load_settings({"fleet.yaml": b"# nothing yet\n"}) == (FleetSettings(), [])


def test_every_setting_is_read() -> None:
    settings, problems = load_settings({"fleet.yaml": FULL})
    assert problems == []
    assert settings.branch_prefix == "fleet/prod"
    assert settings.source_branch == "release"
    assert settings.registration_approval == "auto"
    assert (settings.max_file_bytes, settings.max_prune_share) == (2048, 0.25)
    assert settings.intervals == {"fetch": 0.5, "heartbeat": 120.0}
    assert settings.interval("heartbeat", 60.0) == 120.0
    assert (settings.failover_toleration_seconds, settings.purge_mode,
            settings.grace_period_seconds) == (60, "Directly", 30)


def test_the_worked_example_fleet_yaml_is_valid() -> None:
    settings, problems = load_settings({"fleet.yaml": (ROOT / "fleet.yaml").read_bytes()})
    assert problems == []
    assert settings.max_file_bytes == DEFAULT_MAX_FILE_BYTES


@pytest.mark.parametrize(("text", "message"), [
    (b"limts:\n  maxFileBytes: 5\n", "`limts` is not a field of FleetSettings; did you mean "
                                     "`limits`?"),
    (b"limits:\n  maxFileByte: 5\n", "`limits.maxFileByte` is not a field of FleetSettings"),
    (b"limits:\n  maxFileBytes: 0\n", "limits.maxFileBytes: 0 is less than the minimum of 1"),
    (b"limits:\n  maxPruneShare: 2\n", "limits.maxPruneShare"),
    (b"intervals:\n  fetch: 15 seconds\n", "intervals.fetch: '15 seconds' is not valid here"),
    (b"registration:\n  approval: always\n", "registration.approval"),
    (b"failover:\n  purgeMode: Later\n", "failover.purgeMode"),
    (b"kind: Settings\n", "kind"),
    (b"- a list\n", "(document)"),
])
def test_bad_settings_fall_back_to_defaults_with_an_error(text: bytes, message: str) -> None:
    settings, problems = load_settings({"fleet.yaml": text})
    assert settings == FleetSettings()
    assert problems and all(p.path == "fleet.yaml" for p in problems)
    assert any(message in p.message for p in problems), [p.message for p in problems]


def test_invalid_yaml_in_fleet_yaml_names_the_line() -> None:
    settings, [problem] = load_settings({"fleet.yaml": b"limits:\n  maxFileBytes: [1\n"})
    assert settings == FleetSettings()
    assert problem.path == "fleet.yaml" and problem.line == 3
    assert "invalid YAML" in problem.message


def test_settings_problems_reach_the_fleet_errors() -> None:
    fleet = load_fleet({"fleet.yaml": b"limts: {}\n"})
    assert [p.format() for p in fleet.errors] == [
        "fleet.yaml:1: FleetSettings: `limts` is not a field of FleetSettings; did you mean "
        "`limits`?"]


def test_max_file_bytes_applies_to_every_fleet_file() -> None:
    big = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: " + b"x" * 200 + b"}\n"
    fleet = load_fleet({"fleet.yaml": b"limits:\n  maxFileBytes: 100\n",
                        "templates/big.yaml": big,
                        "templates/small.yaml": b"apiVersion: v1\nkind: Namespace\n"
                                                b"metadata: {name: n}\n"})
    assert [(p.path, p.message) for p in fleet.errors] == [
        ("templates/big.yaml", f"file is {len(big)} bytes, over the limit of 100 "
                               "(fleet.yaml limits.maxFileBytes)")]
    assert load_fleet({"templates/big.yaml": big}).errors == ()


@pytest.mark.parametrize(("text", "seconds"), [
    ("500ms", 0.5), ("15s", 15.0), ("2m", 120.0), ("1h", 3600.0), ("1.5s", 1.5), (" 3s ", 3.0),
    ("1m30s", 90.0), ("1h2m3s", 3723.0), (7, 7.0), (0.25, 0.25),
])
def test_parse_duration(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "15", "s", "-1s", "1 m", "fast", "1e3s"])
def test_parse_duration_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)
