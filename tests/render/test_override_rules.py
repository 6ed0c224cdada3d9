"""SEMANTICS.md "Overrides (Clusternet)" and "Overrides (Karmada)": namespace-changing overrides,
field patch failures, image references an override would break, the overrides a Description
lists, and trimming; each rule through a whole render."""

from __future__ import annotations

from typing import Any

from gitfleet.render.core import render
from tests.render.conftest import (
    cluster,
    configmap,
    deployment,
    feed,
    fleet_of,
    load,
    objects_in,
    override_set,
    run,
    subscription,
)

KP = "policy.karmada.io/v1alpha1"
CLUSTERS = [cluster("m1", {"env": "prod"}), cluster("m2", {"env": "dev"})]
EVERYWHERE = [{"clusterAffinity": {}}]


def op(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": KP, "kind": "OverridePolicy",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"resourceSelectors": [], "overrideRules": rules}}


def pp(name: str) -> dict[str, Any]:
    return {"apiVersion": KP, "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"},
                                           {"apiVersion": "v1", "kind": "ConfigMap"},
                                           {"apiVersion": "v1", "kind": "Service"}],
                     "placement": {}}}


def move_to(namespace: str) -> dict[str, Any]:
    return {"name": "move", "type": "MergePatch",
            "value": f'{{"metadata": {{"namespace": "{namespace}"}}}}'}


def test_an_override_may_move_an_object_to_another_namespace():
    result = run(*CLUSTERS, ("templates/c.yaml", configmap("conf", v="1")),
                 ("policies/ss.yaml", subscription("s", [feed("ConfigMap", "conf")], EVERYWHERE)),
                 ("policies/og.yaml", override_set(
                     "Localization", "to-edge", feed("ConfigMap", "conf", namespace="apps"),
                     [move_to("edge")], namespace="gitfleet-m1")))
    assert result.errors == []
    assert "ConfigMap/edge/conf" in objects_in(result, "m1")
    assert "ConfigMap/apps/conf" in objects_in(result, "m2")
    entry = load(result, "clusters/m1/apps/s/description.yaml")["spec"]["resources"][0]
    assert entry["namespace"] == "edge"


def test_an_object_moved_onto_one_already_delivered_is_an_error_of_the_later_claimer():
    result = run(*CLUSTERS, ("templates/a.yaml", configmap("conf", namespace="apps", v="a")),
                 ("templates/b.yaml", configmap("conf", namespace="edge", v="b")),
                 ("policies/sa.yaml", subscription("a", [feed("ConfigMap", "conf")], EVERYWHERE)),
                 ("policies/sb.yaml", subscription("b", [feed("ConfigMap", "conf")], EVERYWHERE,
                                              namespace="edge")),
                 ("policies/og.yaml", override_set(
                     "Globalization", "move", feed("ConfigMap", "conf", namespace="apps"),
                     [move_to("edge")])))
    assert len([e for e in result.errors if "already delivered" in e.message]) == 2
    for c in ("m1", "m2"):
        # apps/a sorts first and keeps it; edge/b is the later claimer
        assert objects_in(result, c)["ConfigMap/edge/conf"]["data"] == {"v": "a"}
        assert load(result, f"clusters/{c}/edge/b/description.yaml")["spec"]["resources"] == []


def test_a_namespace_on_a_cluster_scoped_object_is_an_error():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    result = run(*CLUSTERS, ("templates/ns.yaml", ns),
                 ("policies/ss.yaml", subscription("s", [feed("Namespace", "team")], EVERYWHERE)),
                 ("policies/og.yaml", override_set("Globalization", "g", feed("Namespace", "team"),
                                                   [move_to("x")])))
    assert result.errors and "cluster-scoped Namespace a namespace" in result.errors[0].message


def test_a_field_patch_on_a_missing_field_is_an_error_for_that_cluster_last_good_kept():
    entries = [*CLUSTERS, ("templates/c.yaml", configmap("conf", **{"app.json": '{"a": 1}'})),
               ("policies/ss.yaml", subscription("s", [feed("ConfigMap", "conf")], EVERYWHERE))]
    good = run(*entries)
    bad = {"name": "tune", "type": "FieldMergePatch", "fieldPath": "/data/other.json",
           "value": '{"a": 2}'}
    result = render(fleet_of(*entries, ("policies/ol.yaml", override_set(
        "Localization", "l", feed("ConfigMap", "conf", namespace="apps"), [bad],
        namespace="gitfleet-m2"))), previous_files=good.files)
    assert len(result.errors) == 1
    message = result.errors[0].message
    assert "'tune'" in message and "/data/other.json does not exist" in message
    assert "(cluster m2)" in message
    kept = load(result, "clusters/m2/apps/s/description.yaml")["spec"]
    assert kept["renderErrors"] and kept["resources"]
    assert load(result, "clusters/m1/apps/s/description.yaml")["spec"]["renderErrors"] == []


def test_an_image_override_that_breaks_the_reference_keeps_the_image_and_warns():
    breaking = {"targetCluster": {"clusterNames": ["m2"]}, "overriders": {"imageOverrider": [
        {"component": "Registry", "operator": "replace", "value": "mirror.example:https"}]}}
    fine = {"overriders": {"imageOverrider": [
        {"component": "Tag", "operator": "add", "value": "-rc1"}]}}
    result = run(*CLUSTERS, ("templates/d.yaml", deployment("web", image="nginx:1.25")),
                 ("policies/p.yaml", pp("p")), ("policies/o.yaml", op("o", [breaking, fine])))
    assert result.errors == []
    image = {c: objects_in(result, c)["Deployment/apps/web"]["spec"]["template"]["spec"][
        "containers"][0]["image"] for c in ("m1", "m2")}
    assert image == {"m1": "nginx:1.25-rc1", "m2": "nginx:1.25-rc1"}
    warned = [w.message for w in result.warnings if "image" in w.message]
    assert len(warned) == 1
    assert "OverridePolicy apps/o" in warned[0] and "(cluster m2)" in warned[0]
    assert "'mirror.example:https/nginx:1.25'" in warned[0] and "left unchanged" in warned[0]


def test_a_description_lists_only_the_override_policies_whose_rules_matched_its_cluster():
    only_m2 = {"targetCluster": {"clusterNames": ["m2"]}, "overriders": {"labelsOverrider": [
        {"operator": "add", "value": {"tier": "dev"}}]}}
    result = run(*CLUSTERS, ("templates/d.yaml", deployment("web")),
                 ("policies/p.yaml", pp("p")), ("policies/o.yaml", op("o", [only_m2])))
    listed = {c: [o["name"] for o in load(result, f"clusters/{c}/apps/p/description.yaml")[
        "spec"]["overrides"]] for c in ("m1", "m2")}
    assert listed == {"m1": [], "m2": ["o"]}


EXPORTED_SERVICE = {
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "web", "namespace": "apps", "uid": "1f0c", "resourceVersion": "812",
                 "creationTimestamp": "2025-01-02T03:04:05Z", "generation": 3,
                 "selfLink": "/api/v1/namespaces/apps/services/web",
                 "managedFields": [{"manager": "kubectl"}]},
    "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.12", "clusterIPs": ["10.0.0.12"],
             "healthCheckNodePort": 31999, "externalTrafficPolicy": "Local",
             "ports": [{"port": 80, "nodePort": 30080}], "selector": {"app": "web"}},
    "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}},
}


def test_an_exported_service_is_trimmed_but_keeps_its_node_ports_and_validate_warns():
    result = run(*CLUSTERS, ("templates/svc.yaml", EXPORTED_SERVICE),
                 ("policies/p.yaml", pp("p")))
    svc = objects_in(result, "m1")["Service/apps/web"]
    assert svc["metadata"] == {"name": "web", "namespace": "apps"}
    assert "status" not in svc and "clusterIP" not in svc["spec"]
    assert "clusterIPs" not in svc["spec"]
    assert svc["spec"]["ports"] == [{"port": 80, "nodePort": 30080}]
    assert svc["spec"]["healthCheckNodePort"] == 31999
    warned = [w for w in result.warnings if "trimmed" in w.message]
    assert len(warned) == 1 and warned[0].path == "templates/svc.yaml"
    for name in ("status", "metadata.uid", "metadata.managedFields", "spec.clusterIP",
                 "spec.clusterIPs"):
        assert name in warned[0].message
    assert "nodePort" not in warned[0].message.replace("healthCheckNodePort", "")


def test_an_override_after_trimming_may_set_what_trimming_removed():
    headless_later = {"overriders": {"plaintext": [
        {"path": "/spec/clusterIP", "operator": "add", "value": "None"}]}}
    result = run(*CLUSTERS, ("templates/svc.yaml", EXPORTED_SERVICE),
                 ("policies/p.yaml", pp("p")), ("policies/o.yaml", op("o", [headless_later])))
    assert objects_in(result, "m1")["Service/apps/web"]["spec"]["clusterIP"] == "None"


def test_a_clean_template_gives_no_trimming_warning():
    result = run(*CLUSTERS, ("templates/d.yaml", deployment("web")),
                 ("policies/p.yaml", pp("p")))
    assert result.warnings == []
