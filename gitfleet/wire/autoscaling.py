"""`autoscaling.yaml` in the state tree: what the hub's autoscalers must remember across a
restart — the replica totals it renders, the bounds cron rules set, each FederatedHPA's history
and last scale time, each cron rule's record. Written only with a decision, so steady load costs
no commit.

What the file says, in its own terms: a scaled workload by its apiVersion, kind, namespace and
name (the hub keys its totals by the model's ObjectKey and converts, in
`gitfleet.hub.autoscalingstate`). The history and cron records are the autoscale package's own
values, below this layer. Unknown fields are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet import yamlio
from gitfleet.autoscale.cron import RuleRecord
from gitfleet.autoscale.history import AutoscaleHistory
from gitfleet.errors import InputError
from gitfleet.timestamps import isoformat, parse_iso
from gitfleet.wire.emit import emit
from gitfleet.wire.fields import items, known, mapping, required

AUTOSCALING_FILE = "autoscaling.yaml"
API_VERSION = "gitfleet.io/v1alpha1"
KIND = "AutoscalingState"

_TOP_FIELDS = frozenset({"apiVersion", "kind", "replicas", "federatedHPAs",
                         "cronFederatedHPAs"})
_REPLICA_FIELDS = frozenset({"apiVersion", "kind", "namespace", "name", "replicas"})
_HPA_FIELDS = frozenset({"namespace", "name", "lastScaleTime", "bounds", "specBounds",
                         "history"})
_BOUNDS_FIELDS = frozenset({"minReplicas", "maxReplicas"})
_HISTORY_FIELDS = {"recommendations": frozenset({"time", "replicas"}),
                   "scaleUpEvents": frozenset({"time", "change"}),
                   "scaleDownEvents": frozenset({"time", "change"})}
_CRON_FIELDS = frozenset({"namespace", "name", "rules"})
_RULE_FIELDS = frozenset({"name", "since", "fingerprint", "successfulExecutions",
                          "failedExecutions"})
_EXECUTION_FIELDS = frozenset({"rule", "scheduleTime", "executionTime", "result", "message",
                               "appliedReplicas", "appliedMinReplicas", "appliedMaxReplicas"})


@dataclass(frozen=True)
class ReplicaTotal:
    """The replica total the hub renders for one autoscaled workload."""

    api_version: str
    kind: str
    namespace: str
    name: str
    replicas: int


@dataclass(frozen=True)
class HpaRecord:
    """What persists for one FederatedHPA."""

    history: AutoscaleHistory = AutoscaleHistory()
    last_scale: float | None = None
    bounds: tuple[int, int] | None = None          # (min, max) a cron rule set
    spec_bounds: tuple[int, int] | None = None     # the spec's bounds when it did


@dataclass(frozen=True)
class AutoscalingFile:
    """What `autoscaling.yaml` says."""

    replicas: tuple[ReplicaTotal, ...] = ()
    hpas: Mapping[str, HpaRecord] = field(default_factory=dict)                # "ns/name"
    crons: Mapping[str, Mapping[str, RuleRecord]] = field(default_factory=dict)  # -> rule

    @property
    def empty(self) -> bool:
        return not (self.replicas or self.hpas or self.crons)


def _target_name(r: ReplicaTotal) -> str:
    return f"{r.kind}/{r.namespace + '/' if r.namespace else ''}{r.name}"


def autoscaling_file(state: AutoscalingFile) -> bytes | None:
    """The file's bytes; None when there is nothing to remember (no file)."""
    if state.empty:
        return None
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    doc["replicas"] = [{"apiVersion": r.api_version, "kind": r.kind, "namespace": r.namespace,
                        "name": r.name, "replicas": r.replicas}
                       for r in sorted(state.replicas, key=_target_name)]
    doc["federatedHPAs"] = [_hpa_doc(name, h) for name, h in sorted(state.hpas.items())]
    doc["cronFederatedHPAs"] = [
        {"namespace": name.partition("/")[0], "name": name.partition("/")[2],
         "rules": [{"name": r, **rec.to_dict()} for r, rec in sorted(rules.items())]}
        for name, rules in sorted(state.crons.items())]
    return emit(doc).encode()


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


def read_autoscaling(data: bytes | None, path: str = AUTOSCALING_FILE) -> AutoscalingFile:
    """`autoscaling.yaml` (empty for no file); InputError naming `path` and the field when it
    is not a file gitfleet wrote."""
    if not data:
        return AutoscalingFile()
    doc = mapping(yamlio.load_one(data, path), path, AUTOSCALING_FILE)
    if doc and doc.get("kind") != KIND:
        raise InputError(f"not an {KIND} (kind: {doc.get('kind')})", path=path)
    known(doc, _TOP_FIELDS, path, KIND)
    try:
        replicas = tuple(_replica(r, path) for r in items(doc.get("replicas"), path, "replicas"))
        hpas = dict(_hpa(h, path)
                    for h in items(doc.get("federatedHPAs"), path, "federatedHPAs"))
        crons = dict(_cron(c, path)
                     for c in items(doc.get("cronFederatedHPAs"), path, "cronFederatedHPAs"))
    except (KeyError, TypeError, ValueError) as exc:   # inside a cron record or a history
        raise InputError(f"{type(exc).__name__}: {exc}", path=path) from None
    return AutoscalingFile(replicas=replicas, hpas=hpas, crons=crons)


def _replica(value: Any, path: str) -> ReplicaTotal:
    r = mapping(value, path, "replicas[]")
    where = f"replicas[] {r.get('kind', '')} {r.get('name', '')}".rstrip()
    known(r, _REPLICA_FIELDS, path, where)
    return ReplicaTotal(api_version=str(required(r, "apiVersion", path, where)),
                        kind=str(required(r, "kind", path, where)),
                        namespace=str(required(r, "namespace", path, where)),
                        name=str(required(r, "name", path, where)),
                        replicas=int(required(r, "replicas", path, where)))


def _hpa(value: Any, path: str) -> tuple[str, HpaRecord]:
    h = mapping(value, path, "federatedHPAs[]")
    name = f"{required(h, 'namespace', path, 'federatedHPAs[]')}/" \
           f"{required(h, 'name', path, 'federatedHPAs[]')}"
    where = f"federatedHPAs[] {name}"
    known(h, _HPA_FIELDS, path, where)
    history = mapping(h.get("history"), path, f"{where}: history")
    known(history, _HISTORY_FIELDS, path, f"{where}: history")
    for key, fields in _HISTORY_FIELDS.items():
        for entry in items(history.get(key), path, f"{where}: history.{key}"):
            known(mapping(entry, path, f"{where}: history.{key}[]"), fields, path,
                  f"{where}: history.{key}[]")
    last = h.get("lastScaleTime")
    return name, HpaRecord(
        history=AutoscaleHistory.from_data(h.get("history"), path=path),
        last_scale=parse_iso(str(last)) if last else None,
        bounds=_pair(h.get("bounds"), path, f"{where}: bounds"),
        spec_bounds=_pair(h.get("specBounds"), path, f"{where}: specBounds"))


def _pair(value: Any, path: str, where: str) -> tuple[int, int] | None:
    if value is None:
        return None
    m = mapping(value, path, where)
    known(m, _BOUNDS_FIELDS, path, where)
    return (int(required(m, "minReplicas", path, where)),
            int(required(m, "maxReplicas", path, where)))


def _cron(value: Any, path: str) -> tuple[str, dict[str, RuleRecord]]:
    c = mapping(value, path, "cronFederatedHPAs[]")
    name = f"{required(c, 'namespace', path, 'cronFederatedHPAs[]')}/" \
           f"{required(c, 'name', path, 'cronFederatedHPAs[]')}"
    where = f"cronFederatedHPAs[] {name}"
    known(c, _CRON_FIELDS, path, where)
    rules: dict[str, RuleRecord] = {}
    for value in items(c.get("rules"), path, f"{where}: rules"):
        r = mapping(value, path, f"{where}: rules[]")
        rule = str(required(r, "name", path, f"{where}: rules[]"))
        here = f"{where}: rule {rule}"
        known(r, _RULE_FIELDS, path, here)
        for key in ("successfulExecutions", "failedExecutions"):
            for e in items(r.get(key), path, f"{here}: {key}"):
                known(mapping(e, path, f"{here}: {key}[]"), _EXECUTION_FIELDS, path,
                      f"{here}: {key}[]")
        rules[rule] = RuleRecord.from_dict(r)
    return name, rules
