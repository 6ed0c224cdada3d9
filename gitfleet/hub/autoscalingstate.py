"""The hub's working copy of `autoscaling.yaml` (`gitfleet.wire.autoscaling`): the same
records, with the replica totals keyed by the model's ObjectKey (apiVersion kept beside the
count) and maps a round may change in place. Converts to and from the file, and starts afresh
from a file it cannot read rather than stop scaling for good.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from gitfleet.autoscale.cron import RuleRecord
from gitfleet.errors import InputError
from gitfleet.logs import log
from gitfleet.model.objects import ObjectKey
from gitfleet.wire.autoscaling import (
    AutoscalingFile,
    HpaRecord,
    ReplicaTotal,
    autoscaling_file,
    read_autoscaling,
)

LOG = logging.getLogger("gitfleet.hub.autoscaling")


@dataclass
class AutoscalingState:
    """`autoscaling.yaml`, as the autoscalers work on it."""

    totals: dict[ObjectKey, tuple[str, int]] = field(default_factory=dict)  # key -> (apiV, n)
    hpas: dict[str, HpaRecord] = field(default_factory=dict)                     # "ns/name"
    crons: dict[str, dict[str, RuleRecord]] = field(default_factory=dict)   # "ns/name" -> rule

    def to_file(self) -> bytes | None:
        return autoscaling_file(AutoscalingFile(
            replicas=tuple(ReplicaTotal(api, k.kind, k.namespace, k.name, n)
                           for k, (api, n) in self.totals.items()),
            hpas=self.hpas, crons=self.crons))

    @classmethod
    def from_file(cls, data: bytes | None) -> AutoscalingState:
        try:
            found = read_autoscaling(data)
        except InputError as exc:
            # Not a file this code wrote: start afresh rather than stop scaling for good.
            log(LOG, logging.WARNING, "autoscaling.yaml unreadable; starting afresh",
                error=str(exc))
            return cls()
        return cls(totals={ObjectKey(r.api_version.rpartition("/")[0], r.kind, r.namespace, r.name):
                           (r.api_version, r.replicas) for r in found.replicas},
                   hpas=dict(found.hpas),
                   crons={name: dict(rules) for name, rules in found.crons.items()})


def copy_state(st: AutoscalingState) -> AutoscalingState:
    """A copy whose maps can change without touching `st`."""
    return AutoscalingState(totals=dict(st.totals), hpas=dict(st.hpas),
                      crons={k: dict(v) for k, v in st.crons.items()})
