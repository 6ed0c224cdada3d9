"""Loading the same cluster files again (a hub loads every commit it reads) gives the same
clusters, and whatever makes a file a problem now is still reported."""

from __future__ import annotations

from gitfleet.model.loader import load_fleet
from tests.model.test_loader import cluster, doc


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
