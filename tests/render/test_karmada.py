"""SEMANTICS.md, "Propagation (Karmada)" and "Overrides (Karmada)": one test per rule."""

from __future__ import annotations

from typing import Any

from gitfleet.render.core import render
from gitfleet.render.status import ClusterCapacity, StatusSnapshot
from tests.render.conftest import (
    cluster,
    configmap,
    deployment,
    fleet_of,
    load,
    objects_in,
    replicas,
    run,
)

KP = "policy.karmada.io/v1alpha1"


def pp(name: str, selectors: list[dict[str, Any]], placement: dict[str, Any] | None = None, *,
       namespace: str = "apps", cluster_scoped: bool = False, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if not cluster_scoped:
        meta["namespace"] = namespace
    return {"apiVersion": KP,
            "kind": "ClusterPropagationPolicy" if cluster_scoped else "PropagationPolicy",
            "metadata": meta,
            "spec": {"resourceSelectors": selectors, "placement": placement or {}, **spec}}


def op(name: str, rules: list[dict[str, Any]], selectors: list[dict[str, Any]] | None = None, *,
       namespace: str = "apps", cluster_scoped: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if not cluster_scoped:
        meta["namespace"] = namespace
    return {"apiVersion": KP,
            "kind": "ClusterOverridePolicy" if cluster_scoped else "OverridePolicy",
            "metadata": meta, "spec": {"resourceSelectors": selectors or [],
                                       "overrideRules": rules}}


DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
CLUSTERS = [cluster("m1", {"env": "prod"}, provider="aws", region="eu", zone="eu-1"),
            cluster("m2", {"env": "prod"}, provider="gcp", region="us", zone="us-1"),
            cluster("m3", {"env": "dev"}, provider="aws", region="us", zone="us-2")]


def _run(*policies: dict[str, Any], template: dict[str, Any] | None = None, **kw: Any):
    entries = [*CLUSTERS, ("templates/d.yaml", template or deployment("web", replicas=6))]
    entries += [(f"policies/p{i}.yaml", p) for i, p in enumerate(policies)]
    return run(*entries, **kw)


def holders(result, name: str = "web") -> dict[str, int | None]:
    return {c: replicas(result, c, name) for c in ("m1", "m2", "m3")
            if replicas(result, c, name) is not None}


def test_absent_replica_scheduling_duplicates_everywhere_selected():
    result = _run(pp("p", [DEPLOY]))
    assert holders(result) == {"m1": 6, "m2": 6, "m3": 6}


def test_cluster_affinity_criteria_must_all_hold_and_exclude_wins():
    result = _run(pp("p", [DEPLOY], {"clusterAffinity": {
        "clusterNames": ["m1", "m2", "m3"], "exclude": ["m2"],
        "labelSelector": {"matchLabels": {"env": "prod"}}}}))
    assert holders(result) == {"m1": 6}


def test_field_selector_matches_provider_region_zone():
    result = _run(pp("p", [DEPLOY], {"clusterAffinity": {"fieldSelector": {"matchExpressions": [
        {"key": "provider", "operator": "In", "values": ["aws"]},
        {"key": "region", "operator": "NotIn", "values": ["eu"]}]}}}))
    assert holders(result) == {"m3": 6}


def test_cluster_affinities_fall_back_only_when_the_current_term_selects_nothing():
    result = _run(pp("p", [DEPLOY], {"clusterAffinities": [
        {"affinityName": "primary", "clusterNames": ["nowhere"]},
        {"affinityName": "backup", "labelSelector": {"matchLabels": {"env": "dev"}}},
        {"affinityName": "last", "clusterNames": ["m1"]}]}))
    assert holders(result) == {"m3": 6}


def test_taints_need_tolerations():
    tainted = [cluster("m1", {"env": "prod"}, taints=[{"key": "k", "value": "v",
                                                        "effect": "NoExecute"}]),
               ("templates/d.yaml", deployment("web"))]
    without = run(*tainted, ("policies/p.yaml", pp("p", [DEPLOY])))
    with_t = run(*tainted, ("policies/p.yaml", pp("p", [DEPLOY], {"clusterTolerations": [
        {"key": "k", "operator": "Exists"}]})))
    assert replicas(without, "m1", "web") is None and replicas(with_t, "m1", "web") == 6


def test_divided_weighted_uses_the_max_of_matching_rules_and_drops_zero_weights():
    result = _run(pp("p", [DEPLOY], {"replicaScheduling": {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": [
            {"targetCluster": {"labelSelector": {"matchLabels": {"env": "prod"}}}, "weight": 1},
            {"targetCluster": {"clusterNames": ["m1"]}, "weight": 2}]}}}))
    # m1 = max(1, 2) = 2, m2 = 1, m3 matches no rule: weight 0 -> excluded
    assert holders(result) == {"m1": 4, "m2": 2}


def test_divided_without_weights_gives_all_clusters_weight_one():
    result = _run(pp("p", [DEPLOY], {"replicaScheduling": {"replicaSchedulingType": "Divided"}}),
                  template=deployment("web", replicas=7))
    assert sorted(holders(result).values()) == [2, 2, 3]
    assert sum(holders(result).values()) == 7


def test_clusters_left_with_zero_replicas_are_dropped_but_non_workloads_go_everywhere():
    entries = [*CLUSTERS, ("templates/d.yaml", deployment("web", replicas=1)),
               ("templates/c.yaml", configmap("conf", v="1")),
               ("policies/p.yaml", pp("p", [DEPLOY, {"apiVersion": "v1", "kind": "ConfigMap"}],
                                      {"replicaScheduling": {"replicaSchedulingType": "Divided"}}))]
    result = run(*entries)
    assert len(holders(result)) == 1
    assert all("ConfigMap/apps/conf" in objects_in(result, c) for c in ("m1", "m2", "m3"))


def test_dynamic_weight_follows_available_replicas():
    status = StatusSnapshot(capacity={"m1": ClusterCapacity(allocatable={"cpu": "3"}),
                                      "m2": ClusterCapacity(allocatable={"cpu": "1"}),
                                      "m3": ClusterCapacity(allocatable={"cpu": "0"})})
    result = _run(pp("p", [DEPLOY], {"replicaScheduling": {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
        template=deployment("web", replicas=4, cpu="250m"), status=status)
    assert holders(result) == {"m1": 3, "m2": 1}


def test_aggregated_uses_the_fewest_clusters_that_hold_the_replicas():
    status = StatusSnapshot(capacity={"m1": ClusterCapacity(allocatable={"cpu": "2"}),
                                      "m2": ClusterCapacity(allocatable={"cpu": "10"}),
                                      "m3": ClusterCapacity(allocatable={"cpu": "1"})})
    result = _run(pp("p", [DEPLOY], {"replicaScheduling": {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}),
        template=deployment("web", replicas=6, cpu="1"), status=status)
    assert holders(result) == {"m2": 6}


def test_namespaced_policy_claims_before_cluster_policy_even_with_lower_priority():
    result = _run(pp("ns-pol", [DEPLOY], {"clusterAffinity": {"clusterNames": ["m1"]}}),
                  pp("cl-pol", [DEPLOY], {"clusterAffinity": {"clusterNames": ["m2"]}},
                     cluster_scoped=True, priority=100))
    assert holders(result) == {"m1": 6}
    assert "apps/Deployment/apps/web" in result.files["claims.yaml"].decode()


def test_priority_then_match_strength_then_name_decide_the_claim():
    by_label = {"apiVersion": "apps/v1", "kind": "Deployment",
                "labelSelector": {"matchLabels": {"app": "web"}}}
    everything = {"apiVersion": "apps/v1", "kind": "Deployment"}
    to = lambda c: {"clusterAffinity": {"clusterNames": [c]}}  # noqa: E731
    assert holders(_run(pp("a", [everything], to("m1"), priority=1),
                        pp("b", [DEPLOY], to("m2")))) == {"m1": 6}
    assert holders(_run(pp("a", [by_label], to("m1")), pp("b", [DEPLOY], to("m2")),
                        pp("c", [everything], to("m3")))) == {"m2": 6}
    assert holders(_run(pp("b", [by_label], to("m2")), pp("a", [by_label], to("m1")))) == \
        {"m1": 6}


def test_a_claim_is_sticky_while_the_claimer_still_selects_the_template():
    to = lambda c: {"clusterAffinity": {"clusterNames": [c]}}  # noqa: E731
    first = _run(pp("old", [DEPLOY], to("m1")))
    fleet = fleet_of(*CLUSTERS, ("templates/d.yaml", deployment("web", replicas=6)),
                     ("policies/p0.yaml", pp("old", [DEPLOY], to("m1"))),
                     ("policies/p1.yaml", pp("new", [DEPLOY], to("m2"), priority=50)))
    again = render(fleet, previous_files=first.files)
    assert holders(again) == {"m1": 6}
    fresh = render(fleet)
    assert holders(fresh) == {"m2": 6}


def test_cluster_propagation_policy_description_lives_under_cluster_scope_folder():
    result = _run(pp("everywhere", [DEPLOY], cluster_scoped=True))
    desc = load(result, "clusters/m1/_cluster/everywhere/description.yaml")
    assert desc["spec"]["source"]["kind"] == "ClusterPropagationPolicy"
    assert desc["spec"]["conflictResolution"] == "Abort"


def test_conflict_resolution_is_recorded():
    result = _run(pp("p", [DEPLOY], conflictResolution="Overwrite"))
    assert load(result, "clusters/m1/apps/p/description.yaml")["spec"][
        "conflictResolution"] == "Overwrite"


def test_template_without_namespace_goes_to_default_and_policy_namespace_defaults_too():
    d = deployment("web")
    del d["metadata"]["namespace"]
    p = pp("p", [DEPLOY])
    del p["metadata"]["namespace"]
    result = run(*CLUSTERS, ("templates/d.yaml", d), ("policies/p.yaml", p))
    assert replicas(result, "m1", "web", namespace="default") == 6


def test_spread_constraints_limit_groups_and_min_groups_is_an_error():
    two_regions = pp("p", [DEPLOY], {"spreadConstraints": [
        {"spreadByField": "region", "maxGroups": 1, "minGroups": 1}]})
    result = _run(two_regions)
    # no capacity reported: groups tie on room and go by name, "eu" before "us"
    assert holders(result) == {"m1": 6}
    too_many = _run(pp("p", [DEPLOY], {"spreadConstraints": [
        {"spreadByField": "zone", "minGroups": 5}]}))
    assert holders(too_many) == {} and "minGroups" in too_many.errors[0].message


# -- overrides -------------------------------------------------------------------------------

LABELS = lambda v: {"labelsOverrider": [{"operator": "add", "value": {"who": v}}]}  # noqa: E731


def test_override_rule_target_cluster_and_no_target_means_all():
    result = _run(pp("p", [DEPLOY]),
                  op("o", [{"targetCluster": {"clusterNames": ["m2"]}, "overriders": LABELS("m2")},
                           {"overriders": {"annotationsOverrider": [
                               {"operator": "add", "value": {"all": "yes"}}]}}]))
    objs = {c: objects_in(result, c)["Deployment/apps/web"]["metadata"] for c in ("m1", "m2")}
    assert objs["m2"]["labels"]["who"] == "m2" and "who" not in objs["m1"]["labels"]
    assert objs["m1"]["annotations"] == {"all": "yes"}


def test_cluster_policies_apply_before_namespaced_and_weaker_matches_before_stronger():
    result = _run(pp("p", [DEPLOY]),
                  op("z-ns-by-name", [{"overriders": LABELS("ns-name")}], [DEPLOY]),
                  op("a-ns-all", [{"overriders": LABELS("ns-all")}]),
                  op("cluster-by-name", [{"overriders": LABELS("cluster")}], [DEPLOY],
                     cluster_scoped=True))
    assert objects_in(result, "m1")["Deployment/apps/web"]["metadata"]["labels"]["who"] == \
        "ns-name"
    result = _run(pp("p", [DEPLOY]), op("a-ns-all", [{"overriders": LABELS("ns-all")}]),
                  op("cluster-by-name", [{"overriders": LABELS("cluster")}], [DEPLOY],
                     cluster_scoped=True))
    assert objects_in(result, "m1")["Deployment/apps/web"]["metadata"]["labels"]["who"] == \
        "ns-all"


def test_rules_apply_in_list_order():
    result = _run(pp("p", [DEPLOY]), op("o", [{"overriders": LABELS("first")},
                                              {"overriders": LABELS("second")}]))
    assert objects_in(result, "m1")["Deployment/apps/web"]["metadata"]["labels"]["who"] == \
        "second"


def test_karmada_overrides_apply_after_clusternet_ones():
    sub = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Subscription",
           "metadata": {"name": "s", "namespace": "apps"},
           "spec": {"subscribers": [{"clusterAffinity": {}}],
                    "feeds": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]}}
    glob = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Globalization",
            "metadata": {"name": "g"}, "spec": {"priority": 1000, "feed": {
                "apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "apps"},
                "overrides": [{"name": "l", "type": "MergePatch",
                               "value": '{"metadata": {"labels": {"who": "clusternet"}}}'}]}}
    result = _run(sub, glob, op("o", [{"overriders": LABELS("karmada")}]))
    assert objects_in(result, "m1")["Deployment/apps/web"]["metadata"]["labels"]["who"] == \
        "karmada"


def test_failing_plaintext_override_is_an_error_for_that_cluster_and_keeps_last_good():
    good = _run(pp("p", [DEPLOY]))
    bad_rule = {"targetCluster": {"clusterNames": ["m2"]}, "overriders": {"plaintext": [
        {"path": "/spec/nothing/here", "operator": "replace", "value": 1}]}}
    fleet = fleet_of(*CLUSTERS, ("templates/d.yaml", deployment("web", replicas=6)),
                     ("policies/p.yaml", pp("p", [DEPLOY])),
                     ("policies/o.yaml", op("o", [bad_rule])))
    result = render(fleet, previous_files=good.files)
    assert len(result.errors) == 1 and "(cluster m2)" in result.errors[0].message
    kept = load(result, "clusters/m2/apps/p/description.yaml")
    assert kept["spec"]["renderErrors"]
    assert result.files["clusters/m2/apps/p/apps_Deployment_apps_web.yaml"] == \
        good.files["clusters/m2/apps/p/apps_Deployment_apps_web.yaml"]
    assert "renderErrors: []" in result.files["clusters/m1/apps/p/description.yaml"].decode()
