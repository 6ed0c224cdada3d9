"""Every upstream HelmChart field gets its nearest meaning or is refused by name, with why."""

from __future__ import annotations

import pytest

from gitfleet.model.loader import load_fleet
from tests.charts.fleet import chart_fleet

REPO = "http://127.0.0.1:9/charts"


@pytest.mark.parametrize(("field", "why"), [
    ("atomic", "reverting the commit is the rollback"),
    ("upgradeAtomic", "reverting the commit is the rollback"),
    ("force", "never delete and re-create"),
])
def test_refused_fields_name_themselves_and_the_reason(field: str, why: str) -> None:
    fleet = load_fleet(chart_fleet(REPO, **{field: True}))
    [error] = [p for p in fleet.errors if p.obj == "HelmChart/apps/web"]
    assert f"`spec.{field}: true` is not supported" in error.message and why in error.message
    assert error.path == "templates/web.yaml" and error.line is not None


@pytest.mark.parametrize(("field", "value", "says"), [
    ("wait", False, "always waits for every object"),
    ("waitForJob", False, "always waits for its Jobs"),
    ("replaceCRDs", False, "applied and updated like any object"),
    ("replace", True, "no release records"),
    ("timeoutSeconds", 600, "recorded in description.yaml"),
])
def test_fields_without_their_upstream_effect_warn(field: str, value: object, says: str) -> None:
    fleet = load_fleet(chart_fleet(REPO, **{field: value}))
    assert fleet.errors == ()
    [warning] = [p for p in fleet.warnings if p.obj == "HelmChart/apps/web"]
    assert f"`spec.{field}" in warning.message and says in warning.message


def test_supported_fields_load_quietly() -> None:
    fleet = load_fleet(chart_fleet(REPO, wait=True, waitForJob=True, replaceCRDs=True,
                                   atomic=False, force=False, plainHTTP=True, skipCRDs=True,
                                   disableHooks=True, createNamespace=False,
                                   chartPullSecret={"name": "creds"}))
    assert fleet.errors == () and fleet.warnings == ()


def test_an_unknown_field_is_an_error_with_a_suggestion() -> None:
    fleet = load_fleet(chart_fleet(REPO, skipCRD=True))
    [error] = [p for p in fleet.errors if p.obj == "HelmChart/apps/web"]
    assert "skipCRD" in error.message and "skipCRDs" in error.message
