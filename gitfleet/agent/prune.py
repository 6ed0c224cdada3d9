"""Which inventory objects a sync deletes, and when it must refuse (DESIGN, "Rules").

Only objects in the inventory are candidates. An object is pruned when the desired state no
longer holds it, except when its Description is still present but marked with render errors
(the hub kept its last good content) or did not read, and never when the cluster branch itself
could not be read. A sync that would delete more than a share of all owned objects is refused as
a whole (nothing deleted, the status says why) unless mass prune is allowed: a broken render
must not empty a cluster.

An entry marked `release` (adopted under Overwrite, or of a policy that preserves resources on
deletion) is released instead: the object stays, gitfleet's marks and the entry go. Releases do
not count against the prune budget, since nothing is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitfleet.agent.desired import DesiredState
from gitfleet.agent.inventory import Inventory, InventoryEntry


@dataclass(frozen=True)
class PrunePlan:
    delete: tuple[InventoryEntry, ...] = ()
    kept: tuple[InventoryEntry, ...] = ()
    release: tuple[InventoryEntry, ...] = ()
    refused: str = ""


def plan_prune(inventory: Inventory, desired: DesiredState, *, max_share: float,
               allow_mass_prune: bool) -> PrunePlan:
    """Decide what to delete; `kept` are orphans spared by a render error or unread file."""
    if not desired.prunable:
        orphans = tuple(e for k, e in inventory.entries.items() if k not in desired.objects)
        return PrunePlan(kept=orphans, refused="" if not orphans else
                         "cluster branch did not read completely; nothing pruned")
    delete: list[InventoryEntry] = []
    kept: list[InventoryEntry] = []
    release: list[InventoryEntry] = []
    for key in sorted(inventory.entries):
        entry = inventory.entries[key]
        if key in desired.objects:
            continue
        description = desired.descriptions.get(entry.description)
        if description is not None and not description.prunable:
            kept.append(entry)
            continue
        (release if entry.release else delete).append(entry)
    owned = len(inventory)
    if delete and not allow_mass_prune and len(delete) > max_share * owned:
        return PrunePlan(kept=tuple(kept) + tuple(delete), release=tuple(release), refused=(
            f"refusing to prune {len(delete)} of {owned} owned objects (more than "
            f"{max_share:.0%} in one sync); run with --allow-mass-prune to allow it"))
    return PrunePlan(delete=tuple(delete), kept=tuple(kept), release=tuple(release))
