"""The import contracts that name their source packages by hand cover every package.

The "Kubernetes client only under gitfleet.kube" and "Git plumbing only under gitfleet.state"
contracts in pyproject.toml list the packages they check. A package added later and not listed
(gitfleet.wire, gitfleet.health, ... were, for a while) could import `subprocess` or the
Kubernetes client with `lint-imports` still green; this test fails until it is listed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# the one package each contract leaves free
FREE = {"kubernetes": {"kube"}, "subprocess": {"state"}}


def _packages() -> set[str]:
    return {p.stem for p in (ROOT / "gitfleet").iterdir()
            if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").exists())}


def _contract(forbidden: str) -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "forbidden" and forbidden in contract["forbidden_modules"] \
                and len(contract["source_modules"]) > 10:
            return contract
    raise AssertionError(f"no contract forbids {forbidden}")


@pytest.mark.parametrize("forbidden", sorted(FREE))
def test_every_package_is_checked(forbidden: str) -> None:
    listed = {m.split(".")[1] for m in _contract(forbidden)["source_modules"]}
    missing = _packages() - listed - FREE[forbidden]
    assert not missing, f"add to the {forbidden} contract in pyproject.toml: {sorted(missing)}"
