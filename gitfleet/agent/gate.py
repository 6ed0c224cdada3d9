"""Which planned writes may go now, and why the others wait (the steps of `ordering`).

Per Description, the first step that has writes goes once every object of the steps before it
is Healthy; its CRDs and Namespaces go with its first writes (the kind stages of one round put
them first and wait for the CRDs). A Description whose units (`dependsOn`) are not all Success
in this cluster waits as a whole. The engine asks again after each round of applies, so steps
that turn Healthy at once (a ConfigMap) go in the same sync; the rest wait for a later sync,
which comes sooner while the awaited object is Progressing. Never a sleep here. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from gitfleet.agent.changes import Hold, ObjectResult
from gitfleet.agent.desired import DesiredObject, DesiredState
from gitfleet.agent.ordering import BAND_FAIL, BAND_FIRST, Step, describe_step, unit_of
from gitfleet.agent.plan import Action
from gitfleet.health import judge
from gitfleet.wire.status import Change, Health, Phase

Results = Mapping[str, ObjectResult]


def _healthy(result: ObjectResult | None) -> bool:
    return result is not None and result.health is Health.HEALTHY and not result.error


class Gate:
    def __init__(self, desired: DesiredState, actions: tuple[Action, ...],
                 standby: tuple[Action, ...] = ()) -> None:
        self.desired = desired
        # SyncFail hooks: released only once their Description's sync has failed.
        self._standby: dict[str, list[Action]] = defaultdict(list)
        for action in standby:
            self._standby[action.obj.description].append(action)
        self._pending: dict[str, dict[Step, list[Action]]] = defaultdict(dict)
        for action in actions:
            obj = action.obj
            step = obj.step if obj.step is not None else (0, 0)
            self._pending[obj.description].setdefault(step, []).append(action)
        self._members: dict[str, dict[Step, list[DesiredObject]]] = defaultdict(dict)
        self._units: dict[str, list[str]] = defaultdict(list)
        if not actions and not standby:   # nothing to write: nothing to order (a no-op sync)
            return
        for obj in desired.objects.values():
            if obj.step is not None:
                self._members[obj.description].setdefault(obj.step, []).append(obj)
        for key in desired.descriptions:
            self._units[unit_of(key)].append(key)

    def ready(self, results: Results) -> list[Action]:
        """The writes whose turn has come; they are no longer pending."""
        out: list[Action] = []
        for description in sorted(self._standby):
            if self._standby[description] and self._failed(description, results):
                out.extend(self._standby.pop(description))
        for description in sorted(self._pending):
            steps = self._pending[description]
            if not steps or self._waits_for(description, results):
                continue
            for step in sorted(set(steps) | set(self._members[description])):
                if step[0] == BAND_FIRST:   # CRDs, Namespaces: go with the first writes
                    out.extend(steps.pop(step, ()))
                    continue
                if step in steps:
                    out.extend(steps.pop(step))
                    break
                if self._blocker(description, step, results) is not None:
                    break
        return out

    def held(self) -> list[Action]:
        return [a for steps in self._pending.values() for acts in steps.values() for a in acts]

    def held_results(self, holds: Mapping[str, Hold]) -> dict[str, ObjectResult]:
        """The objects whose writes wait for their turn: not applied in this sync."""
        out = {}
        for a in self.held():
            health = judge(a.live, rules=self.desired.health_rules).health \
                if a.live is not None else Health.UNKNOWN
            out[a.obj.ref.key] = ObjectResult(a.obj.ref, a.obj.description, Change.SKIPPED,
                                              health, message=f"held: "
                                              f"{holds[a.obj.description].message}")
        return out

    def holds(self, results: Results) -> dict[str, Hold]:
        """Why each Description with writes still pending waits."""
        out: dict[str, Hold] = {}
        for description, steps in sorted(self._pending.items()):
            if not steps:
                continue
            unit = self._waits_for(description, results)
            if unit:
                out[description] = Hold(Phase.WAITING, f"waiting for {unit} to be Success in "
                                                       "this cluster (dependsOn)")
                continue
            first = min(steps)
            for step in sorted(s for s in self._members[description]
                               if s < first and s[0] != BAND_FIRST):
                blocker = self._blocker(description, step, results)
                if blocker is not None:
                    state = "failed" if blocker.error else f"is {blocker.health}"
                    why = blocker.error or blocker.message
                    out[description] = Hold(Phase.PROGRESSING, (
                        f"{describe_step(first)} waits for {describe_step(step)}: "
                        f"{blocker.ref} {state}" + (f" ({why})" if why else "")))
                    break
            else:
                out[description] = Hold(Phase.PROGRESSING, f"{describe_step(first)} waits")
        return out

    def released(self, action: Action) -> bool:
        """Whether `action` was a SyncFail hook on standby (not journaled with the plan)."""
        return action.obj.step is not None and action.obj.step[0] == BAND_FAIL

    def _failed(self, description: str, results: Results) -> bool:
        """The sync of a Description failed: a write of it was refused, or a hook of it (a
        Job) failed (gitops-engine: a task completed unsuccessfully)."""
        for step, objs in self._members[description].items():
            if step[0] == BAND_FAIL:
                continue
            for obj in objs:
                result = results.get(obj.ref.key)
                if result is not None and (result.error or (
                        obj.hook is not None and result.health is Health.DEGRADED)):
                    return True
        return False

    def _blocker(self, description: str, step: Step, results: Results) -> ObjectResult | None:
        """The first object of the step that is not Healthy (its result), or None."""
        for obj in self._members[description].get(step, ()):
            result = results.get(obj.ref.key)
            if not _healthy(result):
                return result or ObjectResult(obj.ref, obj.description, Change.SKIPPED,
                                              message="not applied yet")
        return None

    def _waits_for(self, description: str, results: Results) -> str:
        """The first unit this Description depends on that is not Success here, or ""."""
        desc = self.desired.descriptions.get(description)
        for unit in desc.depends_on if desc else ():
            for other in self._units.get(unit, ()):
                if not self._success(other, results):
                    return unit
        return ""

    def _success(self, description: str, results: Results) -> bool:
        desc = self.desired.descriptions.get(description)
        if desc is None or desc.read_errors or any(self._pending.get(description, {}).values()):
            return False
        return all(_healthy(results.get(obj.ref.key))
                   for objs in self._members[description].values() for obj in objs)
