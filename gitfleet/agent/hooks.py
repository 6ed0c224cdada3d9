"""Hooks after their run: `HookSucceeded` and `HookFailed` (Helm's `hook-succeeded`,
`hook-failed`) delete the hook object once it has that outcome (a Job Complete, or Failed).

The inventory records the deletion (`hookDeleted`) before the object is deleted, so a hook
deleted by its policy is not drift and not run again until its Description's content changes,
and a crash between the two deletes it at the next sync. `BeforeHookCreation` is the other
half of the policy and happens at apply (`apply`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace

from gitfleet.agent.changes import ObjectResult
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.inventory import Inventory, InventoryEntry
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.agent.ordering import DeletePolicy
from gitfleet.kube.errors import ApiError
from gitfleet.logs import log
from gitfleet.wire.status import Change, Health

LOG = logging.getLogger("gitfleet.agent.hooks")
_OUTCOME = {Health.HEALTHY: (DeletePolicy.HOOK_SUCCEEDED, "succeeded"),
            Health.DEGRADED: (DeletePolicy.HOOK_FAILED, "failed")}


def finished(desired: DesiredState, results: Mapping[str, ObjectResult],
             inventory: Inventory) -> list[InventoryEntry]:
    """The hook entries whose policy deletes their object now, marked as deleted."""
    out: list[InventoryEntry] = []
    for key, obj in desired.objects.items():
        hook = obj.hook
        result = results.get(key)
        entry = inventory.get(key)
        if hook is None or result is None or entry is None or entry.pending \
                or entry.hook_deleted or entry.hash != obj.hash or result.error \
                or result.change not in (Change.CREATED, Change.CONFIGURED, Change.UNCHANGED):
            continue
        policy, outcome = _OUTCOME.get(result.health, ("", ""))
        if policy and policy in hook.policies:
            out.append(replace(entry, hook_deleted=outcome))
    return out


def delete(kube: ClusterApi, entries: Iterable[InventoryEntry]) -> int:
    """Delete the hook objects (already recorded as deleted); the deletes that found one."""
    deleted = 0
    for entry in entries:
        ref = entry.ref
        try:
            if kube.delete(ref.api_version, ref.kind, ref.namespace, ref.name):
                deleted += 1
                log(LOG, logging.INFO, "hook deleted by its policy", object=str(ref),
                    outcome=entry.hook_deleted)
        except ApiError as exc:   # recorded: the next sync deletes it again
            log(LOG, logging.WARNING, "cannot delete hook object", object=str(ref),
                error=str(exc))
    return deleted


def noted(result: ObjectResult, entry: InventoryEntry) -> ObjectResult:
    """The result of a hook whose object its policy deletes now, saying so."""
    return replace(result, message=f"hook {entry.hook_deleted}; deleted by its "
                                   "hook-delete-policy")
