"""A fleet patched with the files a commit changed is the fleet a full load gives: over a row
of commits changing cluster files (a label, added, removed, renamed, broken and fixed) and
Localizations (changed, added, removed, broken, claimed twice), and the changes that must load
in full (fleet.yaml, a Subscription, a sibling cluster file)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gitfleet.model.fleetpatch import FleetPatcher
from gitfleet.model.loader import Fleet, change_between, load_fleet
from tests.model.test_loader import cluster, doc, obj

APPS = "apps.clusternet.io/v1alpha1"


def _localization(name: str, namespace: str, value: str = "1") -> dict[str, Any]:
    return obj(APPS, "Localization", name, namespace,
               spec={"priority": 600, "overridePolicy": "ApplyNow",
                     "feed": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm",
                              "namespace": "default"},
                     "overrides": [{"name": "x", "type": "MergePatch",
                                    "value": f'{{"data": {{"a": "{value}"}}}}'}]})


def _subscription(zone: str) -> bytes:
    return doc(obj(APPS, "Subscription", "app", "default", spec={
        "subscribers": [{"clusterAffinity": {"matchLabels": {"zone": zone}}}],
        "feeds": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm",
                   "namespace": "default"}]}))


def _everything(fleet: Fleet) -> tuple[object, ...]:
    """A fleet with what object equality leaves out (labels, origins, keys) spelled out."""
    return (
        fleet,
        [(n, c, sorted(c.labels.items()), c.origin, c.signing_key, c.namespace)
         for n, c in fleet.clusters.items()],
        [(o, o.origin, o.digest) for o in fleet.localizations],
        [p.format() for p in fleet.errors], [p.format() for p in fleet.warnings],
        fleet.broken_paths, fleet.broken_clusters, fleet.heartbeat)


def _base() -> dict[str, bytes]:
    files = {f"clusters/c{n}.yaml": doc(cluster(f"c{n}", {"zone": "a" if n % 2 else "b"}))
             for n in range(6)}
    files["templates/cm.yaml"] = doc(obj("v1", "ConfigMap", "cm", "default",
                                         data={"a": "0"}))
    files["policies/app.yaml"] = _subscription("a")
    for n in range(6):
        files[f"policies/loc-c{n}.yaml"] = doc(_localization("tune", f"gitfleet-c{n}"))
    # a Localization for a cluster that comes later (a warning until then)
    files["policies/loc-late.yaml"] = doc(_localization("tune", "gitfleet-late"))
    return files


def _commits() -> Iterator[tuple[str, dict[str, bytes], bool]]:
    """(what changed, the fleet files, whether a patch may make it)."""
    files = _base()

    def step(what: str, patch: bool, changes: dict[str, bytes | None] | None = None
             ) -> tuple[str, dict[str, bytes], bool]:
        for path, data in (changes or {}).items():
            if data is None:
                files.pop(path)
            else:
                files[path] = data
        return what, dict(files), patch

    yield step("a label changed", True,
               {"clusters/c1.yaml": doc(cluster("c1", {"zone": "b"}))})
    yield step("a cluster added (its Localization's warning goes)", True,
               {"clusters/late.yaml": doc(cluster("late", {"zone": "a"}))})
    yield step("a cluster removed", True, {"clusters/c2.yaml": None})
    yield step("a cluster renamed", True, {
        "clusters/c3.yaml": None, "clusters/c33.yaml": doc(cluster("c33", {"zone": "a"}))})
    yield step("a cluster file broken", True, {"clusters/c4.yaml": b"kind: [\n"})
    yield step("a cluster file named after another cluster", True,
               {"clusters/c5.yaml": doc(cluster("c0"))})
    yield step("both fixed", True, {
        "clusters/c4.yaml": doc(cluster("c4", {"zone": "b"})),
        "clusters/c5.yaml": doc(cluster("c5", {"zone": "a", "new": "x"}))})
    yield step("a Localization changed", True,
               {"policies/loc-c0.yaml": doc(_localization("tune", "gitfleet-c0", "2"))})
    yield step("a Localization added", True,
               {"policies/more.yaml": doc(_localization("more", "gitfleet-c1"))})
    yield step("a Localization removed", True, {"policies/loc-c1.yaml": None})
    yield step("a Localization file broken", True, {"policies/more.yaml": b"a: b: c\n"})
    # an identity two files claim: full loads while it is claimed twice
    yield step("a Localization another file holds", False,
               {"policies/more.yaml": doc(_localization("tune", "gitfleet-c0"))})
    yield step("that one again", False,
               {"policies/more.yaml": doc(_localization("tune", "gitfleet-c0", "3"))})
    yield step("the duplicate gone", False, {"policies/more.yaml": None})
    yield step("a Localization for no cluster", True,
               {"policies/more.yaml": doc(_localization("x", "gitfleet-nowhere"))})
    yield step("a Subscription changed", False, {"policies/app.yaml": _subscription("b")})
    yield step("fleet.yaml added", False, {"fleet.yaml": b"branchPrefix: fleet\n"})
    yield step("a sibling cluster file", False,
               {"clusters/c0.yml": doc(cluster("c0", {"zone": "z"}))})
    yield step("the sibling gone", False, {"clusters/c0.yml": None})
    yield step("a label after full loads", True,
               {"clusters/c0.yaml": doc(cluster("c0", {"zone": "q"}))})
    yield step("nothing changed", True)


def test_a_patched_fleet_is_the_fleet_a_full_load_gives() -> None:
    patcher = FleetPatcher()
    last = patcher.load(_base())
    assert _everything(last) == _everything(load_fleet(_base()))
    assert [p.message for p in last.warnings if "gitfleet-late" in p.message]
    for what, files, patchable in _commits():
        patched_before = patcher.patched
        fleet = patcher.load(files)
        assert _everything(fleet) == _everything(load_fleet(dict(files))), what
        assert (patcher.patched > patched_before) == patchable, what
        if patchable and fleet is not last:
            change = change_between(last, fleet)
            assert change is not None, what
        last = fleet


def test_a_broken_file_in_a_patch_names_file_and_line_and_keeps_the_cluster_out() -> None:
    patcher = FleetPatcher()
    files = _base()
    patcher.load(files)
    broken = patcher.load({**files, "clusters/c4.yaml": b"metadata:\n  name: c4\nkind: [\n"})
    assert patcher.patched == 1
    assert "c4" not in broken.clusters and broken.broken_clusters == {"c4"}
    assert "clusters/c4.yaml" in broken.broken_paths
    (error,) = broken.errors
    assert error.path == "clusters/c4.yaml" and error.line == 4 and "YAML" in error.message
    # what the render keeps for a broken cluster: its Localization and every other cluster
    assert [o.namespace for o in broken.localizations].count("gitfleet-c4") == 1
    assert set(broken.clusters) == {f"c{n}" for n in range(6)} - {"c4"}


def test_what_a_patch_changed_is_said_only_about_its_own_base() -> None:
    patcher = FleetPatcher()
    files = _base()
    base = patcher.load(files)
    head = patcher.load({**files, "clusters/c1.yaml": doc(cluster("c1", {"zone": "q"})),
                         "policies/loc-c0.yaml": doc(_localization("tune", "gitfleet-c0", "9"))})
    change = change_between(base, head)
    assert change is not None and change.clusters == {"c1"}
    assert set(change.localizations) == {("Localization", "gitfleet-c0", "tune")}
    assert change.namespaces == {"gitfleet-c0": {"c0"}}
    assert change_between(load_fleet(files), head) is None      # another base
