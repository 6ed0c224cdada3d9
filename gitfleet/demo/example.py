"""The worked example fleet, shipped inside the package so the demo runs from any install.

It is a copy of the repository's top-level `clusters/`, `policies/`, `templates/` and
`fleet.yaml` (a test keeps the two equal). The demo runs all three: two with agents, and
`staging` in Push mode, applied by the hub's push worker.
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable

DEMO_CLUSTERS = ("prod-east", "prod-west")    # each with an agent (Pull mode)
PUSH_CLUSTERS = ("staging",)                  # Push mode, no agent: the hub's worker applies
# Files that only concern clusters the demo does not run.
LEFT_OUT: dict[str, tuple[str, ...]] = {}


def _walk(node: Traversable, prefix: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        rel = f"{prefix}{child.name}"
        if child.is_dir():
            out.update(_walk(child, rel + "/"))
        elif child.name.endswith((".yaml", ".yml")):
            out[rel] = child.read_bytes()
    return out


def worked_example() -> dict[str, bytes]:
    """Every file of the worked example: repo path -> content."""
    return _walk(resources.files("gitfleet.demo") / "example", "")


def demo_fleet() -> dict[str, bytes]:
    """The worked example with only the demo's clusters."""
    drop = {p for paths in LEFT_OUT.values() for p in paths}
    return {p: d for p, d in worked_example().items() if p not in drop}
