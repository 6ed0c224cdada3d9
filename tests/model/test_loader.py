"""The loader's rules: where objects may live, how namespaces default, what a cluster file must be,
and which files are part of the fleet at all."""

from __future__ import annotations

from typing import Any

import yaml

from gitfleet.model.loader import Fleet, load_fleet, relevant
from gitfleet.model.objects import ObjectKey
from gitfleet.render.core import render

APPS = "apps.clusternet.io/v1alpha1"


def doc(*objs: dict[str, Any]) -> bytes:
    return yaml.safe_dump_all(objs, sort_keys=False).encode()


def obj(api_version: str, kind: str, name: str, namespace: str | None = None,
        **rest: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


def cluster(name: str, labels: dict[str, str] | None = None,
            namespace: str | None = None) -> dict[str, Any]:
    body = obj("clusters.clusternet.io/v1beta1", "ManagedCluster", name, namespace,
               spec={"clusterId": f"id-{name}"})
    body["metadata"]["labels"] = labels or {}
    return body


def keys(fleet: Fleet) -> set[str]:
    return {str(k) for k in fleet.templates}


def messages(fleet: Fleet) -> list[str]:
    return [p.format() for p in fleet.errors]


# --- namespaces ----------------------------------------------------------------------------

def test_namespaced_template_without_namespace_goes_to_default() -> None:
    fleet = load_fleet({"templates/cm.yaml": doc(obj("v1", "ConfigMap", "settings"))})
    assert keys(fleet) == {"ConfigMap/default/settings"}
    assert fleet.errors == ()


def test_cluster_scoped_kinds_lose_their_namespace() -> None:
    fleet = load_fleet({"templates/cluster.yaml": doc(
        obj("v1", "Namespace", "team", namespace="ignored"),
        obj("rbac.authorization.k8s.io/v1", "ClusterRole", "reader", namespace="x"),
        obj("storage.k8s.io/v1", "StorageClass", "fast"))})
    assert keys(fleet) == {"Namespace/team", "ClusterRole/reader", "StorageClass/fast"}
    assert fleet.errors == ()


def test_rendered_objects_carry_the_namespace_the_loader_settled_on() -> None:
    files = {
        "clusters/one.yaml": doc(cluster("one")),
        "templates/t.yaml": doc(obj("v1", "ConfigMap", "settings"),
                                obj("v1", "Namespace", "team", namespace="ignored")),
        "policies/s.yaml": doc(obj(APPS, "Subscription", "s", spec={
            "subscribers": [{"clusterAffinity": {}}],
            "feeds": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "settings"},
                      {"apiVersion": "v1", "kind": "Namespace", "name": "team"}]})),
    }
    result = render(load_fleet(files))
    assert result.errors == []
    cm = yaml.safe_load(result.files["clusters/one/default/s/core_ConfigMap_default_settings.yaml"])
    ns = yaml.safe_load(result.files["clusters/one/default/s/core_Namespace__team.yaml"])
    assert cm["metadata"]["namespace"] == "default"
    assert "namespace" not in ns["metadata"]


def test_crd_in_the_fleet_declares_the_scope_of_its_kind() -> None:
    def crd(kind: str, scope: str) -> dict[str, Any]:
        return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                   f"{kind.lower()}s.example.com",
                   spec={"group": "example.com", "scope": scope,
                         "names": {"kind": kind, "plural": f"{kind.lower()}s"},
                         "versions": [{"name": "v1", "served": True, "storage": True}]})

    fleet = load_fleet({
        "templates/crds.yaml": doc(crd("Widget", "Cluster"), crd("Gadget", "Namespaced")),
        "templates/objs.yaml": doc(obj("example.com/v1", "Widget", "w", namespace="apps"),
                                   obj("example.com/v1", "Gadget", "g"),
                                   obj("other.io/v1", "Widget", "u")),
    })
    assert keys(fleet) >= {"Widget/w", "Gadget/default/g", "Widget/default/u"}
    # The CRD itself is cluster-scoped.
    assert "CustomResourceDefinition/widgets.example.com" in keys(fleet)


def test_same_object_with_and_without_default_namespace_is_a_duplicate() -> None:
    fleet = load_fleet({"templates/a.yaml": doc(obj("v1", "ConfigMap", "c")),
                        "templates/b.yaml": doc(obj("v1", "ConfigMap", "c", namespace="default"))})
    assert len(fleet.errors) == 1
    assert "duplicate object" in fleet.errors[0].message
    assert keys(fleet) == {"ConfigMap/default/c"}


def test_policies_default_to_namespace_default_and_cluster_scoped_ones_have_none() -> None:
    fleet = load_fleet({"policies/p.yaml": doc(
        obj(APPS, "Subscription", "s", spec={"subscribers": [{"clusterAffinity": {}}],
                                             "feeds": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                        "name": "c"}]}),
        obj(APPS, "Globalization", "g", namespace="qux", spec={
            "feed": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}}),
        obj("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy", "cpp", namespace="x",
            spec={"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}]}))})
    assert fleet.errors == ()
    assert [(s.namespace, s.name) for s in fleet.subscriptions] == [("default", "s")]
    assert [(g.namespace, g.name) for g in fleet.globalizations] == [("", "g")]
    assert [(p.namespace, p.name) for p in fleet.propagations] == [("", "cpp")]


# --- clusters ------------------------------------------------------------------------------

def test_cluster_dedicated_namespace_defaults_to_gitfleet_name() -> None:
    fleet = load_fleet({"clusters/a.yaml": doc(cluster("a")),
                        "clusters/b.yaml": doc(cluster("b", namespace="clusternet-5l82l"))})
    assert {n: c.namespace for n, c in fleet.clusters.items()} == {
        "a": "gitfleet-a", "b": "clusternet-5l82l"}
    assert fleet.cluster_for_namespace("clusternet-5l82l") is fleet.clusters["b"]
    assert fleet.cluster_for_namespace("gitfleet-b") is None


def test_managed_cluster_file_must_be_named_after_the_cluster() -> None:
    fleet = load_fleet({"clusters/north.yaml": doc(cluster("south"))})
    assert fleet.clusters == {}
    assert messages(fleet) == ["clusters/north.yaml:1: ManagedCluster/south: the file must be "
                               "named after the cluster: clusters/south.yaml"]


def test_one_managed_cluster_per_file_and_nothing_else_under_clusters() -> None:
    fleet = load_fleet({"clusters/a.yaml": doc(cluster("a"), cluster("b")),
                        "clusters/cm.yaml": doc(obj("v1", "ConfigMap", "cm"))})
    assert list(fleet.clusters) == ["a"]
    assert any("one ManagedCluster per file" in m for m in messages(fleet))
    assert any(m.startswith("clusters/cm.yaml:1: ConfigMap/cm: clusters/ holds only "
                            "ManagedCluster") for m in messages(fleet))


def test_cluster_fields_are_read() -> None:
    body = cluster("edge", {"env": "edge"})
    body["spec"] = {"clusterId": "u-1", "syncMode": "Dual", "clusterType": "EdgeCluster",
                    "provider": "aws", "region": "eu-west-1", "zone": "eu-west-1a",
                    "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}
    c = load_fleet({"clusters/edge.yaml": doc(body)}).clusters["edge"]
    assert (c.cluster_id, c.sync_mode, c.cluster_type, c.provider, c.region, c.zone) == (
        "u-1", "Dual", "EdgeCluster", "aws", "eu-west-1", "eu-west-1a")
    assert [(t.key, t.value, t.effect) for t in c.taints] == [("gpu", "yes", "NoSchedule")]
    assert c.labels == {"env": "edge", "clusters.clusternet.io/cluster-id": "u-1",
                        "clusters.clusternet.io/cluster-name": "edge"}


def test_broken_cluster_file_is_recorded_by_name() -> None:
    fleet = load_fleet({"clusters/a.yaml": b"metadata: [\n", "clusters/b.yaml": doc(cluster("b"))})
    assert fleet.broken_clusters == frozenset({"a"})
    assert list(fleet.clusters) == ["b"]


# --- Localizations -------------------------------------------------------------------------

def test_localization_namespace_picks_its_cluster() -> None:
    files = {
        "clusters/a.yaml": doc(cluster("a", {"env": "prod"}, namespace="clusternet-aaaaa")),
        "clusters/b.yaml": doc(cluster("b", {"env": "prod"})),
        "templates/cm.yaml": doc(obj("v1", "ConfigMap", "c", namespace="apps",
                                     data={"k": "v"})),
        "policies/s.yaml": doc(obj(APPS, "Subscription", "s", namespace="apps", spec={
            "subscribers": [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}],
            "feeds": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}]})),
        "policies/l.yaml": doc(obj(APPS, "Localization", "l", namespace="clusternet-aaaaa", spec={
            "feed": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "apps"},
            "overrides": [{"name": "k", "type": "MergePatch", "value": '{"data":{"k":"a"}}'}]})),
    }
    fleet = load_fleet(files)
    assert fleet.errors == () and fleet.warnings == ()
    [loc] = fleet.localizations
    assert loc.namespace == "clusternet-aaaaa"
    result = render(fleet)
    data = {c: yaml.safe_load(result.files[f"clusters/{c}/apps/s/core_ConfigMap_apps_c.yaml"])
            ["data"]["k"] for c in ("a", "b")}
    assert data == {"a": "a", "b": "v"}


def test_localization_in_no_cluster_namespace_is_a_warning() -> None:
    fleet = load_fleet({"policies/l.yaml": doc(obj(APPS, "Localization", "l", namespace="ghost",
                                                   spec={"feed": {"apiVersion": "v1",
                                                                  "kind": "ConfigMap",
                                                                  "name": "c"}}))})
    assert fleet.errors == ()
    [w] = fleet.warnings
    assert (w.path, w.line, w.obj) == ("policies/l.yaml", 1, "Localization/ghost/l")
    assert "no cluster's dedicated namespace" in w.message


def test_field_patch_without_field_path_is_an_error() -> None:
    fleet = load_fleet({"policies/g.yaml": doc(obj(APPS, "Globalization", "g", spec={
        "feed": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"},
        "overrides": [{"name": "f", "type": "FieldMergePatch", "value": "{}"}]}))})
    assert fleet.globalizations == ()
    assert any("spec.overrides[0]: FieldMergePatch needs fieldPath" in m for m in messages(fleet))


# --- where things may live -----------------------------------------------------------------

def test_policy_kinds_are_accepted_under_templates_next_to_their_template() -> None:
    fleet = load_fleet({"templates/mixed.yaml": doc(
        obj("v1", "ConfigMap", "c", namespace="qux"),
        obj(APPS, "Globalization", "g", spec={"feed": {"apiVersion": "v1", "kind": "ConfigMap",
                                                       "name": "c", "namespace": "qux"}}))})
    assert fleet.errors == ()
    assert keys(fleet) == {"ConfigMap/qux/c"}
    assert [g.name for g in fleet.globalizations] == ["g"]


def test_gitfleet_kinds_and_managed_clusters_do_not_belong_under_templates() -> None:
    fleet = load_fleet({"templates/x.yaml": doc(
        obj("gitfleet.io/v1alpha1", "Description", "d", namespace="x"),
        cluster("c"))})
    assert fleet.templates == {} and fleet.clusters == {}
    assert len(fleet.errors) == 2
    assert all("does not belong under templates/" in e.message for e in fleet.errors)


def test_only_fleet_files_are_read() -> None:
    assert relevant("fleet.yaml") and relevant("templates/a/b.yml")
    assert relevant("policies/p.yaml") and relevant("clusters/c.yaml")
    for path in ("README.md", "templates/notes.txt", "docs/x.yaml", "fleet.yml",
                 "other/templates/a.yaml"):
        assert not relevant(path)
    fleet = load_fleet({"README.md": b"{{ not yaml", "docs/x.yaml": b"[",
                        "templates/notes.txt": b"\xff",
                        "templates/cm.yaml": doc(obj("v1", "ConfigMap", "c"))})
    assert fleet.errors == () and keys(fleet) == {"ConfigMap/default/c"}


def test_empty_documents_are_skipped_and_lines_are_counted_per_document() -> None:
    text = (b"# a comment only\n---\n---\n"
            + doc(obj("v1", "ConfigMap", "one")) + b"---\n"
            + doc(obj("v1", "ConfigMap", "two")))
    fleet = load_fleet({"templates/cms.yaml": text})
    assert fleet.errors == ()
    lines = {t.name: t.origin.line for t in fleet.templates.values()}
    assert lines == {"one": 4, "two": 4 + doc(obj("v1", "ConfigMap", "one")).count(b"\n") + 1}
    assert fleet.templates[ObjectKey("", "ConfigMap", "default", "two")].origin.path == \
        "templates/cms.yaml"


def test_a_bad_document_does_not_take_its_neighbours_down() -> None:
    fleet = load_fleet({"templates/cms.yaml": doc(
        obj("v1", "ConfigMap", "good"), {"kind": "ConfigMap", "metadata": {"name": "x"}},
        obj("v1", "ConfigMap", "also-good"))})
    assert keys(fleet) == {"ConfigMap/default/good", "ConfigMap/default/also-good"}
    assert messages(fleet) == ["templates/cms.yaml:6: apiVersion is missing or not a string"]
    assert "templates/cms.yaml" in fleet.broken_paths


def test_replica_counts_must_be_whole_numbers_where_division_reads_them() -> None:
    def workload(kind: str, name: str, spec: Any, annotations: dict[str, str] | None = None
                 ) -> dict[str, Any]:
        body = obj("apps/v1" if kind != "Widget" else "example.com/v1", kind, name, "apps",
                   spec=spec)
        if annotations:
            body["metadata"]["annotations"] = annotations
        return body

    size = {"gitfleet.io/replicas-path": "/spec/size"}
    fleet = load_fleet({"templates/w.yaml": doc(
        workload("Deployment", "zero", {"replicas": 0}),
        workload("StatefulSet", "unset", {"serviceName": "s"}),
        workload("Widget", "sized", {"size": 3}, size),
        workload("ReplicaSet", "yes", {"replicas": True}),
        workload("Deployment", "minus", {"replicas": -2}),
        workload("Widget", "big", {"size": "big"}, size),
        workload("Widget", "listed", ["size"], size))})
    assert {k.name for k in fleet.templates} == {"zero", "unset", "sized"}
    assert [(e.obj, e.message) for e in fleet.errors] == [
        ("ReplicaSet/apps/yes", "/spec/replicas must be a whole number >= 0, not True"),
        ("Deployment/apps/minus", "/spec/replicas must be a whole number >= 0, not -2"),
        ("Widget/apps/big", "/spec/size must be a whole number >= 0, not 'big'"),
        ("Widget/apps/listed", "/spec is not a mapping, so /spec/size cannot hold the replica "
                               "count")]
