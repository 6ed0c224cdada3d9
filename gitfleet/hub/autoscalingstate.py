"""`autoscaling.yaml` in the state tree: what the hub's autoscalers must remember across a
restart (the totals it renders, the bounds cron rules set, each FederatedHPA's history and last
scale time, each cron rule's record). Written only with a decision, so steady load costs no
commit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet import yamlio
from gitfleet.autoscale.cron import RuleRecord
from gitfleet.autoscale.history import AutoscaleHistory
from gitfleet.clock import isoformat, parse_iso
from gitfleet.errors import InputError
from gitfleet.logs import log
from gitfleet.model.objects import ObjectKey
from gitfleet.wire.emit import emit

LOG = logging.getLogger("gitfleet.hub.autoscaling")
AUTOSCALING_FILE = "autoscaling.yaml"
API_VERSION = "gitfleet.io/v1alpha1"


@dataclass(frozen=True)
class HpaRecord:
    """What persists for one FederatedHPA."""

    history: AutoscaleHistory = AutoscaleHistory()
    last_scale: float | None = None
    bounds: tuple[int, int] | None = None          # (min, max) a cron rule set
    spec_bounds: tuple[int, int] | None = None     # the spec's bounds when it did


@dataclass
class AutoscalingState:
    """`autoscaling.yaml`, parsed."""

    totals: dict[ObjectKey, tuple[str, int]] = field(default_factory=dict)  # key -> (apiV, n)
    hpas: dict[str, HpaRecord] = field(default_factory=dict)                     # "ns/name"
    crons: dict[str, dict[str, RuleRecord]] = field(default_factory=dict)   # "ns/name" -> rule

    def to_file(self) -> bytes | None:
        if not (self.totals or self.hpas or self.crons):
            return None
        doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "AutoscalingState"}
        doc["replicas"] = [{"apiVersion": api, "kind": k.kind, "namespace": k.namespace,
                            "name": k.name, "replicas": n}
                           for k, (api, n) in sorted(self.totals.items(), key=lambda i: str(i[0]))]
        doc["federatedHPAs"] = [_hpa_doc(name, h) for name, h in sorted(self.hpas.items())]
        doc["cronFederatedHPAs"] = [
            {"namespace": name.partition("/")[0], "name": name.partition("/")[2],
             "rules": [{"name": r, **rec.to_dict()} for r, rec in sorted(rules.items())]}
            for name, rules in sorted(self.crons.items())]
        return emit(doc).encode()

    @classmethod
    def from_file(cls, data: bytes | None) -> AutoscalingState:
        out = cls()
        if not data:
            return out
        try:
            doc = yamlio.load_one(data, AUTOSCALING_FILE) or {}
            for r in doc.get("replicas") or ():
                api = str(r["apiVersion"])
                key = ObjectKey(api.rpartition("/")[0], str(r["kind"]), str(r["namespace"]),
                                str(r["name"]))
                out.totals[key] = (api, int(r["replicas"]))
            for h in doc.get("federatedHPAs") or ():
                out.hpas[f"{h['namespace']}/{h['name']}"] = HpaRecord(
                    history=AutoscaleHistory.from_data(h.get("history"), path=AUTOSCALING_FILE),
                    last_scale=parse_iso(h["lastScaleTime"]) if h.get("lastScaleTime") else None,
                    bounds=_pair(h.get("bounds")), spec_bounds=_pair(h.get("specBounds")))
            for c in doc.get("cronFederatedHPAs") or ():
                out.crons[f"{c['namespace']}/{c['name']}"] = {
                    str(r["name"]): RuleRecord.from_dict(r) for r in c.get("rules") or ()}
        except (InputError, KeyError, TypeError, ValueError, AttributeError) as exc:
            # Not a file this code wrote: start afresh rather than stop scaling for good.
            log(LOG, logging.WARNING, "autoscaling.yaml unreadable; starting afresh",
                error=str(exc))
            return cls()
        return out


def _pair(value: Any) -> tuple[int, int] | None:
    if not isinstance(value, Mapping):
        return None
    return int(value["minReplicas"]), int(value["maxReplicas"])


def _hpa_doc(name: str, h: HpaRecord) -> dict[str, Any]:
    ns, _, short = name.partition("/")
    out: dict[str, Any] = {"namespace": ns, "name": short}
    if h.last_scale is not None:
        out["lastScaleTime"] = isoformat(h.last_scale)
    if h.bounds is not None and h.spec_bounds is not None:
        out["bounds"] = {"minReplicas": h.bounds[0], "maxReplicas": h.bounds[1]}
        out["specBounds"] = {"minReplicas": h.spec_bounds[0], "maxReplicas": h.spec_bounds[1]}
    out["history"] = h.history.to_data()
    return out


def copy_state(st: AutoscalingState) -> AutoscalingState:
    """A copy whose maps can change without touching `st`."""
    return AutoscalingState(totals=dict(st.totals), hpas=dict(st.hpas),
                      crons={k: dict(v) for k, v in st.crons.items()})
