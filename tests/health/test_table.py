"""The judge against our own case table (tests/health/cases), modelled on the test data of
gitops-engine's pkg/health and kstatus's status package: one live object per case, the health
a person would expect, and a phrase the message must carry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet.health import HealthRules, judge
from gitfleet.wire.status import Health

CASES = Path(__file__).parent / "cases"


def _cases() -> list[Any]:
    out = []
    for path in sorted(CASES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            out.append(pytest.param(doc, id=f"{path.stem}: {doc['case']}"))
    return out


@pytest.mark.parametrize("case", _cases())
def test_case(case: dict[str, Any]) -> None:
    rules = HealthRules.from_list(case.get("rules"))
    verdict = judge(case["object"], rules=rules, now=case.get("now"))
    assert verdict.health is Health(case["want"]), verdict.message
    assert case.get("message", "") in verdict.message


def test_every_built_in_kind_has_cases() -> None:
    from gitfleet.health import BUILT_IN

    seen = {(str(doc["object"].get("apiVersion", "")).rpartition("/")[0],
             doc["object"]["kind"])
            for path in CASES.glob("*.yaml") for doc in yaml.safe_load_all(path.read_text())}
    missing = [k for k in BUILT_IN if k not in seen and k != ("extensions", "Ingress")]
    assert missing == []
