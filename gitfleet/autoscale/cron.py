"""CronFederatedHPA rules: which rule fires when, and the execution history they leave.

Pure: the hub passes the time in and persists what comes out (`autoscaling.yaml` in the state
tree), so a restarted hub continues where the last one stopped. Semantics (SEMANTICS,
"Autoscaling (Karmada)"), following Karmada where it says something:

- A schedule is standard five-field cron in the rule's `timeZone` (IANA, default UTC), read
  as wall-clock times. A wall-clock time that does not exist (spring forward) fires at the
  first instant after the gap; one that occurs twice (fall back) fires once, at its first
  occurrence — a daily 02:30 rule runs exactly once on both days.
- A rule fires for the latest scheduled time in (`since`, now]: runs missed while the hub was
  down collapse into one, executed at start, as Karmada's controller does. A rule seen for
  the first time, or whose schedule, time zone or `suspend` changed, starts counting from now:
  it never fires for times before it existed or while it was suspended.
- Histories keep the newest `successfulHistoryLimit` / `failedHistoryLimit` executions
  (default 3 each, as Karmada).

croniter (with dateutil, ~30 ms to import) is imported by the functions that read a schedule:
every fleet loader and hub imports this module, few fleets have a CronFederatedHPA.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gitfleet.errors import InputError

DEFAULT_HISTORY_LIMIT = 3
SUCCEEDED = "Succeeded"
FAILED = "Failed"
_SEARCH_LIMIT = 64          # scheduled times looked at to step over repeated wall-clock times


@dataclass(frozen=True)
class CronRule:
    """One rule of a CronFederatedHPA, checked."""

    name: str
    schedule: str
    time_zone: str = "UTC"
    target_replicas: int | None = None
    target_min_replicas: int | None = None
    target_max_replicas: int | None = None
    suspend: bool = False
    successful_history_limit: int = DEFAULT_HISTORY_LIMIT
    failed_history_limit: int = DEFAULT_HISTORY_LIMIT

    @classmethod
    def from_spec(cls, rule: Mapping[str, Any], *, where: str = "") -> CronRule:
        """A rule from `spec.rules[i]`; InputError naming the field when the schedule or the
        time zone cannot be used."""
        name = str(rule.get("name", ""))
        schedule = str(rule.get("schedule", "")).strip()
        zone = str(rule.get("timeZone") or "UTC")
        from croniter import croniter

        if not croniter.is_valid(schedule) or len(schedule.split()) != 5:
            raise InputError(f"{where}schedule {schedule!r} is not a five-field cron "
                             f"schedule (minute hour day-of-month month day-of-week)",
                             obj=f"rule {name}")
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise InputError(f"{where}timeZone {zone!r} is not an IANA time zone "
                             f"(like Europe/Berlin)", obj=f"rule {name}") from exc
        return cls(name=name, schedule=schedule, time_zone=zone,
                   target_replicas=_opt_int(rule.get("targetReplicas")),
                   target_min_replicas=_opt_int(rule.get("targetMinReplicas")),
                   target_max_replicas=_opt_int(rule.get("targetMaxReplicas")),
                   suspend=bool(rule.get("suspend", False)),
                   successful_history_limit=int(rule.get("successfulHistoryLimit",
                                                          DEFAULT_HISTORY_LIMIT)),
                   failed_history_limit=int(rule.get("failedHistoryLimit",
                                                      DEFAULT_HISTORY_LIMIT)))

    @property
    def fingerprint(self) -> str:
        """What, when changed, restarts the rule's count (it never fires for the past)."""
        return f"{self.schedule}|{self.time_zone}|{'suspended' if self.suspend else 'active'}"

    def zone(self) -> tzinfo:
        return ZoneInfo(self.time_zone)

    def latest(self, now: float) -> float | None:
        """The latest scheduled time at or before `now` (seconds since the epoch)."""
        from croniter import croniter

        zone = self.zone()
        it = croniter(self.schedule, datetime.fromtimestamp(now + 1, zone))
        for _ in range(_SEARCH_LIMIT):
            candidate = it.get_prev(datetime)
            if not _repeated(candidate, zone):
                return float(candidate.timestamp())
        return None  # pragma: no cover - a schedule matching only repeated times

    def next_after(self, now: float) -> float | None:
        """The first scheduled time after `now`."""
        from croniter import croniter

        zone = self.zone()
        it = croniter(self.schedule, datetime.fromtimestamp(now, zone))
        for _ in range(_SEARCH_LIMIT):
            candidate = it.get_next(datetime)
            if candidate.timestamp() > now and not _repeated(candidate, zone):
                return float(candidate.timestamp())
        return None  # pragma: no cover


def rules_of(spec: Mapping[str, Any]) -> tuple[CronRule, ...]:
    """Every rule of a CronFederatedHPA spec; InputError for the first bad one or a repeated
    name (the history is kept per rule name)."""
    out: list[CronRule] = []
    seen: set[str] = set()
    for i, raw in enumerate(spec.get("rules") or ()):
        rule = CronRule.from_spec(raw, where=f"spec.rules[{i}].")
        if rule.name in seen:
            raise InputError(f"spec.rules[{i}].name {rule.name!r} is used twice",
                             obj=f"rule {rule.name}")
        seen.add(rule.name)
        out.append(rule)
    return tuple(out)


def _repeated(moment: datetime, zone: tzinfo) -> bool:
    """Whether `moment` is the second occurrence of a wall-clock time (fall back)."""
    wall = moment.astimezone(zone).replace(tzinfo=None)
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return False
    return abs(moment.timestamp() - first.timestamp()) > 0.5


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


# -- executions and history ---------------------------------------------------------------------


@dataclass(frozen=True)
class Execution:
    """One run of a rule: when it was scheduled, when it ran, what it did."""

    rule: str
    scheduled: float
    executed: float
    result: str                          # Succeeded or Failed
    message: str = ""
    replicas: int | None = None          # applied total (a workload target)
    min_replicas: int | None = None      # applied bounds (a FederatedHPA target)
    max_replicas: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "scheduleTime": _iso(self.scheduled),
                               "executionTime": _iso(self.executed), "result": self.result}
        if self.message:
            out["message"] = self.message
        for key, value in (("appliedReplicas", self.replicas),
                           ("appliedMinReplicas", self.min_replicas),
                           ("appliedMaxReplicas", self.max_replicas)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Execution:
        return cls(rule=str(data["rule"]), scheduled=_from_iso(str(data["scheduleTime"])),
                   executed=_from_iso(str(data["executionTime"])), result=str(data["result"]),
                   message=str(data.get("message", "")),
                   replicas=_opt_int(data.get("appliedReplicas")),
                   min_replicas=_opt_int(data.get("appliedMinReplicas")),
                   max_replicas=_opt_int(data.get("appliedMaxReplicas")))


@dataclass(frozen=True)
class RuleRecord:
    """What must survive a restart for one rule: from when it counts, and its history."""

    since: float
    fingerprint: str
    successes: tuple[Execution, ...] = ()
    failures: tuple[Execution, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"since": _iso(self.since), "fingerprint": self.fingerprint,
                "successfulExecutions": [e.to_dict() for e in self.successes],
                "failedExecutions": [e.to_dict() for e in self.failures]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleRecord:
        return cls(since=_from_iso(str(data["since"])), fingerprint=str(data["fingerprint"]),
                   successes=tuple(Execution.from_dict(e)
                                   for e in data.get("successfulExecutions") or ()),
                   failures=tuple(Execution.from_dict(e)
                                  for e in data.get("failedExecutions") or ()))


@dataclass(frozen=True)
class Due:
    """A rule that fires now, for the latest scheduled time it missed or reached."""

    rule: CronRule
    scheduled: float


@dataclass(frozen=True)
class CronPlan:
    """The result of looking at one CronFederatedHPA's rules at one instant."""

    due: tuple[Due, ...]
    records: Mapping[str, RuleRecord] = field(default_factory=dict)


def plan(rules: Iterable[CronRule], records: Mapping[str, RuleRecord], *,
         now: float) -> CronPlan:
    """Which rules fire at `now`, and the records updated for rules that are new or changed
    (their count starts at `now`). A fired rule's record moves on in `record`, once the
    caller knows the result. Rules are returned in schedule order (then by name), so two
    rules due together apply in the order they were scheduled."""
    due: list[Due] = []
    out: dict[str, RuleRecord] = {}
    for rule in rules:
        record = records.get(rule.name)
        if record is None or record.fingerprint != rule.fingerprint:
            kept = record or RuleRecord(since=now, fingerprint=rule.fingerprint)
            out[rule.name] = replace(kept, since=now, fingerprint=rule.fingerprint)
            continue
        out[rule.name] = record
        if rule.suspend:
            continue
        latest = rule.latest(now)
        if latest is not None and latest > record.since:
            due.append(Due(rule=rule, scheduled=latest))
    due.sort(key=lambda d: (d.scheduled, d.rule.name))
    return CronPlan(due=tuple(due), records=out)


def record(previous: RuleRecord, rule: CronRule, execution: Execution) -> RuleRecord:
    """The rule's record after `execution`: counted from its scheduled time, the execution
    added to the newest end of its history, the history cut to the rule's limits."""
    successes, failures = previous.successes, previous.failures
    if execution.result == SUCCEEDED:
        successes = _newest(successes + (execution,), rule.successful_history_limit)
    else:
        failures = _newest(failures + (execution,), rule.failed_history_limit)
    return RuleRecord(since=max(previous.since, execution.scheduled),
                      fingerprint=rule.fingerprint, successes=successes, failures=failures)


def _newest(history: tuple[Execution, ...], limit: int) -> tuple[Execution, ...]:
    return history[len(history) - limit:] if limit > 0 else ()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _from_iso(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def local(ts: float, rule: CronRule) -> str:
    """A time as the rule's time zone shows it (for messages)."""
    moment = datetime.fromtimestamp(ts, rule.zone())
    return moment.isoformat(timespec="minutes") if moment.utcoffset() != timedelta(0) \
        else moment.strftime("%Y-%m-%dT%H:%MZ")
