"""State preservation rules: checked like any input, evaluated from a live object's status
(Karmada's JSONPath convention), reported by the agent in its status."""

from __future__ import annotations

from gitfleet.wire.preservation import (
    ANNOTATION,
    annotation,
    preserved_values,
    rule_problems,
    rules_of,
)
from gitfleet.wire.status import Change, ObjectStatus

RULES = [{"aliasLabelName": "failover.example.com/ready", "jsonPath": "{.readyReplicas}"},
         {"aliasLabelName": "revision", "jsonPath": "{ .conditions[0].reason }"},
         {"aliasLabelName": "observed", "jsonPath": "{.observedGeneration}"},
         {"aliasLabelName": "paused", "jsonPath": "{.paused}"},
         {"aliasLabelName": "missing", "jsonPath": "{.nothing}"},
         {"aliasLabelName": "message", "jsonPath": "{.conditions[0].message}"}]


def live(status: dict) -> dict:
    return {"metadata": {"name": "web", "annotations": {ANNOTATION: annotation(rules_of(RULES))}},
            "status": status}


def test_values_come_from_the_status_and_must_be_label_values() -> None:
    obj = live({"readyReplicas": 3, "observedGeneration": 7, "paused": False,
                "conditions": [{"reason": "NewReplicaSetAvailable",
                                "message": "not a label value: spaces"}]})
    assert preserved_values(obj) == {"failover.example.com/ready": "3",
                                     "revision": "NewReplicaSetAvailable", "observed": "7",
                                     "paused": "false"}


def test_an_object_without_rules_reports_nothing() -> None:
    assert preserved_values({"metadata": {}, "status": {"readyReplicas": 3}}) == {}
    assert preserved_values({"metadata": {"annotations": {ANNOTATION: "not json"}}}) == {}


def test_bad_rules_are_named() -> None:
    assert rule_problems(RULES) == []
    assert rule_problems([{"aliasLabelName": "bad label", "jsonPath": "{.a[[}"},
                          {"aliasLabelName": "ok", "jsonPath": "{}"}]) == [
        "rules[0].aliasLabelName: 'bad label' is not a label name",
        "rules[0].jsonPath: not a JSONPath: '{.a[[}' (Parse error at 1:4 near token [ ([))",
        "rules[1].jsonPath: empty JSONPath"]


def test_the_status_file_carries_the_values() -> None:
    status = ObjectStatus(api_version="apps/v1", kind="Deployment", namespace="a", name="web",
                          change=Change.UNCHANGED, preserved={"revision": "7"})
    assert status.to_dict()["preserved"] == {"revision": "7"}
    assert ObjectStatus.from_dict(status.to_dict()) == status
    assert "preserved" not in ObjectStatus.from_dict({"kind": "X"}).to_dict()
