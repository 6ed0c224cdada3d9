"""A cluster whose file is broken keeps its last rendered `cluster.yaml` (a "ghost"): what
that kept file holds but this hub cannot read is said as a warning naming the file and the
field, never dropped in silence (review2 LOW 8)."""

from __future__ import annotations

from typing import Any

import yaml

from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render

KEPT = "clusters/edge/cluster.yaml"


def doc(*objs: dict[str, Any]) -> bytes:
    return yaml.safe_dump_all(objs, sort_keys=False).encode()


def managed(name: str) -> dict[str, Any]:
    return {"apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
            "metadata": {"name": name, "labels": {"env": "prod"}}, "spec": {"syncMode": "Pull"}}


def fleet_with_edge_broken() -> dict[str, bytes]:
    return {"clusters/good.yaml": doc(managed("good")),
            "clusters/edge.yaml": b"metadata: [\n"}


def kept_file(**extra: Any) -> bytes:
    body = {"name": "edge", "namespace": "gitfleet-edge", "labels": {"env": "prod"},
            "syncMode": "Pull", **extra}
    return yaml.safe_dump(body, sort_keys=False).encode()


def warnings_of(previous: dict[str, bytes]) -> list[str]:
    result = render(load_fleet(fleet_with_edge_broken()), previous_files=previous)
    return [w.format() for w in result.warnings]


def test_an_unknown_field_of_the_kept_cluster_file_is_said() -> None:
    said = [w for w in warnings_of({KEPT: kept_file(futureField=1)}) if KEPT in w]
    assert len(said) == 1, said
    assert "futureField" in said[0]


def test_an_unknown_taint_field_of_the_kept_cluster_file_is_said() -> None:
    taint = {"key": "gpu", "value": "yes", "effect": "NoSchedule", "reason": "newer hub"}
    said = [w for w in warnings_of({KEPT: kept_file(taints=[taint])}) if KEPT in w]
    assert len(said) == 1 and "reason" in said[0], said


def test_an_unreadable_kept_cluster_file_is_said() -> None:
    said = [w for w in warnings_of({KEPT: b"name: [\n"}) if KEPT in w]
    assert len(said) == 1, said


def test_a_sound_kept_cluster_file_gives_no_warning_about_it() -> None:
    assert not [w for w in warnings_of({KEPT: kept_file()}) if KEPT in w]
