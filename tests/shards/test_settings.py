"""fleet.yaml `status.repositories`: which status repository each cluster's agent is told to
push to (cluster.yaml `statusRepository`), and bad input said with file, line and a hint."""

from __future__ import annotations

from collections import Counter

import yaml

from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render

FLEET = """\
apiVersion: gitfleet.io/v1alpha1
kind: FleetSettings
status:
  repositories:
    - name: eu
      url: https://git.example.com/status-eu.git
      pushUrl: https://git.example.com/push/{cluster}/status-eu.git
      selector:
        matchLabels: {region: eu}
    - name: a
      url: https://git.example.com/status-a.git
    - name: b
      url: ssh://git@git.example.com/status-b.git
"""


def _cluster(name: str, labels: dict[str, str]) -> bytes:
    return yaml.safe_dump({"apiVersion": "clusters.clusternet.io/v1beta1",
                           "kind": "ManagedCluster",
                           "metadata": {"name": name, "labels": labels},
                           "spec": {"syncMode": "Pull"}}).encode()


def _files(n: int, fleet: str = FLEET) -> dict[str, bytes]:
    files = {"fleet.yaml": fleet.encode()}
    for i in range(n):
        labels = {"region": "eu" if i % 4 == 0 else "us"}
        files[f"clusters/c{i}.yaml"] = _cluster(f"c{i}", labels)
    return files


def _status_repositories(files: dict[str, bytes]) -> dict[str, str]:
    result = render(load_fleet(files))
    assert not result.errors, result.errors
    out = {}
    for path, data in result.files.items():
        if path.endswith("/cluster.yaml"):
            doc = yaml.safe_load(data)
            out[doc["name"]] = doc.get("statusRepository", "")
    return out


def test_clusters_are_spread_by_label_then_by_hash() -> None:
    where = _status_repositories(_files(80))
    assert len(where) == 80
    for i in range(0, 80, 4):   # region=eu: the selector's repository, each its own push URL
        assert where[f"c{i}"] == f"https://git.example.com/push/c{i}/status-eu.git"
    rest = Counter(where[f"c{i}"] for i in range(80) if i % 4)
    assert set(rest) == {"https://git.example.com/status-a.git",
                         "ssh://git@git.example.com/status-b.git"}
    assert min(rest.values()) >= 15, rest     # 60 clusters, spread over both


def test_adding_a_repository_moves_only_clusters_to_it() -> None:
    before = _status_repositories(_files(200))
    grown = FLEET + "    - name: c\n      url: https://git.example.com/status-c.git\n"
    after = _status_repositories(_files(200, grown))
    moved = {name for name in before if before[name] != after[name]}
    assert moved, "the new repository takes some clusters"
    assert {after[name] for name in moved} == {"https://git.example.com/status-c.git"}


def test_without_status_repositories_cluster_yaml_names_none() -> None:
    files = _files(3, "apiVersion: gitfleet.io/v1alpha1\nkind: FleetSettings\n")
    assert set(_status_repositories(files).values()) == {""}


def test_a_cluster_no_repository_takes_stays_in_the_fleet_repo() -> None:
    only_eu = FLEET.split("    - name: a\n")[0]
    where = _status_repositories(_files(8, only_eu))
    assert where["c0"].endswith("/push/c0/status-eu.git") and where["c1"] == ""


def _problems(fleet: str) -> list[str]:
    return [f"{p.path}:{p.line}: {p.message}" for p in load_fleet(_files(1, fleet)).errors]


def test_unknown_fields_are_named_with_their_line_and_a_hint() -> None:
    bad = FLEET.replace("      pushUrl:", "      pushURL:").replace("  repositories:",
                                                                   "  repositorie:")
    assert _problems(bad) == [
        "fleet.yaml:4: status.repositorie: `repositorie` is not a field of status; "
        "did you mean `repositories`?"]
    bad = FLEET.replace("      pushUrl:", "      pushURL:")
    assert _problems(bad) == [
        "fleet.yaml:7: status.repositories.0.pushURL: `pushURL` is not a field of a status "
        "repository; did you mean `pushUrl`?"]


def test_bad_repositories_are_said_each_at_its_line() -> None:
    bad = (FLEET.replace("name: b", "name: a")
           .replace("https://git.example.com/status-a.git", "https://tok:en@git.example.com/a")
           .replace("/push/{cluster}/", "/push/")
           .replace("matchLabels: {region: eu}", "matchExpressions: [{key: r, operator: in}]"))
    found = _problems(bad)
    assert any(p.startswith("fleet.yaml:7: status.repositories.0.pushUrl: must hold `{cluster}`")
               for p in found), found
    assert any(p.startswith("fleet.yaml:9: status.repositories.0.selector.matchExpressions.0."
                            "operator: `in` is not an operator") and "did you mean `In`" in p
               for p in found), found
    assert any(p.startswith("fleet.yaml:11: status.repositories.1.url: must not carry "
                            "credentials") for p in found), found
    assert any(p.startswith("fleet.yaml:12: status.repositories.2.name: `a` is already")
               for p in found), found
    assert not any("tok:en" in p for p in found)
