"""A plan for people and for CI: text for a terminal, markdown for a pull-request comment, JSON
with a stable shape.

JSON: `{"plan", "revision", "clusters": {<cluster>: {"planned", "reason" (when not planned),
"asked", "unchanged", "actions": [{"action", "kind", "namespace", "name", "message", ...}]}}}`.
Every cluster of the fleet is listed: one whose tree does not change is not asked (`asked:
false`, planned, no actions); one asked that did not answer is `planned: false` with the
reason. Inside a cluster, rejections come first, then deletions, creations, updates and drift;
text and markdown group them by Description, as `gitfleet diff` groups a cluster's objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitfleet.planning.answers import Outcome
from gitfleet.wire.plans import Act, PlannedAction

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_UNANSWERED = 3
_MARK = {Act.REJECT: "✖", Act.DELETE: "-", Act.CREATE: "+", Act.UPDATE: "~", Act.DRIFT: "!"}


@dataclass(frozen=True)
class PlanReport:
    plan: str
    revision: str
    clusters: Sequence[str]                       # every cluster of the fleet
    outcomes: Mapping[str, Outcome] = field(default_factory=dict)   # of those asked
    waited: bool = True
    errors: Sequence[str] = ()                    # render errors of REV (file: message)
    held: Mapping[str, str] = field(default_factory=dict)   # the hub's guard would hold these

    def entry(self, cluster: str) -> dict[str, Any]:
        out = self._entry(cluster)
        if cluster in self.held:
            out["held"] = self.held[cluster]
        return out

    def _entry(self, cluster: str) -> dict[str, Any]:
        outcome = self.outcomes.get(cluster)
        if outcome is None:
            return {"planned": True, "asked": False, "unchanged": None, "actions": []}
        answer = outcome.answer
        out: dict[str, Any] = {"planned": outcome.planned, "asked": True}
        if not outcome.planned:
            out["reason"] = outcome.reason
        out["unchanged"] = answer.unchanged if answer is not None and answer.planned else None
        out["actions"] = [_action_dict(a) for a in _sorted(answer.actions)] \
            if answer is not None else []
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"plan": self.plan, "revision": self.revision, "waited": self.waited,
                "renderErrors": list(self.errors),
                "clusters": {c: self.entry(c) for c in self.clusters}}

    @property
    def exit_code(self) -> int:
        if any(o.answer is not None and o.answer.rejected for o in self.outcomes.values()):
            return EXIT_REJECTED
        if self.waited and any(not o.planned for o in self.outcomes.values()):
            return EXIT_UNANSWERED
        return EXIT_OK

    def counts(self) -> dict[Act, int]:
        out = dict.fromkeys(Act, 0)
        for o in self.outcomes.values():
            for a in o.answer.actions if o.answer is not None else ():
                out[a.action] += 1
        return out

    def headline(self) -> str:
        asked = len(self.outcomes)
        planned = sum(1 for o in self.outcomes.values() if o.planned)
        counts = ", ".join(f"{n} {a}" for a, n in self.counts().items()) or "nothing"
        return (f"plan {self.plan} of {self.revision[:12]}: {asked} of {len(self.clusters)} "
                f"clusters change, {planned} planned; {counts}")


def _action_dict(a: PlannedAction) -> dict[str, Any]:
    out: dict[str, Any] = {"action": str(a.action), "kind": a.kind, "namespace": a.namespace,
                           "name": a.name, "message": a.message}
    if a.code:
        out["code"] = a.code
    if a.fields:
        out["fields"] = list(a.fields)
    out["apiVersion"] = a.api_version
    out["description"] = a.description
    return out


def _sorted(actions: Sequence[PlannedAction]) -> list[PlannedAction]:
    return sorted(actions, key=lambda a: a.sort_key)


def _grouped(actions: Sequence[PlannedAction]) -> list[tuple[str, list[PlannedAction]]]:
    """Actions by Description, the Descriptions with a rejection first."""
    groups: dict[str, list[PlannedAction]] = {}
    for a in _sorted(actions):
        groups.setdefault(a.description or "(no Description)", []).append(a)
    return sorted(groups.items(), key=lambda g: (min(x.sort_key for x in g[1])[0], g[0]))


def _ident(a: PlannedAction) -> str:
    return f"{a.kind} {a.namespace + '/' if a.namespace else ''}{a.name}"


def _line(a: PlannedAction) -> str:
    code = f" ({a.code})" if a.code else ""
    message = f": {a.message}" if a.message else ""
    return f"{_MARK[a.action]} {a.action} {_ident(a)}{code}{message}"


def render_text(report: PlanReport) -> str:
    lines = [report.headline()]
    lines += [f"render error: {e}" for e in report.errors]
    lines += [f"{message} (the hub holds it until a source commit approves it)"
              for _, message in sorted(report.held.items())]
    for cluster in report.clusters:
        outcome = report.outcomes.get(cluster)
        if outcome is None:
            continue
        if not outcome.planned:
            lines.append(f"\n{cluster}: not planned: {outcome.reason}")
            continue
        answer = outcome.answer
        assert answer is not None
        lines.append(f"\n{cluster}: {len(answer.actions)} actions, {answer.unchanged} unchanged"
                     + (f" ({answer.reason})" if answer.reason else ""))
        for description, actions in _grouped(answer.actions):
            lines.append(f"  {description}")
            lines += [f"    {_line(a)}" for a in actions]
    unasked = [c for c in report.clusters if c not in report.outcomes]
    if unasked:
        lines.append(f"\nunchanged (not asked): {', '.join(unasked)}")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|"))


def render_markdown(report: PlanReport) -> str:
    counts = report.counts()
    lines = [f"### gitfleet plan `{report.revision[:12]}`", "",
             f"**{len(report.outcomes)} of {len(report.clusters)} clusters change** · "
             + " · ".join(f"{n} {a}" for a, n in counts.items()), ""]
    if report.errors:
        lines.append("#### ❌ Render errors")
        lines += [f"- `{_escape(e)}`" for e in report.errors]
        lines.append("")
    if report.held:
        lines.append("#### ⏸ Held by the mass-deletion guard")
        lines += [f"- {_escape(m)} (until a source commit approves it: "
                  "`Gitfleet-Approve-Deletions`)" for _, m in sorted(report.held.items())]
        lines.append("")
    asked = list(report.outcomes.values())
    if asked:
        lines += ["| cluster | planned | reject | delete | create | update | drift |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for o in sorted(asked, key=_cluster_order):
            row = {a: sum(1 for x in o.answer.actions if x.action is a) if o.answer else 0
                   for a in Act}
            lines.append(f"| {_escape(o.cluster)} | {'yes' if o.planned else '**no**'} | "
                         + " | ".join(str(row[a]) for a in Act) + " |")
        lines.append("")
    for o in sorted(asked, key=_cluster_order):
        if not o.planned:
            lines += [f"**{_escape(o.cluster)}**: not planned: {_escape(o.reason)}", ""]
            continue
        assert o.answer is not None
        if not o.answer.actions:
            continue
        lines.append(f"<details{' open' if o.answer.rejected else ''}><summary><b>"
                     f"{_escape(o.cluster)}</b>: {len(o.answer.actions)} actions</summary>")
        lines.append("")
        for description, actions in _grouped(o.answer.actions):
            lines.append(f"- `{description}`")
            for a in actions:
                code = f" ({a.code})" if a.code else ""
                text = f": {_escape(a.message)}" if a.message else ""
                bold = "**" if a.action is Act.REJECT else ""
                lines.append(f"  - {bold}{a.action}{bold} {_escape(_ident(a))}{code}{text}")
        lines += ["", "</details>", ""]
    unasked = [c for c in report.clusters if c not in report.outcomes]
    if unasked:
        lines.append(f"Unchanged, not asked: {', '.join(_escape(c) for c in unasked)}")
    return "\n".join(lines) + "\n"


def _cluster_order(o: Outcome) -> tuple[int, str]:
    """Rejections first, then clusters not planned, then the rest, by name."""
    rank = 0 if o.answer is not None and o.answer.rejected else 1 if not o.planned else 2
    return (rank, o.cluster)
