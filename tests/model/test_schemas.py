"""Every kind's JSON schema: a valid example passes; a wrong type or a missing required field
fails with a message naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gitfleet import yamlio
from gitfleet.model import schema
from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from tests.conftest import CONFORMANCE, ROOT

APPS = "apps.clusternet.io/v1alpha1"
POLICY = "policy.karmada.io/v1alpha1"
AUTOSCALING = "autoscaling.karmada.io/v1alpha1"


def upstream(rel: str, kind: str) -> dict[str, Any]:
    path = CONFORMANCE / rel
    for d in yamlio.load_documents(path.read_bytes(), str(path)):
        if d.data["kind"] == kind:
            data: dict[str, Any] = d.data
            return data
    raise AssertionError(f"no {kind} in {rel}")


def rendered_description() -> dict[str, Any]:
    """A Description exactly as the render writes it, from the worked example at the root."""
    files = {}
    for folder in ("clusters", "policies", "templates"):
        for p in (ROOT / folder).rglob("*.yaml"):
            files[p.relative_to(ROOT).as_posix()] = p.read_bytes()
    result = render(load_fleet(files))
    path = next(p for p in result.files if p.endswith("/description.yaml"))
    data: dict[str, Any] = yamlio.load_one(result.files[path], path)
    return data


VALID: dict[str, Any] = {
    "Subscription": lambda: upstream("clusternet/static-dividing-scheduling/subscription.yaml",
                                     "Subscription"),
    "Localization": lambda: upstream("clusternet/replication-scheduling/localization.yaml",
                                     "Localization"),
    "Globalization": lambda: upstream("clusternet/replication-scheduling/globalization.yaml",
                                      "Globalization"),
    "HelmChart": lambda: upstream("clusternet/oci/oci-chart-mysql.yaml", "HelmChart"),
    "PropagationPolicy": lambda: upstream("karmada/nginx/propagationpolicy.yaml",
                                          "PropagationPolicy"),
    "ClusterPropagationPolicy": lambda: upstream(
        "karmada/guestbook/guestbooks-clusterpropagationpolicy.yaml", "ClusterPropagationPolicy"),
    "OverridePolicy": lambda: upstream("karmada/nginx/overridepolicy.yaml", "OverridePolicy"),
    "ClusterOverridePolicy": lambda: {
        "apiVersion": POLICY, "kind": "ClusterOverridePolicy", "metadata": {"name": "all"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                 "overrideRules": [{"targetCluster": {"clusterNames": ["member1"]},
                                    "overriders": {"imageOverrider": [
                                        {"component": "Registry", "operator": "replace",
                                         "value": "registry.example"}]}}]}},
    "FederatedHPA": lambda: {
        "apiVersion": AUTOSCALING, "kind": "FederatedHPA",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "nginx"},
                 "minReplicas": 1, "maxReplicas": 10,
                 "metrics": [{"type": "Resource", "resource": {
                     "name": "cpu", "target": {"type": "Utilization",
                                               "averageUtilization": 10}}}]}},
    "CronFederatedHPA": lambda: {
        "apiVersion": AUTOSCALING, "kind": "CronFederatedHPA",
        "metadata": {"name": "nginx-cron", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "nginx"},
                 "rules": [{"name": "scale-up", "schedule": "*/1 * * * *",
                            "targetReplicas": 5, "timeZone": "UTC"}]}},
    "RolloutPolicy": lambda: {
        "apiVersion": "gitfleet.io/v1alpha1", "kind": "RolloutPolicy",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"tier": "web"}},
                 "waves": [{"name": "canary", "clusterAffinity": {"matchLabels": {"ring": "c"}},
                            "bake": "10m"}, {"name": "early", "percent": 20}, {"name": "rest"}],
                 "maxUnavailable": "10%", "healthTimeout": "15m", "onFailure": "Pause"}},
    "ManagedCluster": lambda: yamlio.load_one((ROOT / "clusters/prod-east.yaml").read_bytes(),
                                              "prod-east.yaml"),
    "FleetSettings": lambda: yamlio.load_one((ROOT / "fleet.yaml").read_bytes(), "fleet.yaml"),
    "Description": rendered_description,
    "ClusterRegistrationRequest": lambda: {
        "apiVersion": "gitfleet.io/v1alpha1", "kind": "ClusterRegistrationRequest",
        "metadata": {"name": "edge-1"},
        "spec": {"clusterId": "0b1e4a52-6a5b-4f0e-9a53-2b8f1c7d5e01", "clusterName": "edge-1",
                 "clusterLabels": {"env": "edge"}, "syncMode": "Pull",
                 "clusterType": "EdgeCluster", "kubernetesVersion": "v1.29.0",
                 "platform": "linux/amd64"}},
}

# (kind, field path as a list, bad value, text the message must hold)
WRONG_TYPES: list[tuple[str, list[Any], Any, str]] = [
    ("Subscription", ["spec", "subscribers", 0, "weight"], "two",
     "spec.subscribers[0].weight: 'two' is not of type 'integer'"),
    ("Subscription", ["spec", "schedulingStrategy"], "Everywhere", "spec.schedulingStrategy"),
    ("Localization", ["spec", "priority"], "high", "spec.priority"),
    ("Globalization", ["spec", "overrides", 0, "type"], "StrategicMergePatch",
     "spec.overrides[0].type"),
    ("HelmChart", ["spec", "chart"], 7, "spec.chart: 7 is not of type 'string'"),
    ("PropagationPolicy", ["spec", "resourceSelectors"], "nginx", "spec.resourceSelectors"),
    ("ClusterPropagationPolicy", ["spec", "placement", "clusterAffinity", "clusterNames"],
     "member1", "spec.placement.clusterAffinity.clusterNames"),
    ("OverridePolicy", ["spec", "overrideRules"], {"a": 1}, "spec.overrideRules"),
    ("ClusterOverridePolicy", ["spec", "overrideRules", 0, "overriders", "imageOverrider", 0,
                               "component"], "Everything", "imageOverrider[0].component"),
    ("FederatedHPA", ["spec", "maxReplicas"], "ten", "spec.maxReplicas"),
    ("CronFederatedHPA", ["spec", "rules", 0, "targetReplicas"], -1,
     "spec.rules[0].targetReplicas"),
    ("ManagedCluster", ["spec", "syncMode"], "Sometimes", "spec.syncMode"),
    ("ManagedCluster", ["metadata", "labels", "env"], 3, "metadata.labels.env"),
    ("FleetSettings", ["limits", "maxFileBytes"], "10MiB", "limits.maxFileBytes"),
    ("FleetSettings", ["intervals", "fetch"], "soon", "intervals.fetch"),
    ("Description", ["spec", "deployer"], 5, "spec.deployer"),
    ("ClusterRegistrationRequest", ["spec", "clusterName"], "Not_A_Label", "spec.clusterName"),
]

MISSING: list[tuple[str, list[Any], str]] = [
    ("Subscription", ["spec", "feeds"], "'feeds' is a required property"),
    ("Subscription", ["spec", "subscribers"], "'subscribers' is a required property"),
    ("Localization", ["spec", "feed"], "'feed' is a required property"),
    ("Globalization", ["spec", "feed", "kind"], "'kind' is a required property"),
    ("HelmChart", ["spec", "chart"], "'chart' is a required property"),
    ("PropagationPolicy", ["spec", "resourceSelectors"], "'resourceSelectors' is a required"),
    ("ClusterPropagationPolicy", ["spec"], "'spec' is a required property"),
    ("OverridePolicy", ["metadata", "name"], "'name' is a required property"),
    ("FederatedHPA", ["spec", "scaleTargetRef", "name"], "'name' is a required property"),
    ("CronFederatedHPA", ["spec", "rules", 0, "schedule"], "'schedule' is a required property"),
    ("ManagedCluster", ["metadata"], "'metadata' is a required property"),
    ("Description", ["spec", "cluster"], "'cluster' is a required property"),
    ("ClusterRegistrationRequest", ["spec", "clusterId"], "'clusterId' is a required property"),
]


def set_in(data: Any, path: list[Any], value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


def drop(data: Any, path: list[Any]) -> None:
    for part in path[:-1]:
        data = data[part]
    del data[path[-1]]


def test_every_shipped_schema_has_a_valid_example() -> None:
    shipped = {p.stem for p in (ROOT / "gitfleet/model/schemas").glob("*.json")} - {"defs"}
    assert shipped == set(VALID)


@pytest.mark.parametrize("kind", sorted(VALID))
def test_valid_example_passes(kind: str) -> None:
    assert schema.problems(kind, VALID[kind]()) == []


@pytest.mark.parametrize(("kind", "path", "value", "text"), WRONG_TYPES,
                         ids=[f"{k}-{'.'.join(map(str, p))}" for k, p, _, _ in WRONG_TYPES])
def test_wrong_type_fails_naming_the_field(kind: str, path: list[Any], value: Any,
                                           text: str) -> None:
    data = copy.deepcopy(VALID[kind]())
    set_in(data, path, value)
    found = schema.problems(kind, data)
    assert found and any(text in p for p in found), found


@pytest.mark.parametrize(("kind", "path", "text"), MISSING,
                         ids=[f"{k}-{'.'.join(map(str, p))}" for k, p, _ in MISSING])
def test_missing_required_field_fails_naming_it(kind: str, path: list[Any], text: str) -> None:
    data = copy.deepcopy(VALID[kind]())
    drop(data, path)
    found = schema.problems(kind, data)
    assert any(text in p for p in found), found


def test_every_kind_rejects_unknown_fields() -> None:
    settings = VALID["FleetSettings"]()
    settings["limits"]["maxFilesBytes"] = 1
    assert schema.problems("FleetSettings", settings) == [
        "`limits.maxFilesBytes` is not a field of FleetSettings; did you mean `maxFileBytes`?"]
    request = VALID["ClusterRegistrationRequest"]()
    request["spec"]["region"] = "eu"
    assert any("unknown field(s)" in p and "'region'" in p
               for p in schema.problems("ClusterRegistrationRequest", request))
    # Upstream kinds list every field of their version: schedulingBySubGroup is one of them,
    # a typo of it is not.
    sub = upstream("clusternet/scheduling-group/subscription-static-dividing.yaml",
                   "Subscription")
    assert sub["spec"]["schedulingBySubGroup"] is True
    assert schema.problems("Subscription", sub) == []
    sub["spec"]["schedulingBySubgroup"] = sub["spec"].pop("schedulingBySubGroup")
    assert schema.problems("Subscription", sub) == [
        "`spec.schedulingBySubgroup` is not a field of Subscription; did you mean "
        "`schedulingBySubGroup`?"]


def test_problems_are_listed_in_a_stable_order() -> None:
    data = VALID["Subscription"]()
    data["spec"]["subscribers"][0]["weight"] = -1
    data["spec"]["schedulingStrategy"] = 3
    found = schema.problems("Subscription", data)
    assert found == sorted(found)
    assert {p.split(":")[0] for p in found} == {"spec.schedulingStrategy",
                                               "spec.subscribers[0].weight"}


def test_every_shipped_schema_is_a_valid_json_schema() -> None:
    # Checked here rather than at run time: the hot path skips the meta-schema check.
    from importlib import resources

    import jsonschema

    from gitfleet.model import schema as schema_module

    names = [p.name[:-5] for p in resources.files("gitfleet.model").joinpath("schemas").iterdir()
             if p.name.endswith(".json") and p.name != "defs.json"]
    assert len(names) >= 14
    for name in names:
        doc = schema_module._schema(name)
        jsonschema.validators.validator_for(doc).check_schema(doc)
