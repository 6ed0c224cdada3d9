"""The judge against the peers' own test objects (tests/health/peers: the situations of
gitops-engine's pkg/health tests, Argo CD's health customizations for built-in kinds and
kstatus's status tests, written anew). Each case says the peer's verdict and gitfleet's; where
they differ the case says why, and docs/health.md names the side gitfleet takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet.health import judge
from gitfleet.wire.status import Health

PEERS = Path(__file__).parent / "peers"
# The cases where gitfleet sides with one peer against the other (listed in docs/health.md);
# agreement must not fall below this many of the cases.
AGREEMENT_FLOOR = 116


def _docs() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{path.stem}: {doc['case']}", doc) for path in sorted(PEERS.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text())]


@pytest.mark.parametrize("case", [pytest.param(doc, id=name) for name, doc in _docs()])
def test_peer_case(case: dict[str, Any]) -> None:
    verdict = judge(case["object"], now=case.get("now"))
    assert verdict.health is Health(case["want"]), verdict.message
    assert case.get("message", "") in verdict.message


def test_every_disagreement_says_why_and_agreement_holds() -> None:
    agree, differ = [], []
    for name, doc in _docs():
        Health(doc["peer"])  # a verdict gitfleet knows
        if doc["peer"] == doc["want"]:
            assert "why" not in doc, name
            agree.append(name)
        else:
            assert doc.get("why"), f"{name}: differs from its peer without saying why"
            differ.append(name)
    assert len(agree) >= AGREEMENT_FLOOR, differ
