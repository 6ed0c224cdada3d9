"""`RolloutPolicy` (gitfleet.io/v1alpha1): how a change to the Descriptions it governs is
released to the clusters, wave by wave (see `gitfleet.rollout`).

The loader turns the checked YAML into these frozen values: durations are seconds,
`maxUnavailable` keeps whether it was a count or a percentage (a percentage is taken of each
wave's size when the wave is released).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.model.objects import Origin

ROLLOUT_KIND = "RolloutPolicy"
ROLLOUT_VERSION = "v1alpha1"
PAUSE = "Pause"
ROLLBACK = "Rollback"
DEFAULT_HEALTH_TIMEOUT = 15 * 60.0


@dataclass(frozen=True)
class Wave:
    """One wave: the clusters an affinity picks, or a percentage of those no earlier wave took,
    or (the last wave only) every cluster still left."""

    name: str
    affinity: Mapping[str, Any] | None = field(default=None, hash=False, compare=False)
    percent: int | None = None
    bake: float = 0.0          # seconds the wave must stay healthy before the next one


@dataclass(frozen=True)
class MaxUnavailable:
    """A count of clusters, or a percentage of a wave's clusters (rounded down, at least 1)."""

    value: int = 100
    percent: bool = True

    def of(self, size: int) -> int:
        if not self.percent:
            return max(1, self.value)
        return max(1, math.floor(size * self.value / 100))

    def text(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)


@dataclass(frozen=True)
class RolloutPolicy:
    name: str
    selector: Mapping[str, Any] | None = field(hash=False, compare=False)
    waves: tuple[Wave, ...]
    max_unavailable: MaxUnavailable = MaxUnavailable()
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT
    on_failure: str = PAUSE
    digest: str = ""
    origin: Origin = field(default=Origin(""), compare=False)


def parse_max_unavailable(value: object) -> MaxUnavailable:
    """`3` or `"10%"`; ValueError saying what is accepted otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is neither a number of clusters nor a percentage")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"{value} must be at least 1 cluster")
        return MaxUnavailable(value, percent=False)
    text = str(value).strip()
    if text.endswith("%") and text[:-1].isdigit():
        number = int(text[:-1])
        if not 1 <= number <= 100:
            raise ValueError(f"{text!r} must be between 1% and 100%")
        return MaxUnavailable(number, percent=True)
    if text.isdigit() and int(text) >= 1:
        return MaxUnavailable(int(text), percent=False)
    raise ValueError(f"{text!r} is neither a number of clusters (3) nor a percentage (10%)")
