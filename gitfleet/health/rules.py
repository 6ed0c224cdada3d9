"""Health rules from the fleet repo: CEL expressions for kinds whose authors kept no convention.

`fleet.yaml: health:` takes Flux's `healthCheckExprs` entries as they are written for Flux
(`apiVersion` or `group`, optionally `kind`, and CEL expressions `current`, `inProgress`,
`failed` over the live object, whose top-level fields — `metadata`, `spec`, `status`, ... —
are the variables), so rules people already wrote carry over. They are chosen and evaluated as
Flux does: an entry without `kind` covers every kind of its group and an entry for the kind
beats it; a spec not yet observed (`status.observedGeneration != metadata.generation`) is
Progressing; then `inProgress`, `failed`, `current` in that order, the first that holds decides
(Progressing, Degraded, Healthy); none holding, or an expression that cannot be evaluated (a
field not there yet), is Progressing. Every message names the rule. A rule beats the built-in
judges and the conventions. The CEL environment is Flux's (gitfleet.health.expressions).

The hub validates the rules when it loads `fleet.yaml` (each problem at its line); a rule with
a problem is left out and the others stay in force (`loadable`). The hub writes the rules into
every cluster's `cluster.yaml` (`healthRules`); the agent reads them from there.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet.health.conventions import DEFAULT_PROGRESS_TIMEOUT
from gitfleet.health.expressions import EvaluationError, ExpressionError, parse
from gitfleet.health.verdict import Obj, Verdict, progressing, section
from gitfleet.wire.status import Health

EXPRESSIONS = (("inProgress", Health.PROGRESSING), ("failed", Health.DEGRADED),
               ("current", Health.HEALTHY))
FIELDS = ("apiVersion", "group", "kind", "current", "inProgress", "failed")


@dataclass(frozen=True)
class HealthRule:
    """One entry: expressions by their `fleet.yaml` names (`current`, `inProgress`, `failed`);
    `kind` "" covers every kind of the group."""

    group: str
    kind: str
    current: str
    in_progress: str = ""
    failed: str = ""

    @property
    def name(self) -> str:
        return _name((self.group, self.kind))

    def expression(self, name: str) -> str:
        return {"current": self.current, "inProgress": self.in_progress,
                "failed": self.failed}[name]

    def to_dict(self) -> dict[str, str]:
        out = {"group": self.group, "current": self.current}
        if self.kind:
            out["kind"] = self.kind
        if self.in_progress:
            out["inProgress"] = self.in_progress
        if self.failed:
            out["failed"] = self.failed
        return out


@dataclass(frozen=True)
class HealthRules:
    """The rules in force and the default progress timeout of the conventions."""

    rules: tuple[HealthRule, ...] = ()
    progress_timeout: float = DEFAULT_PROGRESS_TIMEOUT
    _by_kind: Mapping[tuple[str, str], HealthRule] = field(
        default_factory=dict, compare=False, repr=False)

    _groups: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_kind", {(r.group, r.kind): r for r in self.rules})
        object.__setattr__(self, "_groups", frozenset(r.group for r in self.rules))

    def for_kind(self, group: str, kind: str) -> HealthRule | None:
        """The rule for exactly this kind, else its group's rule (an entry without `kind`)."""
        if group not in self._groups:  # most objects: one set look-up
            return None
        return self._by_kind.get((group, kind)) or self._by_kind.get((group, ""))

    def kinds(self) -> frozenset[tuple[str, str]]:
        """(group, kind) of every rule; kind "" for a whole group."""
        return frozenset(self._by_kind)

    def to_list(self) -> list[dict[str, str]]:
        return [r.to_dict() for r in self.rules]

    @staticmethod
    def from_list(entries: Any, progress_timeout: float = DEFAULT_PROGRESS_TIMEOUT
                  ) -> HealthRules:
        """Rules as `fleet.yaml` or `cluster.yaml` holds them; ValueError names the first
        problem (the hub validated them already: this guards the agent)."""
        problems = check_rules(entries)
        if problems:
            raise ValueError(problems[0].text())
        return HealthRules(tuple(_rule(e) for e in entries or ()), progress_timeout)

    @staticmethod
    def loadable(entries: Any, progress_timeout: float = DEFAULT_PROGRESS_TIMEOUT
                 ) -> HealthRules:
        """The entries without a problem: one bad rule never takes the others out of force
        (the loader reports it at its line, and `validate` fails)."""
        if not isinstance(entries, list):
            return HealthRules(progress_timeout=progress_timeout)
        broken = broken_entries(check_rules(entries))
        return HealthRules(tuple(_rule(e) for i, e in enumerate(entries) if i not in broken),
                           progress_timeout)

    def keeping(self, earlier: HealthRules) -> HealthRules:
        """These rules, and `earlier`'s for every kind these do not rule: what stays in force
        while some entries are broken (the last good rules, never none)."""
        mine = self.kinds()
        kept = tuple(r for r in earlier.rules if (r.group, r.kind) not in mine)
        return HealthRules((*self.rules, *kept), self.progress_timeout) if kept else self


NO_RULES = HealthRules()


def broken_entries(problems: list[RuleProblem]) -> frozenset[int]:
    """Indexes of the entries `problems` concern."""
    return frozenset(p.where[0] for p in problems if p.where and isinstance(p.where[0], int))


def _group(entry: Mapping[str, Any]) -> str:
    if "group" in entry:
        return str(entry.get("group") or "")
    api_version = str(entry.get("apiVersion") or "")
    return api_version.rpartition("/")[0]


def _rule(entry: Mapping[str, Any]) -> HealthRule:
    return HealthRule(group=_group(entry), kind=str(entry.get("kind") or ""),
                      current=str(entry["current"]),
                      in_progress=str(entry.get("inProgress") or ""),
                      failed=str(entry.get("failed") or ""))


# -- validation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleProblem:
    """A problem of entry `where` (a path under `health`), `line` lines into its expression."""

    where: tuple[str | int, ...]
    message: str
    line: int = 0    # 0-based line inside the expression
    column: int = 0  # 1-based column inside that line of the expression; 0: none

    def text(self) -> str:
        path = "health" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                                  for p in self.where)
        return f"{path}: {self.message}"


def _compile_error(text: str) -> tuple[int, int, str] | None:
    """None when `text` parses, else (0-based line, 1-based column, message)."""
    try:
        parse(text)
    except ExpressionError as exc:
        return exc.row, exc.column, exc.message
    return None


def check_rules(entries: Any) -> list[RuleProblem]:
    """Every problem of a `health:` list: shape, unknown fields, duplicates, CEL syntax."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        return [RuleProblem((), "must be a list of rules (apiVersion or group, kind, current, "
                                "inProgress, failed)")]
    problems: list[RuleProblem] = []
    seen: dict[tuple[str, str], int] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            problems.append(RuleProblem((i,), "must be a mapping"))
            continue
        for key in entry:
            if key not in FIELDS:
                near = difflib.get_close_matches(str(key), FIELDS, n=1)
                hint = f" (did you mean {near[0]}?)" if near else \
                    f" (known: {', '.join(FIELDS)})"
                problems.append(RuleProblem((i, str(key)), f"unknown field {key}{hint}"))
        kind = entry.get("kind", "")
        if not isinstance(kind, str) or ("kind" in entry and not kind):
            problems.append(RuleProblem((i, "kind"), "kind must be a kind's name (leave it out "
                                                     "for every kind of the group)"))
            continue
        for key in ("apiVersion", "group"):
            if key in entry and not isinstance(entry[key], str):
                problems.append(RuleProblem((i, key), f"{key} must be a string"))
        if "group" in entry and "apiVersion" in entry and \
                str(entry["apiVersion"]).rpartition("/")[0] != entry["group"]:
            problems.append(RuleProblem((i, "group"), "group and apiVersion disagree"))
        if "group" not in entry and "apiVersion" not in entry:
            problems.append(RuleProblem((i,), f"rule for {kind or 'every kind'} needs an "
                                              "apiVersion or a group (\"\" for the core "
                                              "group)"))
            continue
        key = (_group(entry), kind)
        if key in seen:
            problems.append(RuleProblem((i, "kind"), f"a second rule for {_name(key)} "
                                                     f"(the first is entry {seen[key]})"))
        seen.setdefault(key, i)
        if not entry.get("current"):
            problems.append(RuleProblem((i,), f"rule for {_name(key)} needs a current "
                                              "expression"))
        for name, _ in EXPRESSIONS:
            text = entry.get(name)
            if text is None or text == "":
                continue
            if not isinstance(text, str):
                problems.append(RuleProblem((i, name), f"{name} must be a CEL expression "
                                                       "(a string)"))
                continue
            error = _compile_error(text)
            if error is not None:
                line, column, message = error
                problems.append(RuleProblem((i, name), message, line, column))
    return problems


def _name(key: tuple[str, str]) -> str:
    group, kind = key
    if not kind:
        return f"{group}/*" if group else "*"
    return f"{group}/{kind}" if group else kind


# -- evaluation ----------------------------------------------------------------------------


def judge_by_rule(rule: HealthRule, obj: Obj) -> Verdict:
    """The rule's verdict on `obj`, as Flux's CEL status evaluator reaches it."""
    generation = section(obj, "metadata").get("generation")
    observed = section(obj, "status").get("observedGeneration")
    if type(observed) is int and type(generation) is int and observed != generation:
        # Flux: `!=`, so a generation the object reports ahead of its spec waits too
        return progressing(f"health rule {rule.name}: generation {generation} not observed "
                           f"yet (observed {observed})")
    for name, health in EXPRESSIONS:
        text = rule.expression(name)
        if not text:
            continue
        try:
            value = parse(text).run(obj)
        except EvaluationError as exc:
            return progressing(f"health rule {rule.name}: {name} cannot be evaluated: {exc}")
        except ExpressionError as exc:  # the hub checked it: an agent of another version
            return progressing(f"health rule {rule.name}: {name} cannot be evaluated: "
                               f"{exc.message}")
        if not isinstance(value, bool):
            return progressing(f"health rule {rule.name}: {name} gave {value!r}, not a bool")
        if value:
            return Verdict(health, f"health rule {rule.name}: {name} holds")
    return progressing(f"health rule {rule.name}: neither inProgress, failed nor current "
                       "holds yet")
