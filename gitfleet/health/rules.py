"""Health rules from the fleet repo: CEL expressions for kinds whose authors kept no convention.

`fleet.yaml: health:` takes Flux's `healthCheckExprs` entries as they are written for Flux
(`apiVersion` or `group`, `kind`, and CEL expressions `current`, `inProgress`, `failed` over
the live object, whose top-level fields — `metadata`, `spec`, `status`, ... — are the
variables), so rules people already wrote carry over. They are evaluated as Flux evaluates
them: a spec not yet observed is Progressing; then `inProgress`, `failed`, `current` in that
order, the first that holds decides (Progressing, Degraded, Healthy); none holding, or an
expression that cannot be evaluated (a field not there yet), is Progressing. Every message
names the rule. A rule beats the built-in judges and the conventions.

The hub validates the rules when it loads `fleet.yaml` (each problem at its line) and writes
them into every cluster's `cluster.yaml` (`healthRules`); the agent reads them from there.
Programs are compiled once per expression text (CEL, the maintained Rust implementation).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitfleet.health.conventions import DEFAULT_PROGRESS_TIMEOUT, observed_lag
from gitfleet.health.verdict import Obj, Verdict, progressing

if TYPE_CHECKING:
    import cel
from gitfleet.wire.status import Health

EXPRESSIONS = (("inProgress", Health.PROGRESSING), ("failed", Health.DEGRADED),
               ("current", Health.HEALTHY))
FIELDS = ("apiVersion", "group", "kind", "current", "inProgress", "failed")


@dataclass(frozen=True)
class HealthRule:
    """One entry: expressions by their `fleet.yaml` names (`current`, `inProgress`, `failed`)."""

    group: str
    kind: str
    current: str
    in_progress: str = ""
    failed: str = ""

    @property
    def name(self) -> str:
        return f"{self.group}/{self.kind}" if self.group else self.kind

    def expression(self, name: str) -> str:
        return {"current": self.current, "inProgress": self.in_progress,
                "failed": self.failed}[name]

    def to_dict(self) -> dict[str, str]:
        out = {"group": self.group, "kind": self.kind, "current": self.current}
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_kind", {(r.group, r.kind): r for r in self.rules})

    def for_kind(self, group: str, kind: str) -> HealthRule | None:
        return self._by_kind.get((group, kind)) if self._by_kind else None

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


NO_RULES = HealthRules()


def _group(entry: Mapping[str, Any]) -> str:
    if "group" in entry:
        return str(entry.get("group") or "")
    api_version = str(entry.get("apiVersion") or "")
    return api_version.rpartition("/")[0]


def _rule(entry: Mapping[str, Any]) -> HealthRule:
    return HealthRule(group=_group(entry), kind=str(entry["kind"]),
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


_POSITION = re.compile(r"<input>:(\d+):(\d+): (.*)")


def _compile_error(text: str) -> tuple[int, int, str] | None:
    """None when `text` compiles, else (0-based line, 1-based column, message)."""
    try:
        _program(text)
    except ValueError as exc:
        first = str(exc).split("\n")
        for line in first:
            m = _POSITION.search(line)
            if m:
                return int(m[1]) - 1, int(m[2]), f"CEL: {m[3]}"
        return 0, 0, f"CEL: {first[0]}"
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
        kind = entry.get("kind")
        if not isinstance(kind, str) or not kind:
            problems.append(RuleProblem((i,), "needs a kind"))
            continue
        for key in ("apiVersion", "group"):
            if key in entry and not isinstance(entry[key], str):
                problems.append(RuleProblem((i, key), f"{key} must be a string"))
        if "group" in entry and "apiVersion" in entry and \
                str(entry["apiVersion"]).rpartition("/")[0] != entry["group"]:
            problems.append(RuleProblem((i, "group"), "group and apiVersion disagree"))
        if "group" not in entry and "apiVersion" not in entry:
            problems.append(RuleProblem((i,), f"rule for {kind} needs an apiVersion or a "
                                              "group (\"\" for the core group)"))
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
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


# -- evaluation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Compiled:
    program: cel.Program
    roots: tuple[str, ...]  # the variables it reads (comprehension names too: harmless)
    extended: bool          # calls CEL's extension libraries (strings, math, lists, sets, ...)

    def run(self, obj: Obj) -> Any:
        variables = {k: obj[k] for k in self.roots if k in obj}
        if not self.extended:
            return self.program.execute(variables)
        import cel
        from cel.stdlib import add_stdlib_to_context
        context = cel.Context(variables=variables)
        add_stdlib_to_context(context)  # as Kubernetes' and Flux's CEL environments offer them
        return self.program.execute(context)


_PROGRAMS: dict[str, _Compiled] = {}


def _program(text: str) -> _Compiled:
    found = _PROGRAMS.get(text)
    if found is None:
        if len(_PROGRAMS) > 10_000:
            _PROGRAMS.clear()
        # imported at the first expression, not with the module: the CEL library loads its own
        # interactive shell (prompt_toolkit), ~0.3 s of CPU that every gitfleet command paid
        import cel
        from cel.stdlib import STDLIB_FUNCTIONS
        program = cel.compile(text)
        extended = bool(frozenset(STDLIB_FUNCTIONS).intersection(program.functions()))
        found = _PROGRAMS[text] = _Compiled(program, tuple(program.variables()), extended)
    return found


def judge_by_rule(rule: HealthRule, obj: Obj) -> Verdict:
    """The rule's verdict on `obj`, as Flux's CEL status reader reaches it."""
    lag = observed_lag(obj)
    if lag is not None:
        return progressing(f"health rule {rule.name}: {lag.message}")
    for name, health in EXPRESSIONS:
        text = rule.expression(name)
        if not text:
            continue
        try:
            value = _program(text).run(obj)
        except Exception as exc:  # the CEL library raises several types; each means "not yet"
            reason = str(exc).split(". ")[0]
            return progressing(f"health rule {rule.name}: {name} cannot be evaluated: {reason}")
        if not isinstance(value, bool):
            return progressing(f"health rule {rule.name}: {name} gave {value!r}, not a bool")
        if value:
            return Verdict(health, f"health rule {rule.name}: {name} holds")
    return progressing(f"health rule {rule.name}: neither inProgress, failed nor current "
                       "holds yet")
