"""What an HPA remembers between evaluations: recent recommendations and scale events.

Kubernetes keeps these in the controller's memory; gitfleet's hub restarts at any instant, so
the history is plain data (`to_data` / `from_data`) the hub persists with its decisions. Times
are seconds since the epoch. Entries too old to matter are dropped as new ones come in, so the
history stays as small as the longest window or policy period allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.errors import InputError


@dataclass(frozen=True)
class Recommendation:
    """The replicas the metrics asked for at `time`, before stabilization and rate limits."""

    time: float
    replicas: int


@dataclass(frozen=True)
class ScaleEvent:
    """A rescale at `time` by `change` replicas (always positive; the list says which way)."""

    time: float
    change: int


def _entries(data: Any, field: str, key: str, *, path: str) -> list[tuple[float, int]]:
    if data is None:
        return []
    if not isinstance(data, list):
        raise InputError(f"{field}: must be a list", path=path)
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise InputError(f"{field}[{i}]: must be a mapping", path=path)
        t, n = item.get("time"), item.get(key)
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise InputError(f"{field}[{i}].time: must be a number of seconds", path=path)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"{field}[{i}].{key}: must be a non-negative integer", path=path)
        out.append((float(t), n))
    return out


@dataclass(frozen=True)
class AutoscaleHistory:
    recommendations: tuple[Recommendation, ...] = ()
    scale_up_events: tuple[ScaleEvent, ...] = ()
    scale_down_events: tuple[ScaleEvent, ...] = ()

    def to_data(self) -> dict[str, Any]:
        return {
            "recommendations": [{"time": r.time, "replicas": r.replicas}
                                for r in self.recommendations],
            "scaleUpEvents": [{"time": e.time, "change": e.change} for e in self.scale_up_events],
            "scaleDownEvents": [{"time": e.time, "change": e.change}
                                for e in self.scale_down_events],
        }

    @staticmethod
    def from_data(data: Any, *, path: str = "") -> AutoscaleHistory:
        if data is None:
            return AutoscaleHistory()
        if not isinstance(data, Mapping):
            raise InputError("autoscale history: must be a mapping", path=path)
        return AutoscaleHistory(
            recommendations=tuple(
                Recommendation(time=t, replicas=n) for t, n in
                _entries(data.get("recommendations"), "recommendations", "replicas", path=path)),
            scale_up_events=tuple(
                ScaleEvent(time=t, change=n) for t, n in
                _entries(data.get("scaleUpEvents"), "scaleUpEvents", "change", path=path)),
            scale_down_events=tuple(
                ScaleEvent(time=t, change=n) for t, n in
                _entries(data.get("scaleDownEvents"), "scaleDownEvents", "change", path=path)))
