"""SEMANTICS.md "Strictness": a selector that matches no cluster is a warning naming it, with
the closest cluster name or label when there is one."""

from __future__ import annotations

from typing import Any

from gitfleet.model.loader import load_fleet
from tests.render.conftest import (
    cluster,
    configmap,
    doc,
    feed,
    override_set,
    run,
    subscription,
)

KP = "policy.karmada.io/v1alpha1"
CLUSTERS = [cluster("eu-prod", {"env": "prod", "region": "eu"}),
            cluster("us-prod", {"env": "prod", "region": "us"})]
TEMPLATE = ("templates/c.yaml", configmap("conf", v="1"))


def warnings(*entries: Any) -> list[str]:
    return [w.format() for w in run(*CLUSTERS, TEMPLATE, *entries).warnings]


def pp(placement: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": KP, "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "apps"},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
                     "placement": placement}}


def test_a_karmada_cluster_name_that_is_no_cluster_names_the_closest():
    found = warnings(("policies/p.yaml", pp({"clusterAffinity": {
        "clusterNames": ["eu-prd", "us-prod"], "exclude": ["zz-top"]}})))
    assert ("policies/p.yaml:1: PropagationPolicy/apps/p: placement.clusterAffinity."
            "clusterNames: no cluster `eu-prd`; did you mean `eu-prod`?") in found
    assert ("policies/p.yaml:1: PropagationPolicy/apps/p: placement.clusterAffinity."
            "exclude: no cluster `zz-top`") in found


def test_a_fallback_affinity_term_naming_no_cluster_is_warned():
    found = warnings(("policies/p.yaml", pp({"clusterAffinities": [
        {"affinityName": "a", "labelSelector": {"matchLabels": {"env": "prd"}}},
        {"affinityName": "b", "clusterNames": ["us-prod"]}]})))
    assert any("placement.clusterAffinities[0] matches no cluster; no cluster has label "
               "`env=prd` (did you mean `env=prod`?)" in w for w in found)
    assert not any("clusterAffinities[1]" in w for w in found)


def test_a_subscriber_that_matches_no_cluster_is_warned_with_the_closest_label():
    found = warnings(("policies/s.yaml", subscription("s", [feed("ConfigMap", "conf")], [
        {"clusterAffinity": {"matchLabels": {"env": "prod"}}},
        {"clusterAffinity": {"matchLabels": {"region": "uss"}}}])))
    assert ("policies/s.yaml:1: Subscription/apps/s: subscribers[1].clusterAffinity matches "
            "no cluster; no cluster has label `region=uss` (did you mean `region=us`?)") in found
    assert not any("subscribers[0]" in w for w in found)


def test_override_targets_that_match_no_cluster_are_warned():
    glob = override_set("Globalization", "g", feed("ConfigMap", "conf", namespace="apps"), [],
                        affinity={"matchExpressions": [
                            {"key": "tier", "operator": "Exists"}]})
    rule = {"targetCluster": {"clusterNames": ["us-prdo"]}, "overriders": {}}
    op = {"apiVersion": KP, "kind": "ClusterOverridePolicy", "metadata": {"name": "o"},
          "spec": {"overrideRules": [rule]}}
    found = warnings(("policies/g.yaml", glob), ("policies/o.yaml", op))
    assert "policies/g.yaml:1: Globalization/g: clusterAffinity matches no cluster" in found
    assert ("policies/o.yaml:1: ClusterOverridePolicy/o: overrideRules[0].targetCluster."
            "clusterNames: no cluster `us-prdo`; did you mean `us-prod`?") in found


def test_a_localization_outside_every_dedicated_namespace_names_the_closest():
    loc = override_set("Localization", "l", feed("ConfigMap", "conf", namespace="apps"), [],
                       namespace="gitfleet-eu-prd")
    files = {**dict(CLUSTERS), "policies/l.yaml": doc(loc)}
    (warning,) = [w.message for w in load_fleet(files).warnings]
    assert "'gitfleet-eu-prd' is no cluster's dedicated namespace (did you mean " \
        "`gitfleet-eu-prod`?)" in warning


def test_selectors_that_match_give_no_warning_nor_does_a_fleet_without_clusters():
    entries = [("policies/p.yaml", pp({"clusterAffinity": {"clusterNames": ["eu-prod"]}})),
               ("policies/s.yaml", subscription("s", [feed("ConfigMap", "conf")], [
                   {"clusterAffinity": {"matchLabels": {"env": "prod"}}}]))]
    assert warnings(*entries) == []
    assert not [w for w in run(TEMPLATE, *entries).warnings if "no cluster `" in w.message]
