"""`fleet.yaml`: the settings a fleet repo carries for the hub and its agents."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitfleet.durations import parse_duration
from gitfleet.layout import DEFAULT_PREFIX

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024

@dataclass(frozen=True)
class FleetSettings:
    branch_prefix: str = DEFAULT_PREFIX
    source_branch: str = "main"
    registration_approval: str = "manual"
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_prune_share: float = 0.5
    intervals: dict[str, float] = field(default_factory=dict)
    failover_toleration_seconds: int = 300
    purge_mode: str = "Gracefully"
    grace_period_seconds: int = 600
    secrets_plaintext: str = "warn"  # a plaintext Secret template: "warn" or "deny" (an error)

    def interval(self, name: str, default: float) -> float:
        return self.intervals.get(name, default)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> FleetSettings:
        limits = data.get("limits", {})
        failover = data.get("failover", {})
        return FleetSettings(
            branch_prefix=data.get("branchPrefix", DEFAULT_PREFIX),
            source_branch=data.get("sourceBranch", "main"),
            registration_approval=data.get("registration", {}).get("approval", "manual"),
            max_file_bytes=limits.get("maxFileBytes", DEFAULT_MAX_FILE_BYTES),
            max_prune_share=float(limits.get("maxPruneShare", 0.5)),
            intervals={k: parse_duration(v) for k, v in data.get("intervals", {}).items()},
            failover_toleration_seconds=failover.get("tolerationSeconds", 300),
            purge_mode=failover.get("purgeMode", "Gracefully"),
            grace_period_seconds=failover.get("gracePeriodSeconds", 600),
            secrets_plaintext=data.get("secrets", {}).get("plaintext", "warn"),
        )
