"""Health per kind and Description phase, as SEMANTICS.md says."""

from __future__ import annotations

from gitfleet.agent.health import ObjectOutcome, judge, phase_of
from gitfleet.agent.objectref import ObjectRef
from gitfleet.agent.stages import delete_order, in_stages
from gitfleet.wire.status import Change, Health, Phase
from tests.agent.fleetstate import deployment


def _with_status(obj: dict, generation: int, **status: int) -> dict:
    obj["metadata"]["generation"] = generation
    obj["status"] = status
    return obj


def test_deployment_rollout_is_followed_to_completion() -> None:
    d = deployment("web", "bar", replicas=3)
    assert judge(_with_status(d, 2, observedGeneration=1, updatedReplicas=3,
                              availableReplicas=3)).health is Health.PROGRESSING
    assert judge(_with_status(d, 2, observedGeneration=2, updatedReplicas=2,
                              availableReplicas=2)).health is Health.PROGRESSING
    assert judge(_with_status(d, 2, observedGeneration=2, updatedReplicas=3,
                              availableReplicas=2)).health is Health.PROGRESSING
    assert judge(_with_status(d, 2, observedGeneration=2, updatedReplicas=3,
                              availableReplicas=3)).health is Health.HEALTHY


def test_other_kinds() -> None:
    assert judge({"kind": "ConfigMap"}).health is Health.HEALTHY
    assert judge({"kind": "PersistentVolumeClaim", "status": {"phase": "Pending"}}).health \
        is Health.PROGRESSING
    lb = {"kind": "Service", "spec": {"type": "LoadBalancer"}, "status": {}}
    assert judge(lb).health is Health.PROGRESSING
    job = {"kind": "Job", "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    assert judge(job).health is Health.DEGRADED


def test_phase() -> None:
    ok = ObjectOutcome(Change.CREATED, Health.HEALTHY)
    waiting = ObjectOutcome(Change.UNCHANGED, Health.PROGRESSING, message="1 of 3 updated")
    failed = ObjectOutcome(Change.FAILED, Health.UNKNOWN, error="422 Invalid")
    assert phase_of([ok], previous=None, applied=True)[0] is Phase.SUCCESS
    assert phase_of([ok, waiting], previous=None, applied=True)[0] is Phase.PROGRESSING
    assert phase_of([ok, waiting], previous=Phase.SUCCESS, applied=True)[0] is Phase.DEGRADED
    assert phase_of([ok, failed], previous=None, applied=True) == (Phase.FAILURE, "422 Invalid")
    assert phase_of([], previous=None, applied=False)[0] is Phase.PENDING


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
