"""Apply stages and delete order (health and phases: tests/health/)."""

from __future__ import annotations

from gitfleet.agent.stages import delete_order, in_stages
from gitfleet.wire.objectref import ObjectRef


def test_apply_stages_and_delete_order() -> None:
    kinds = ["ValidatingWebhookConfiguration", "Deployment", "Secret", "ClusterRole",
             "CustomResourceDefinition", "Namespace", "ServiceAccount", "ConfigMap", "Service"]
    refs = [ObjectRef("v1", k, "", k.lower()) for k in kinds]
    stages = [[r.kind for r, _ in stage] for stage in in_stages((r, None) for r in refs)]
    assert stages == [["Namespace", "CustomResourceDefinition"], ["ClusterRole"],
                      ["ServiceAccount", "Secret", "ConfigMap"], ["Deployment", "Service"],
                      ["ValidatingWebhookConfiguration"]]
    order = [r.kind for r in delete_order(refs)]
    assert order[0] == "ValidatingWebhookConfiguration" and order[-1] == "Namespace"
