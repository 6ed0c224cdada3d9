"""Loading the same cluster files again (a hub loads every commit it reads) gives the same
clusters, and whatever makes a file a problem now is still reported."""

from __future__ import annotations

from gitfleet.model.loader import load_fleet
from tests.model.test_loader import cluster, doc, obj


def test_a_cluster_file_loaded_again_gives_the_same_cluster_and_new_problems() -> None:
    files = {f"clusters/c{n}.yaml": doc(cluster(f"c{n}", {"env": "prod"})) for n in range(3)}
    first, again = load_fleet(files), load_fleet(dict(files))
    assert first.clusters == again.clusters and not again.errors
    assert [c.labels["env"] for c in again.clusters.values()] == ["prod"] * 3
    # the same bytes under a size limit they exceed: an error, the cluster left out
    small = {**files, "fleet.yaml": b"limits:\n  maxFileBytes: 10\n"}
    limited = load_fleet(small)
    assert limited.clusters == {} and len(limited.errors) == 3
    assert all("over the limit" in p.message for p in limited.errors)
    # one file changed: only its cluster changes
    changed = {**files, "clusters/c1.yaml": doc(cluster("c1", {"env": "dev"}))}
    assert load_fleet(changed).clusters["c1"].labels["env"] == "dev"
    assert load_fleet(changed).clusters["c0"] == first.clusters["c0"]


def _localization(name: str, priority: int = 600) -> bytes:
    return doc(obj("apps.clusternet.io/v1alpha1", "Localization", name, "gitfleet-c0",
                   spec={"priority": priority, "overridePolicy": "ApplyNow",
                         "feed": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm",
                                  "namespace": "default"},
                         "overrides": [{"name": "x", "type": "MergePatch",
                                        "value": '{"data": {"a": "1"}}'}]}))


def test_a_policy_file_loaded_again_gives_the_same_policies_and_new_problems() -> None:
    files = {"clusters/c0.yaml": doc(cluster("c0")),
             "policies/b.yaml": _localization("tune"), "policies/c.yaml": _localization("more")}
    first, again = load_fleet(files), load_fleet(dict(files))
    assert first == again and not again.errors
    assert [o.name for o in again.localizations] == ["more", "tune"]
    assert again.localizations[1] is first.localizations[1]    # not built again
    # an unchanged file whose object an earlier file now defines: a duplicate, as before
    taken = load_fleet({**files, "policies/a.yaml": _localization("tune", priority=700)})
    assert [(p.path, "duplicate object" in p.message) for p in taken.errors] == [
        ("policies/b.yaml", True)]
    assert [o.priority for o in taken.localizations if o.name == "tune"] == [700]
    # and it comes back once that file is gone
    assert load_fleet(dict(files)) == first
    # the same bytes under other settings: loaded under those (here: over the size limit)
    limited = load_fleet({**files, "fleet.yaml": b"limits:\n  maxFileBytes: 10\n"})
    assert limited.localizations == () and len(limited.errors) == 3
