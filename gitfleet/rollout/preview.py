"""The waves a change will go through: for `gitfleet diff`, before anything is merged.

Per RolloutPolicy that governs a Description the change touches: its waves in order, each
with the touched clusters it holds (empty waves are kept, so the order reads as the policy).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

from gitfleet.model.loader import Fleet
from gitfleet.rollout.governed import governed_folders
from gitfleet.rollout.waves import assign_waves


@dataclass(frozen=True)
class WavePreview:
    name: str
    clusters: tuple[str, ...]
    bake: float


@dataclass(frozen=True)
class RolloutPreview:
    policy: str
    waves: tuple[WavePreview, ...]
    on_failure: str

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "onFailure": self.on_failure,
                "waves": [{"name": w.name, "clusters": list(w.clusters), "bakeSeconds": w.bake}
                          for w in self.waves]}

    def line(self, *, names: int = 5) -> str:
        """`rollout web: canary (staging) -> early (prod-east) -> rest (prod-west)`."""
        parts = []
        for w in self.waves:
            shown = ", ".join(w.clusters[:names])
            if len(w.clusters) > names:
                shown += f" and {len(w.clusters) - names} more"
            parts.append(f"{w.name} ({shown or 'none'})")
        return f"rollout {self.policy}: " + " -> ".join(parts) + \
            f"; on failure: {self.on_failure}"


def preview(fleet: Fleet, touched: Mapping[str, Set[str]]) -> tuple[RolloutPreview, ...]:
    """`touched`: cluster -> the Description folders the change touches there."""
    governed = governed_folders(fleet)
    out = []
    for policy in fleet.rollouts:
        mine = governed[policy.name]
        hit = {c for c, units in touched.items() if units & mine and c in fleet.clusters}
        if not hit:
            continue
        waves = assign_waves(policy, fleet.clusters)
        out.append(RolloutPreview(
            policy=policy.name, on_failure=policy.on_failure,
            waves=tuple(WavePreview(w.name, tuple(sorted(c for c in hit if waves[c] == i)),
                                    w.bake) for i, w in enumerate(policy.waves))))
    return tuple(out)
