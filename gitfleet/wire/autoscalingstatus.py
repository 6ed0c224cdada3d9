"""The autoscalers' live status on the fleet-status branch: one file per FederatedHPA
(`autoscaling/federatedhpas/<ns>/<name>.yaml`) and per CronFederatedHPA
(`autoscaling/cronfederatedhpas/<ns>/<name>.yaml`).

The hub writes them each round; `gitfleet get fhpa|cronfhpa`, the dashboard and the demo read
them back. Writer and reader live here so the two cannot drift apart; a field the reader does
not know is an error naming it. The cron executions are the autoscale package's own values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitfleet.autoscale.cron import Execution
from gitfleet.errors import InputError
from gitfleet.timestamps import isoformat, parse_iso
from gitfleet.wire.emit import emit
from gitfleet.wire.fields import document, flag, items, known, mapping, number, required, text

API_VERSION = "gitfleet.io/v1alpha1"
FHPA_KIND = "FederatedHPAStatus"
CRON_KIND = "CronFederatedHPAStatus"
FHPA_DIR = "autoscaling/federatedhpas/"
CRON_DIR = "autoscaling/cronfederatedhpas/"

_FHPA_FIELDS = frozenset({"apiVersion", "kind", "namespace", "name", "target", "minReplicas",
                          "maxReplicas", "currentReplicas", "desiredReplicas",
                          "currentMetrics", "lastScaleTime", "reportingClusters",
                          "conditions"})
_CONDITION_FIELDS = frozenset({"type", "status", "reason", "message"})
_CRON_FIELDS = frozenset({"apiVersion", "kind", "namespace", "name", "target",
                          "executionHistories", "error", "rules"})
_RULE_FIELDS = frozenset({"ruleName", "schedule", "timeZone", "suspend", "nextExecutionTime",
                          "successfulExecutions", "failedExecutions"})
_EXECUTION_FIELDS = frozenset({"rule", "scheduleTime", "executionTime", "result", "message",
                               "appliedReplicas", "appliedMinReplicas", "appliedMaxReplicas"})


def fhpa_path(namespace: str, name: str) -> str:
    """Where a FederatedHPA's status file lives on the fleet-status branch."""
    return f"{FHPA_DIR}{namespace}/{name}.yaml"


@dataclass(frozen=True)
class ConditionRecord:
    """One condition of a FederatedHPA, as Kubernetes names an HPA's."""

    type: str
    status: str
    reason: str
    message: str

    def to_doc(self) -> dict[str, Any]:
        return {"type": self.type, "status": self.status, "reason": self.reason,
                "message": self.message}


@dataclass(frozen=True)
class FederatedHpaStatus:
    """A FederatedHPA's live status: bounds in force, replicas, metric values, conditions."""

    namespace: str
    name: str
    target: str                            # "Deployment/web"
    min_replicas: int
    max_replicas: int
    current: int
    desired: int
    metrics: str = ""                      # one line: no commit per metric change
    last_scale: float | None = None
    clusters: int = 0                      # Ready clusters whose pods were counted
    conditions: tuple[ConditionRecord, ...] = ()

    @property
    def path(self) -> str:
        return fhpa_path(self.namespace, self.name)

    @property
    def last_scale_text(self) -> str:
        return isoformat(self.last_scale) if self.last_scale else ""

    def condition(self, kind: str) -> ConditionRecord | None:
        return next((c for c in self.conditions if c.type == kind), None)

    def to_doc(self) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": FHPA_KIND,
                "namespace": self.namespace, "name": self.name, "target": self.target,
                "minReplicas": self.min_replicas, "maxReplicas": self.max_replicas,
                "currentReplicas": self.current, "desiredReplicas": self.desired,
                "currentMetrics": self.metrics,
                "lastScaleTime": self.last_scale_text,
                "reportingClusters": self.clusters,
                "conditions": [c.to_doc() for c in self.conditions]}


@dataclass(frozen=True)
class CronRuleStatus:
    """One cron rule: its schedule, its next run and its bounded execution history."""

    rule: str
    schedule: str
    time_zone: str
    suspend: bool
    next_run: float | None
    successes: tuple[Execution, ...] = ()
    failures: tuple[Execution, ...] = ()

    @property
    def next_run_text(self) -> str:
        return isoformat(self.next_run) if self.next_run is not None else ""

    def last(self) -> Execution | None:
        """The run scheduled last, successful or failed."""
        runs = [*self.successes, *self.failures]
        return max(runs, key=lambda e: isoformat(e.scheduled), default=None)

    def to_doc(self) -> dict[str, Any]:
        return {"ruleName": self.rule, "schedule": self.schedule, "timeZone": self.time_zone,
                "suspend": self.suspend, "nextExecutionTime": self.next_run_text,
                "successfulExecutions": [e.to_dict() for e in self.successes],
                "failedExecutions": [e.to_dict() for e in self.failures]}


@dataclass(frozen=True)
class CronFederatedHpaStatus:
    """A CronFederatedHPA's status: its rules, or why its rules could not be read."""

    namespace: str
    name: str
    target: str = ""                       # "FederatedHPA/web"
    rules: tuple[CronRuleStatus, ...] = ()
    error: str = ""                        # its spec's rules are broken (no rules then)

    @property
    def path(self) -> str:
        return f"{CRON_DIR}{self.namespace}/{self.name}.yaml"

    def to_doc(self) -> dict[str, Any]:
        if self.error:
            return {"namespace": self.namespace, "name": self.name, "error": self.error,
                    "rules": []}
        return {"apiVersion": API_VERSION, "kind": CRON_KIND,
                "namespace": self.namespace, "name": self.name, "target": self.target,
                "executionHistories": [r.to_doc() for r in self.rules]}


def status_files(hpas: Mapping[str, FederatedHpaStatus],
                 crons: Mapping[str, CronFederatedHpaStatus]) -> dict[str, bytes]:
    """The fleet-status files of the autoscalers, keyed "ns/name"."""
    out = {f"{FHPA_DIR}{name}.yaml": emit(s.to_doc()).encode()
           for name, s in sorted(hpas.items())}
    out.update({f"{CRON_DIR}{name}.yaml": emit(s.to_doc()).encode()
                for name, s in sorted(crons.items())})
    return out


def _time(doc: Mapping[str, Any], key: str, path: str, where: str) -> float | None:
    value = text(doc, key)
    try:
        return parse_iso(value) if value else None
    except ValueError:
        raise InputError(f"{where}: {key} is not a time: {value!r}", path=path) from None


def _name(doc: Mapping[str, Any], path: str, where: str) -> tuple[str, str]:
    return (str(required(doc, "namespace", path, where)),
            str(required(doc, "name", path, where)))


def read_fhpa_status(data: bytes | str, path: str) -> FederatedHpaStatus:
    """A FederatedHPA's status file; InputError naming `path` and the field when it is not a
    file gitfleet wrote."""
    doc = document(data, path, FHPA_KIND, _FHPA_FIELDS)
    ns, name = _name(doc, path, FHPA_KIND)
    where = f"{FHPA_KIND} {ns}/{name}"
    conditions = []
    for value in items(doc.get("conditions"), path, f"{where}: conditions"):
        c = mapping(value, path, f"{where}: conditions[]")
        known(c, _CONDITION_FIELDS, path, f"{where}: conditions[]")
        conditions.append(ConditionRecord(type=text(c, "type"), status=text(c, "status"),
                                          reason=text(c, "reason"),
                                          message=text(c, "message")))
    return FederatedHpaStatus(
        namespace=ns, name=name, target=text(doc, "target"),
        min_replicas=number(doc, "minReplicas", path, where),
        max_replicas=number(doc, "maxReplicas", path, where),
        current=number(doc, "currentReplicas", path, where),
        desired=number(doc, "desiredReplicas", path, where),
        metrics=text(doc, "currentMetrics"), last_scale=_time(doc, "lastScaleTime", path, where),
        clusters=number(doc, "reportingClusters", path, where), conditions=tuple(conditions))


def read_cron_status(data: bytes | str, path: str) -> CronFederatedHpaStatus:
    """A CronFederatedHPA's status file; InputError naming `path` and the field when it is not
    a file gitfleet wrote."""
    doc = document(data, path, None, _CRON_FIELDS)     # an error file has no kind
    ns, name = _name(doc, path, CRON_KIND)
    where = f"{CRON_KIND} {ns}/{name}"
    if "error" in doc:
        return CronFederatedHpaStatus(namespace=ns, name=name,
                                      error=text(doc, "error") or "(no message)")
    if doc.get("kind") != CRON_KIND:
        raise InputError(f"not a {CRON_KIND} (kind: {doc.get('kind')})", path=path)
    rules = tuple(_rule(r, path, where)
                  for r in items(doc.get("executionHistories"), path,
                                 f"{where}: executionHistories"))
    return CronFederatedHpaStatus(namespace=ns, name=name, target=text(doc, "target"),
                                  rules=rules)


def _rule(value: Any, path: str, where: str) -> CronRuleStatus:
    r = mapping(value, path, f"{where}: executionHistories[]")
    rule = str(required(r, "ruleName", path, f"{where}: executionHistories[]"))
    here = f"{where}: rule {rule}"
    known(r, _RULE_FIELDS, path, here)
    suspend = flag(r, "suspend", path, here)
    runs: dict[str, tuple[Execution, ...]] = {}
    for key in ("successfulExecutions", "failedExecutions"):
        found = []
        for e in items(r.get(key), path, f"{here}: {key}"):
            entry = mapping(e, path, f"{here}: {key}[]")
            known(entry, _EXECUTION_FIELDS, path, f"{here}: {key}[]")
            try:
                found.append(Execution.from_dict(entry))
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(f"{here}: {key}[]: {type(exc).__name__}: {exc}",
                                 path=path) from None
        runs[key] = tuple(found)
    return CronRuleStatus(rule=rule, schedule=text(r, "schedule"),
                          time_zone=text(r, "timeZone"), suspend=suspend,
                          next_run=_time(r, "nextExecutionTime", path, here),
                          successes=runs["successfulExecutions"],
                          failures=runs["failedExecutions"])
