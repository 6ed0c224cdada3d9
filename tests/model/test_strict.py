"""Nothing is silently ignored: every field of the upstream kinds is known. A typo is an error
with the closest known field, an unimplemented field is an error saying so, a field gitfleet
reads but does not act on yet is a warning — each at the line of the field."""

from __future__ import annotations

from typing import Any

import pytest

from gitfleet.model import schema
from gitfleet.model.loader import load_fleet
from gitfleet.model.problems import Problem
from gitfleet.render.core import render

CLUSTERS = {
    f"clusters/{name}.yaml": (
        "apiVersion: clusters.clusternet.io/v1beta1\nkind: ManagedCluster\n"
        f"metadata:\n  name: {name}\n  labels: {{env: {env}}}\nspec:\n  syncMode: Pull\n"
    ).encode()
    for name, env in (("prod", "prod"), ("staging", "staging"))
}
DEPLOYMENT = b"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "example.com/web:1.0"}]
"""
PROPAGATION = b"""apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: web
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: web
  placement:
    clusterAffinity:
      clusterNames: [prod, staging]
"""
# The OverridePolicy: `clusterName` for `clusterNames` matched every cluster upstream.
RC_OVERRIDE = b"""apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata:
  name: web-rc
  namespace: web
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: web
  overrideRules:
    - targetCluster:
        clusterName: [staging]
      overriders:
        imageOverrider:
          - component: Tag
            operator: replace
            value: 2.0-rc1
"""
LOCALIZATION = b"""apiVersion: apps.clusternet.io/v1alpha1
kind: Localization
metadata:
  name: web-staging
  namespace: gitfleet-staging
spec:
  overidePolicy: ApplyNow
  feed: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: web}
  overrides:
    - name: two
      type: MergePatch
      value: '{"spec": {"replicas": 1}}'
"""


def fleet_with(**files: bytes) -> dict[str, bytes]:
    """The small fleet with `policies__rc=...` as `policies/rc.yaml` added or replaced."""
    extra = {k.replace("__", "/").removesuffix(".yaml") + ".yaml": v for k, v in files.items()}
    return {**CLUSTERS, "templates/web.yaml": DEPLOYMENT, "policies/web.yaml": PROPAGATION,
            **extra}


def problems_of(files: dict[str, bytes], *, warnings: bool = False) -> list[Problem]:
    fleet = load_fleet(files)
    return list(fleet.warnings if warnings else fleet.errors)


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [p.format() for p in problems]
    return problems[0]


@pytest.mark.parametrize(("path", "text", "old", "new", "line", "message"), [
    ("policies/rc.yaml", RC_OVERRIDE, "", "", 13,
     "`spec.overrideRules[0].targetCluster.clusterName` is not a field of OverridePolicy; "
     "did you mean `clusterNames`?"),
    ("policies/rc.yaml", RC_OVERRIDE, "imageOverrider", "imageOverider", 15,
     "`spec.overrideRules[0].overriders.imageOverider` is not a field of OverridePolicy; "
     "did you mean `imageOverrider`?"),
    ("policies/loc.yaml", LOCALIZATION, "", "", 7,
     "`spec.overidePolicy` is not a field of Localization; did you mean `overridePolicy`?"),
    ("policies/web.yaml", PROPAGATION, "      name: web\n  placement",
     "      nme: web\n  placement", 10,
     "`spec.resourceSelectors[0].nme` is not a field of PropagationPolicy; did you mean "
     "`name`?"),
    ("policies/web.yaml", PROPAGATION, "clusterAffinity:", "clusterAfinity:", 12,
     "did you mean `clusterAffinity`?"),
])
def test_typo_is_an_error_at_its_line_with_the_closest_field(
        path: str, text: bytes, old: str, new: str, line: int, message: str) -> None:
    broken = text.replace(old.encode(), new.encode()) if old else text
    if old == "imageOverrider":
        broken = broken.replace(b"clusterName:", b"clusterNames:")
    p = only(problems_of(fleet_with(**{path.replace("/", "__"): broken})))
    assert (p.path, p.line) == (path, line) and message in p.message, p.format()


def test_typoed_override_sends_nothing_to_production() -> None:
    """Issue 9: the typo sent a release candidate to production; now the policy is an error and
    no cluster gets its image."""
    result = render(load_fleet(fleet_with(policies__rc=RC_OVERRIDE)))
    assert any("did you mean `clusterNames`" in p.message for p in result.errors)
    images = [data for path, data in result.files.items() if "Deployment_web_web" in path]
    assert len(images) == 2 and all(b"web:1.0" in d and b"rc1" not in d for d in images)
    fixed = RC_OVERRIDE.replace(b"clusterName:", b"clusterNames:")
    result = render(load_fleet(fleet_with(policies__rc=fixed)))
    assert result.errors == []
    assert result.files["clusters/prod/web/web/apps_Deployment_web_web.yaml"].count(b"rc1") == 0
    assert b"web:2.0-rc1" in result.files["clusters/staging/web/web/apps_Deployment_web_web.yaml"]


def test_unknown_field_without_a_close_match_lists_the_known_ones() -> None:
    text = PROPAGATION.replace(b"  placement:", b"  zzz: 1\n  placement:")
    p = only(problems_of(fleet_with(policies__web=text)))
    assert p.line == 11 and p.message.startswith("`spec.zzz` is not a field of PropagationPolicy "
                                                 "(known here: `activationPreference`, ")


PP_HEAD = PROPAGATION.decode()


@pytest.mark.parametrize(("extra", "field", "line"), [
    ("  schedulerName: my-scheduler\n", "spec.schedulerName", 14),
    ("  association: true\n", "spec.association", 14),
    ("  dependentOverrides: [a]\n", "spec.dependentOverrides", 14),
    ("  preemption: Always\n", "spec.preemption", 14),
    ("  schedulePriority: {priorityClassName: x}\n", "spec.schedulePriority", 14),
    ("    workloadAffinity: {affinityGroupLabelKey: app}\n", "spec.placement.workloadAffinity",
     14),
])
def test_unsupported_karmada_field_is_an_error_at_its_line(extra: str, field: str,
                                                            line: int) -> None:
    p = only(problems_of(fleet_with(policies__web=(PP_HEAD + extra).encode())))
    assert (p.line, p.message) == (line, f"`{field}` is not supported by gitfleet")


SUBSCRIPTION = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata:
  name: web
  namespace: web
spec:
  subscribers:
    - clusterAffinity: {matchLabels: {env: prod}}
  feeds:
    - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: web}
"""


@pytest.mark.parametrize(("extra", "field"), [
    ("  schedulerName: default\n", "spec.schedulerName"),
    ("  preemptionPolicy: Never\n", "spec.preemptionPolicy"),
    ("  dividingScheduling:\n    type: Dynamic\n    dynamicDividing:\n      strategy: Spread\n"
     "      maxClusters: 2\n", "spec.dividingScheduling.dynamicDividing.maxClusters"),
])
def test_unsupported_clusternet_field_is_an_error(extra: str, field: str) -> None:
    files = {**CLUSTERS, "templates/web.yaml": DEPLOYMENT,
             "policies/web.yaml": (SUBSCRIPTION + extra).encode()}
    p = only(problems_of(files))
    assert p.message == f"`{field}` is not supported by gitfleet"
    assert p.line == 11 + extra.count("\n") - 1


def test_failover_is_acted_on_and_still_checked() -> None:
    text = PP_HEAD + ("  failover:\n    application:\n      decisionConditions:\n"
                      "        tolerationSeconds: 120\n      purgeMode: Gracefully\n")
    files = fleet_with(policies__web=text.encode())
    assert problems_of(files, warnings=True) == []
    typo = text.replace("purgeMode", "purgeMod")
    assert "did you mean `purgeMode`?" in only(problems_of(fleet_with(
        policies__web=typo.encode()))).message


def test_cluster_failover_purge_mode_is_acted_on() -> None:
    text = PP_HEAD + "  failover:\n    cluster:\n      purgeMode: Directly\n"
    assert problems_of(fleet_with(policies__web=text.encode()), warnings=True) == []


def _autoscaler(kind: str, spec: str) -> bytes:
    return (f"apiVersion: autoscaling.karmada.io/v1alpha1\nkind: {kind}\nmetadata:\n"
            f"  name: web\n  namespace: web\nspec:\n  scaleTargetRef:\n"
            f"    apiVersion: apps/v1\n    kind: Deployment\n    name: web\n{spec}").encode()


@pytest.mark.parametrize("kind", ["FederatedHPA", "CronFederatedHPA"])
def test_autoscalers_are_acted_on_without_a_warning(kind: str) -> None:
    spec = ("  minReplicas: 1\n  maxReplicas: 5\n" if kind == "FederatedHPA" else
            "  rules:\n    - name: up\n      schedule: '0 8 * * *'\n      targetReplicas: 4\n")
    files = fleet_with(policies__hpa=_autoscaler(kind, spec))
    assert problems_of(files, warnings=True) == []


@pytest.mark.parametrize(("kind", "spec", "text"), [
    ("CronFederatedHPA", "  rules:\n    - name: up\n      schedule: '0 25 * * *'\n",
     "spec.rules[0].schedule '0 25 * * *' is not a five-field cron schedule"),
    ("CronFederatedHPA", "  rules:\n    - name: up\n      schedule: '0 8 * * *'\n"
     "      timeZone: Europe/Nowhere\n", "spec.rules[0].timeZone 'Europe/Nowhere' is not"),
    ("FederatedHPA", "  maxReplicas: 5\n  metrics:\n    - type: External\n",
     "spec.metrics[0].type: 'External' is not supported by gitfleet"),
    ("FederatedHPA", "  minReplicas: 6\n  maxReplicas: 5\n",
     "spec.minReplicas 6 is above spec.maxReplicas 5"),
])
def test_an_autoscaler_the_hub_cannot_evaluate_is_an_error(kind: str, spec: str,
                                                            text: str) -> None:
    p = only(problems_of(fleet_with(policies__hpa=_autoscaler(kind, spec))))
    assert p.path == "policies/hpa.yaml" and f"{kind}/web/web" in p.format()
    assert text in p.message


def test_status_is_ignored_with_a_warning() -> None:
    text = SUBSCRIPTION + "status:\n  bindingClusters: [gitfleet-prod]\n"
    files = {**CLUSTERS, "templates/web.yaml": DEPLOYMENT, "policies/web.yaml": text.encode()}
    assert problems_of(files) == []
    assert only(problems_of(files, warnings=True)).message.startswith("`status` is ignored")


@pytest.mark.parametrize("extra", [
    # implemented in parallel (h2, h3): the loader accepts them and leaves their meaning to
    # the render
    "  suspension:\n    dispatching: true\n    dispatchingOnClusters: {clusterNames: [prod]}\n",
    "  preserveResourcesOnDeletion: true\n",
    "  propagateDeps: true\n",
    "  activationPreference: Lazy\n",
    "  conflictResolution: Overwrite\n  priority: 3\n",
])
def test_implemented_karmada_fields_are_accepted(extra: str) -> None:
    assert problems_of(fleet_with(policies__web=(PP_HEAD + extra).encode())) == []


def test_overflow_affinities_and_sub_groups_are_accepted() -> None:
    text = PP_HEAD.replace(
        "    clusterAffinity:\n      clusterNames: [prod, staging]\n",
        "    clusterAffinities:\n      - affinityName: main\n        clusterNames: [prod]\n"
        "        overflowAffinities:\n          - affinityName: spill\n"
        "            clusterNames: [staging]\n")
    assert problems_of(fleet_with(policies__web=text.encode())) == []
    sub = SUBSCRIPTION.replace("    - clusterAffinity: {matchLabels: {env: prod}}\n",
                               "    - clusterAffinity: {matchLabels: {env: prod}}\n"
                               "      subGroupStrategy: {minClusters: 1}\n")
    sub += "  schedulingBySubGroup: true\n"
    assert problems_of({**CLUSTERS, "templates/web.yaml": DEPLOYMENT,
                        "policies/web.yaml": sub.encode()}) == []


@pytest.mark.parametrize(("path", "text", "served"), [
    ("policies/web.yaml", PP_HEAD.replace("policy.karmada.io/v1alpha1", "policy.karmada.io/v1"),
     "policy.karmada.io/v1alpha1"),
    ("policies/web.yaml", SUBSCRIPTION.replace("/v1alpha1", "/v1beta1"),
     "apps.clusternet.io/v1alpha1"),
    ("clusters/prod.yaml", CLUSTERS["clusters/prod.yaml"].decode().replace("v1beta1", "v1"),
     "clusters.clusternet.io/v1beta1"),
    ("templates/chart.yaml", "apiVersion: apps.clusternet.io/v1\nkind: HelmChart\nmetadata:\n"
     "  name: c\n  namespace: web\nspec: {repo: 'https://x', chart: c}\n",
     "apps.clusternet.io/v1alpha1"),
])
def test_wrong_api_version_of_a_known_kind_names_the_served_one(path: str, text: str,
                                                                 served: str) -> None:
    files = {**fleet_with(), path: text.encode()}
    p = only([p for p in problems_of(files) if p.path == path])
    assert f"read at apiVersion {served}, not " in p.message


def test_missing_field_points_at_the_mapping_that_lacks_it() -> None:
    text = PP_HEAD.replace("  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment"
                           "\n      name: web\n", "")
    p = only(problems_of(fleet_with(policies__web=("---\n" + text).encode())))
    assert (p.line, p.message) == (7, "spec: 'resourceSelectors' is a required property")


@pytest.mark.parametrize(("kind", "name", "reserved"), [
    ("ConfigMap", "gitfleet-inventory", True),
    ("Secret", "gitfleet-anything", True),
    ("Lease", "gitfleet-agent", True),
    ("ConfigMap", "settings", False),
    ("Deployment", "gitfleet-agent", False),
])
def test_template_of_an_agent_record_is_an_error_naming_it(kind: str, name: str,
                                                           reserved: bool) -> None:
    api = "apps/v1" if kind == "Deployment" else "coordination.k8s.io/v1" \
        if kind == "Lease" else "v1"
    text = (f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  namespace: gitfleet-system\n"
            f"  name: {name}\n")
    found = [p for p in problems_of(fleet_with(templates__own=text.encode()))
             if p.path == "templates/own.yaml"]
    if not reserved:
        assert not any("agent's own record" in p.message for p in found)
        return
    p = only(found)
    assert p.line == 5
    assert p.message.startswith(f"gitfleet-system/{name} is the agent's own record")


# Free-form by design: an override's value and a chart's values are data, not fields.
OPEN_BY_DESIGN = {"spec.overrides.*.value", "spec.values"}


@pytest.mark.parametrize("kind", sorted(schema.UPSTREAM_KINDS))
def test_every_object_the_schema_describes_is_closed(kind: str) -> None:
    """additionalProperties false at every level (metadata stays open as Kubernetes allows),
    so a new loose object cannot slip in and silently accept typos again."""
    loose: list[str] = []

    def visit(node: Any, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict) or node.get(schema.MARK) == "unsupported" or \
                path == ("metadata",):
            return
        while "$ref" in node:
            node = schema._defs()[node["$ref"].rsplit("/", 1)[-1]]
        types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        extra = node.get("additionalProperties")
        if "properties" in node:
            if extra is not False:
                loose.append(".".join(path))
            for name, sub in node["properties"].items():
                visit(sub, (*path, name))
        elif "object" in types and not isinstance(extra, dict | bool):
            loose.append(".".join(path))
        elif isinstance(extra, dict):
            visit(extra, (*path, "<key>"))
        if isinstance(node.get("items"), dict):
            visit(node["items"], (*path, "*"))

    visit(schema._schema(kind), ())
    assert set(loose) <= OPEN_BY_DESIGN, loose


def test_metadata_takes_the_fields_of_object_meta_and_open_label_maps() -> None:
    typo = PROPAGATION.replace(b"  namespace: web\n", b"  namespace: web\n  lables: {a: b}\n", 1)
    p = only(problems_of(fleet_with(policies__web=typo)))
    assert (p.line, p.message) == (6, "`metadata.lables` is not a field of PropagationPolicy; "
                                      "did you mean `labels`?")
    exported = PROPAGATION.replace(b"  namespace: web\n", b"  namespace: web\n  uid: x\n"
                                   b"  creationTimestamp: null\n  labels: {any-key/x: v}\n", 1)
    assert problems_of(fleet_with(policies__web=exported)) == []


@pytest.mark.parametrize(("api", "kind", "message"), [
    ("policy.karmada.io/v1alpha1", "PropagationPolicies",
     "policy.karmada.io has no kind PropagationPolicies that gitfleet reads; did you mean "
     "`PropagationPolicy`?"),
    ("apps.clusternet.io/v1alpha1", "Subscripton", "did you mean `Subscription`?"),
    ("policy.karmada.io/v1alpha1", "FederatedResourceQuota",
     "(it reads ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, "
     "PropagationPolicy)"),
])
def test_unknown_kind_of_an_upstream_group_is_an_error_not_a_template(api: str, kind: str,
                                                                       message: str) -> None:
    text = f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: x\n  namespace: web\n"
    for path in ("templates/x.yaml", "policies/x.yaml"):
        p = only([p for p in problems_of({**fleet_with(), path: text.encode()})
                  if p.path == path])
        assert message in p.message, p.format()
