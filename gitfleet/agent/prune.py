"""Which inventory objects a sync deletes, and when it must refuse (DESIGN, "Rules").

Only objects in the inventory are candidates. An object is pruned when the desired state no
longer holds it, except when its Description is still present but marked with render errors
(the hub kept its last good content) or did not read, and never when the cluster branch itself
could not be read. A sync that would delete more than a share of all owned objects, and more
than `PRUNE_FLOOR` of them, is refused as a whole (nothing deleted, the status says why) unless
mass prune is allowed: a broken render must not empty a cluster. The floor is the hub's
default `guards.maxDeletions.count` (10), so the agent, the last line, never refuses a deletion
the hub's guard lets through with its defaults (the hub holds only above both its count and its
share of 0.2, below the agent's 0.5), and a small cluster can still lose its last few objects
(deleting 1 of 1 was refused before). A cluster commit that carries its source commit's approval
(`Gitfleet-Approve-Deletions`, written by the hub's mass-deletion guard, docs/guards.md) is
an `ApprovedState`: its prune is not refused, and no agent flag or restart is needed.

An entry marked `release` (adopted under Overwrite, or of a policy that preserves resources on
deletion) is released instead: the object stays, gitfleet's marks and the entry go. Releases do
not count against the prune budget, since nothing is deleted.

`plan_prune` is pure; `prune` carries the plan out: releases first, then deletions in the
reverse order of sync waves (the live object's annotation says its wave) and, inside a wave,
the reverse order of kind stages. Each object is asked again whether it is still the one
gitfleet wrote, right before it is touched. One held by finalizers stays Terminating: it is
reported as such, kept in the inventory, and reported deleted at the sync that finds it gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from gitfleet.agent import stages
from gitfleet.agent.changes import ObjectResult
from gitfleet.agent.desired import DesiredState
from gitfleet.agent.inventory import Inventory, InventoryEntry
from gitfleet.agent.kubeapi import ClusterApi
from gitfleet.agent.marks import release_patch, uid_of
from gitfleet.agent.ordering import OrderingError, wave_of
from gitfleet.kube.errors import ApiError, NotServed
from gitfleet.logs import log
from gitfleet.model.annotations import sync_options_of
from gitfleet.model.settings import MaxDeletions
from gitfleet.render.guards import APPROVAL_TRAILER
from gitfleet.wire.objectref import ObjectRef
from gitfleet.wire.status import Change

LOG = logging.getLogger("gitfleet.agent.prune")
Ours = Callable[[Mapping[str, Any], InventoryEntry], bool]
PRUNE_FLOOR = MaxDeletions().count   # a prune of at most this many objects is never refused


@dataclass(frozen=True)
class ApprovedState(DesiredState):
    """A cluster commit whose deletions a source commit approved (its
    `Gitfleet-Approve-Deletions` trailer names that commit): a mass prune goes through."""

    approved_by: str = ""


def with_approval(desired: DesiredState, trailers: Mapping[str, str]) -> DesiredState:
    """`desired` as an ApprovedState when its cluster commit's `trailers` carry an approval
    (a signed commit's message is covered by its signature, like its tree)."""
    by = trailers.get(APPROVAL_TRAILER, "")
    if not by:
        return desired
    return ApprovedState(**{f.name: getattr(desired, f.name) for f in fields(desired)},
                         approved_by=by)


@dataclass(frozen=True)
class PrunePlan:
    delete: tuple[InventoryEntry, ...] = ()
    kept: tuple[InventoryEntry, ...] = ()
    release: tuple[InventoryEntry, ...] = ()
    refused: str = ""
    reasons: Mapping[str, str] = field(default_factory=dict)   # why a key is released


def _left_by_option(entry: InventoryEntry, live: Mapping[str, Any] | None,
                    desired: DesiredState) -> str:
    """The Argo CD sync option of the live object that leaves it in the cluster: `Prune=false`
    when it leaves a Description that is still there, `Delete=false` when its Description
    goes; "" when none does."""
    if not live:
        return ""
    options = sync_options_of(live)
    present = entry.description in desired.descriptions
    if not options.prune and present:
        return "Prune=false"
    if not options.delete and not present:
        return "Delete=false"
    return ""


def plan_prune(inventory: Inventory, desired: DesiredState, *, max_share: float,
               allow_mass_prune: bool, live: Mapping[str, Any] | None = None,
               floor: int = PRUNE_FLOOR) -> PrunePlan:
    """Decide what to delete; `kept` are orphans spared by a render error or unread file.
    An object whose live annotation says Argo CD's `Prune=false` or `Delete=false` is released
    (left in the cluster) instead of deleted, as that option says. A deletion of more than
    `floor` objects and more than `max_share` of those owned is a mass prune."""
    if not desired.prunable:
        orphans = tuple(e for k, e in inventory.entries.items() if k not in desired.objects)
        return PrunePlan(kept=orphans, refused="" if not orphans else
                         "cluster branch did not read completely; nothing pruned")
    delete: list[InventoryEntry] = []
    kept: list[InventoryEntry] = []
    release: list[InventoryEntry] = []
    reasons: dict[str, str] = {}
    for key in sorted(inventory.entries):
        entry = inventory.entries[key]
        if key in desired.objects:
            continue
        description = desired.descriptions.get(entry.description)
        if description is not None and not description.prunable:
            kept.append(entry)
            continue
        left = _left_by_option(entry, (live or {}).get(key), desired)
        if left:
            reasons[key] = left
        (release if entry.release or left else delete).append(entry)
    owned = len(inventory)
    approved = isinstance(desired, ApprovedState) and desired.approved_by
    mass = len(delete) > floor and len(delete) > max_share * owned
    if mass and approved:
        log(LOG, logging.WARNING, "mass prune approved in Git", deleted=len(delete),
            owned=owned, approved_by=approved)
    elif mass and not allow_mass_prune:
        return PrunePlan(kept=tuple(kept) + tuple(delete), release=tuple(release),
                         reasons=reasons, refused=(
            f"refusing to prune {len(delete)} of {owned} owned objects (more than "
            f"{max_share:.0%} and more than {floor} in one sync); approve it in Git with a "
            f"source commit trailer `{APPROVAL_TRAILER}: <this cluster>`, or run with "
            "--allow-mass-prune"))
    return PrunePlan(delete=tuple(delete), kept=tuple(kept), release=tuple(release),
                     reasons=reasons)


def prune(kube: ClusterApi, plan: PrunePlan, listed: Mapping[str, Any], *,
          ours: Ours) -> tuple[list[ObjectResult], int]:
    """Release, then delete, what `plan` says; the results (in that order) and the writes."""
    results = [release_one(kube, e, listed.get(e.ref.key), ours=ours,
                           why=plan.reasons.get(e.ref.key, "")) for e in plan.release]
    by_ref = {e.ref: e for e in plan.delete}
    for ref in delete_order(by_ref, listed):
        results.append(delete_one(kube, by_ref[ref], listed.get(ref.key), ours=ours))
    writes = sum(r.change in (Change.RELEASED, Change.DELETED) for r in results)
    return results, writes


def delete_order(refs: Mapping[ObjectRef, Any], listed: Mapping[str, Any]) -> list[ObjectRef]:
    """Highest sync wave first; inside a wave, webhooks first, Namespaces and CRDs last."""
    def wave(ref: ObjectRef) -> int:
        try:
            return wave_of(listed.get(ref.key) or {}) or 0
        except OrderingError:
            return 0
    ordered = stages.delete_order(refs)
    return sorted(ordered, key=wave, reverse=True)   # stable: stage order kept in a wave


def _live_of(kube: ClusterApi, entry: InventoryEntry,
             listed: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if listed is not None:
        return listed
    try:
        return kube.get(entry.ref.api_version, entry.ref.kind, entry.ref.namespace,
                        entry.ref.name)
    except NotServed:
        return None


def delete_one(kube: ClusterApi, entry: InventoryEntry, listed: Mapping[str, Any] | None, *,
               ours: Ours) -> ObjectResult:
    """Delete one object that left the fleet, if it is still the one gitfleet wrote."""
    ref = entry.ref
    try:
        live = _live_of(kube, entry, listed)
        if live is None:
            return ObjectResult(ref, entry.description, Change.DELETED, message="already gone")
        if not ours(live, entry):
            log(LOG, logging.WARNING, "left alone: not the object gitfleet wrote",
                object=str(ref), uid=uid_of(live), recorded_uid=entry.uid)
            return ObjectResult(ref, entry.description, Change.SKIPPED, message=(
                "not deleted: the live object is not the one gitfleet wrote "
                "(re-created or relabelled by someone else); forgotten"))
        finalizers = tuple((live.get("metadata") or {}).get("finalizers") or ())
        if not (live.get("metadata") or {}).get("deletionTimestamp"):
            deletion = kube.delete_object(ref.api_version, ref.kind, ref.namespace, ref.name)
            if not deletion.terminating:
                log(LOG, logging.INFO, "deleted", object=str(ref),
                    description=entry.description)
                return ObjectResult(ref, entry.description, Change.DELETED,
                                    message="" if deletion.existed else "already gone")
            finalizers = deletion.finalizers
    except ApiError as exc:
        return ObjectResult(ref, entry.description, Change.FAILED,
                            error=f"delete failed: {exc.message or exc}")
    # Terminating: gone only once whoever set the finalizers removes them; looked at again
    # at every sync, and kept in the inventory until then.
    return ObjectResult(ref, entry.description, Change.SKIPPED, going=True, message=(
        f"Terminating, held by finalizers {', '.join(map(str, finalizers)) or '(none)'}"))


def release_one(kube: ClusterApi, entry: InventoryEntry, listed: Mapping[str, Any] | None, *,
                ours: Ours, why: str = "") -> ObjectResult:
    """Keep an object that left the fleet, without gitfleet's labels and annotations."""
    ref = entry.ref
    why = why or ("adopted" if entry.adopted else "preserveResourcesOnDeletion")
    try:
        live = _live_of(kube, entry, listed)
        if live is None or not ours(live, entry):
            return ObjectResult(ref, entry.description, Change.SKIPPED,
                                message="not released: gone or not gitfleet's any more")
        kube.merge_patch(ref.api_version, ref.kind, ref.namespace, ref.name, release_patch())
    except ApiError as exc:
        return ObjectResult(ref, entry.description, Change.FAILED,
                            error=f"release failed: {exc.message or exc}")
    log(LOG, logging.INFO, "released", object=str(ref), reason=why)
    return ObjectResult(ref, entry.description, Change.RELEASED,
                        message=f"kept in the cluster without gitfleet's labels ({why})")
