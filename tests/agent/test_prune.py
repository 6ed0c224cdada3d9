"""Prune deletes only inventory objects the state dropped, and refuses what looks like a wipe."""

from __future__ import annotations

from gitfleet.agent.desired import parse_cluster_tree
from gitfleet.agent.inventory import Intent, Inventory, InventoryEntry
from gitfleet.agent.prune import PRUNE_FLOOR, plan_prune
from gitfleet.model.settings import MaxDeletions
from gitfleet.wire.objectref import ObjectRef
from tests.agent.fleetstate import configmap, description_files


def _inventory(*names: tuple[str, str]) -> Inventory:
    entries = [InventoryEntry(ObjectRef("v1", "ConfigMap", "bar", name), desc, "h")
               for desc, name in names]
    return Inventory({e.ref.key: e for e in entries})


def _state(objects: dict[str, list[str]], *, errors: dict[str, list[str]] | None = None):
    files: dict[str, bytes] = {}
    for desc, names in objects.items():
        files |= description_files("default", desc, [configmap(n, "bar", {}) for n in names],
                                   render_errors=(errors or {}).get(desc, ()))
    return parse_cluster_tree(files, cluster_commit="c" * 40)


INV = _inventory(("default/web", "a"), ("default/web", "b"), ("default/web", "c"),
                 ("default/db", "d"))


def test_removed_object_is_pruned_and_nothing_else() -> None:
    plan = plan_prune(INV, _state({"web": ["a", "b", "c", "new"], "db": []}),
                      max_share=0.5, allow_mass_prune=False)
    assert [e.ref.name for e in plan.delete] == ["d"]
    assert not plan.refused


def test_description_with_render_errors_prunes_nothing() -> None:
    state = _state({"web": ["a"], "db": ["d"]}, errors={"web": ["templates/x.yaml: bad"]})
    plan = plan_prune(INV, state, max_share=1.0, allow_mass_prune=False)
    assert plan.delete == ()
    assert sorted(e.ref.name for e in plan.kept) == ["b", "c"]


def test_vanished_description_is_pruned() -> None:
    plan = plan_prune(INV, _state({"web": ["a", "b", "c"]}), max_share=0.5,
                      allow_mass_prune=False)
    assert [e.ref.name for e in plan.delete] == ["d"]


def test_mass_prune_is_refused_unless_allowed() -> None:
    state = _state({"db": ["d"]})
    refused = plan_prune(INV, state, max_share=0.5, allow_mass_prune=False, floor=0)
    assert refused.delete == () and "3 of 4" in refused.refused
    allowed = plan_prune(INV, state, max_share=0.5, allow_mass_prune=True, floor=0)
    assert sorted(e.ref.name for e in allowed.delete) == ["a", "b", "c"]


def test_a_prune_within_the_floor_is_never_refused() -> None:
    # the agent's floor is the hub's default guards.maxDeletions count: a small cluster may
    # lose its last objects (1 of 1, 10 of 10); 11 of 11 is a mass prune
    assert PRUNE_FLOOR == MaxDeletions().count == 10
    one = _inventory(("default/web", "a"))
    assert [e.ref.name for e in plan_prune(one, _state({}), max_share=0.5,
                                           allow_mass_prune=False).delete] == ["a"]
    names = [f"n{i:02}" for i in range(11)]
    ten = _inventory(*(("default/web", n) for n in names[:10]))
    assert len(plan_prune(ten, _state({}), max_share=0.5, allow_mass_prune=False).delete) == 10
    eleven = _inventory(*(("default/web", n) for n in names))
    refused = plan_prune(eleven, _state({}), max_share=0.5, allow_mass_prune=False)
    assert refused.delete == () and "11 of 11" in refused.refused
    assert "Gitfleet-Approve-Deletions" in refused.refused


def test_unreadable_branch_prunes_nothing() -> None:
    files = description_files("default", "web", [configmap("a", "bar", {})])
    files["default/broken/x.yaml"] = b"kind: ConfigMap\n"
    state = parse_cluster_tree(files, cluster_commit="c" * 40)
    plan = plan_prune(INV, state, max_share=1.0, allow_mass_prune=True)
    assert plan.delete == () and plan.refused


def test_released_entries_are_kept_in_the_cluster_and_outside_the_budget() -> None:
    entries = {k: e for k, e in INV.entries.items()}
    for key in list(entries):
        if key.endswith("/b") or key.endswith("/c"):
            entries[key] = InventoryEntry(entries[key].ref, entries[key].description, "h",
                                          uid="u", adopted=True, release=True)
    plan = plan_prune(Inventory(entries), _state({"web": ["a"], "db": []}), max_share=0.34,
                      allow_mass_prune=False)
    assert sorted(e.ref.name for e in plan.release) == ["b", "c"]
    assert [e.ref.name for e in plan.delete] == ["d"] and not plan.refused


def test_journal_round_trips_through_text() -> None:
    entry = InventoryEntry(ObjectRef("v1", "ConfigMap", "bar", "a"), "default/web", "h",
                           uid="1234", pending=True, adopted=True, release=True)
    inventory = Inventory({entry.ref.key: entry}, Intent("s" * 40, apply=1, delete=0))
    back = Inventory.from_text(inventory.to_text())
    assert back == inventory and back.interrupted
    done = back.with_entries([InventoryEntry(entry.ref, "default/web", "h", uid="1234")]
                             ).with_intent(None)
    assert not Inventory.from_text(done.to_text()).interrupted
