"""fleet.yaml values that would mislead are errors at their line: credentials in any form of a
status repository URL, a heartbeat tolerance no stopped cluster outlasts, and `intervals` keys
nothing reads (collect, debounce, sync) -- the last ones without dropping the other settings."""

from __future__ import annotations

import pytest

from gitfleet.model.loader import load_fleet

HEAD = "apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\n"


def _errors(text: str) -> list[str]:
    return [p.format() for p in load_fleet({"fleet.yaml": (HEAD + text).encode()}).errors]


@pytest.mark.parametrize("url", [
    "ssh://git:s3cret@git.example.com/status.git",
    "https://git.example.com/status.git?private_token=s3cret",
    "https://oauth2:s3cret@git.example.com/status.git",
    "https://s3cret@git.example.com/status.git",
    "git:s3cret@git.example.com:status.git",
    "https://git.example.com/status.git#s3cret",
])
def test_a_status_url_carrying_a_secret_is_refused_without_repeating_it(url: str) -> None:
    errors = _errors(f"status:\n  repositories:\n    - name: a\n      url: {url}\n")
    assert len(errors) == 1, errors
    assert errors[0].startswith("fleet.yaml:6: ") and "must not carry credentials" in errors[0]
    assert "s3cret" not in errors[0]


@pytest.mark.parametrize("url", ["ssh://git@git.example.com/status.git",
                                 "git@git.example.com:status.git",
                                 "https://git.example.com/push/{cluster}/status.git"])
def test_urls_without_secrets_stay_good(url: str) -> None:
    key = "pushUrl" if "{cluster}" in url else "url"
    extra = "      url: https://git.example.com/status.git\n" if key == "pushUrl" else ""
    assert _errors(f"status:\n  repositories:\n    - name: a\n{extra}      {key}: {url}\n") == []


def test_a_tolerance_over_a_week_is_refused_at_its_line() -> None:
    errors = _errors("heartbeat:\n  interval: 5m\n  tolerance: 100000h\n")
    assert len(errors) == 1 and errors[0].startswith("fleet.yaml:5: "), errors
    assert "longer than 604800s (7 days)" in errors[0] and "at most 168h" in errors[0]
    assert _errors("heartbeat:\n  interval: 5m\n  tolerance: 168h\n") == []


def test_an_interval_needing_a_tolerance_over_a_week_is_refused() -> None:
    errors = _errors("heartbeat:\n  interval: 200h\n")
    assert len(errors) == 1 and errors[0].startswith("fleet.yaml:4: "), errors
    assert "heartbeat interval 720000s is too long" in errors[0]


@pytest.mark.parametrize(("key", "flag"), [("collect", "--collect-interval"),
                                           ("debounce", "--debounce"), ("sync", "--interval")])
def test_intervals_nothing_reads_are_errors_naming_the_flag(key: str, flag: str) -> None:
    fleet = load_fleet({"fleet.yaml": (HEAD + f"branchPrefix: fleet/prod\nintervals:\n"
                                       f"  fetch: 30s\n  {key}: 20s\n").encode()})
    errors = [p.format() for p in fleet.errors]
    assert len(errors) == 1 and errors[0].startswith("fleet.yaml:6: "), errors
    assert f"intervals.{key} is not read from fleet.yaml" in errors[0] and flag in errors[0]
    # the other settings apply: nothing of the file is dropped for a key that never worked
    assert fleet.settings.branch_prefix == "fleet/prod"
    assert fleet.settings.interval("fetch", 15.0) == 30.0
