"""Nothing silently placed or dropped: a template nothing delivers is a warning, and so is a
kind whose scope gitfleet had to guess (with how to state it)."""

from __future__ import annotations

from typing import Any

from gitfleet.render.core import render
from tests.render.conftest import cluster, configmap, feed, fleet_of, objects_in, subscription
from tests.render.test_karmada import pp

PROD = {"clusterAffinity": {"matchLabels": {"env": "prod"}}}


def rule(name: str, **meta: Any) -> dict[str, Any]:
    """A NodeFeatureRule as Clusternet's nfd example ships it: no namespace (it is
    cluster-scoped upstream, but the fleet has no CRD saying so)."""
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": name, **meta}, "spec": {"rules": [{"name": "r"}]}}


CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "nodefeaturerules.nfd.k8s-sigs.io"},
       "spec": {"group": "nfd.k8s-sigs.io", "scope": "Cluster",
                "names": {"kind": "NodeFeatureRule", "plural": "nodefeaturerules",
                          "singular": "nodefeaturerule", "listKind": "NodeFeatureRuleList"},
                "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {
                                  "type": "object",
                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


def feeds_rule(namespace: str = "") -> tuple[str, dict[str, Any]]:
    return ("policies/s.yaml", subscription(
        "s", [feed("NodeFeatureRule", "r", api_version="nfd.k8s-sigs.io/v1alpha1",
                   namespace=namespace)], [PROD]))


def test_a_template_nothing_delivers_is_a_warning_naming_its_file() -> None:
    result = render(fleet_of(
        cluster("a", {"env": "prod"}),
        ("templates/app.yaml", configmap("fed")),
        ("templates/import.yaml", configmap("forgotten")),
        ("templates/karmada.yaml", configmap("claimed", namespace="team")),
        ("policies/s.yaml", subscription("s", [feed("ConfigMap", "fed")], [PROD])),
        ("policies/p.yaml", pp("p", [{"apiVersion": "v1", "kind": "ConfigMap"}],
                               namespace="team"))))
    assert list(result.errors) == []
    assert [(w.path, w.obj, w.message) for w in result.warnings] == [
        ("templates/import.yaml", "ConfigMap/apps/forgotten",
         "not delivered to any cluster: no Subscription feeds and no propagation policy "
         "selects ConfigMap/apps/forgotten")]
    assert "ConfigMap/apps/fed" in objects_in(result, "a")


def test_a_fed_template_whose_subscription_matches_no_cluster_is_warned_once() -> None:
    result = render(fleet_of(cluster("a", {"env": "dev"}),
                             ("templates/app.yaml", configmap("fed")),
                             ("policies/s.yaml", subscription("s", [feed("ConfigMap", "fed")],
                                                              [PROD]))))
    messages = [w.message for w in result.warnings]
    assert not any("not delivered" in m for m in messages)
    assert any("no cluster matches the subscribers" in m for m in messages)


def test_a_crd_is_not_warned_as_undelivered() -> None:
    result = render(fleet_of(cluster("a", {"env": "prod"}), ("templates/crd.yaml", CRD),
                             ("templates/rule.yaml", rule("r")), feeds_rule()))
    assert list(result.errors) == [] and list(result.warnings) == []


def test_a_kind_of_unknown_scope_is_a_warning_saying_how_to_state_it() -> None:
    fleet = fleet_of(cluster("a", {"env": "prod"}), ("templates/rule.yaml", rule("r")),
                     ("templates/more.yaml", rule("r2")), feeds_rule("default"))
    [warning] = [w for w in fleet.warnings if "scope" in w.message]
    assert warning.path == "templates/more.yaml" or warning.path == "templates/rule.yaml"
    assert "the scope of NodeFeatureRule (nfd.k8s-sigs.io) is unknown" in warning.message
    assert "delivered in namespace default (and 1 more NodeFeatureRule templates)" in \
        warning.message
    assert "add its CRD under templates/, or annotate the template gitfleet.io/scope: " \
        "Cluster" in warning.message
    result = render(fleet)
    assert list(result.errors) == []
    assert "NodeFeatureRule/default/r" in objects_in(result, "a")


def test_a_crd_or_the_scope_annotation_states_it() -> None:
    with_crd = fleet_of(cluster("a", {"env": "prod"}), ("templates/crd.yaml", CRD),
                        ("templates/rule.yaml", rule("r")), feeds_rule())
    assert with_crd.warnings == () and with_crd.errors == ()
    annotated = fleet_of(cluster("a", {"env": "prod"}), feeds_rule(),
                         ("templates/rule.yaml", rule(
                             "r", annotations={"gitfleet.io/scope": "Cluster"})))
    assert annotated.warnings == () and annotated.errors == ()
    result = render(annotated)
    assert list(result.warnings) == []
    assert "NodeFeatureRule//r" in objects_in(result, "a")
    namespaced = fleet_of(cluster("a", {"env": "prod"}), (
        "templates/rule.yaml", rule("r", namespace="nfd",
                                    annotations={"gitfleet.io/scope": "Namespaced"})))
    assert namespaced.warnings == () and namespaced.errors == ()
    assert {t.namespace for t in namespaced.templates.values()} == {"nfd"}


def test_a_wrong_scope_annotation_is_an_error() -> None:
    bad = fleet_of(("templates/rule.yaml", rule("r", annotations={"gitfleet.io/scope": "Global"})))
    assert ["gitfleet.io/scope is 'Global'; it is Cluster or Namespaced" in p.message
            for p in bad.errors] == [True]
    contradicts = fleet_of(("templates/cm.yaml", {
        **configmap("c"), "metadata": {"name": "c", "annotations": {
            "gitfleet.io/scope": "Cluster"}}}))
    assert [p.message for p in contradicts.errors] == [
        "metadata.annotations: gitfleet.io/scope: Cluster contradicts the kind, which is "
        "Namespaced"]


def test_a_helmchart_without_namespace_is_no_guess() -> None:
    chart = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart",
             "metadata": {"name": "db"},
             "spec": {"repo": "https://charts.example.com", "chart": "db", "version": "1.0.0",
                      "targetNamespace": "db"}}
    fleet = fleet_of(("templates/db.yaml", chart))
    assert fleet.warnings == () and fleet.errors == ()
    assert {t.namespace for t in fleet.templates.values()} == {"default"}
