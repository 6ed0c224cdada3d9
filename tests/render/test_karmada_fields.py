"""SEMANTICS.md "Propagation (Karmada)": suspension, preserveResourcesOnDeletion, propagateDeps
and activationPreference, one test per rule, through whole renders."""

from __future__ import annotations

from typing import Any

from gitfleet.render.core import render
from tests.render.conftest import cluster, configmap, deployment, fleet_of, load, objects_in

KP = "policy.karmada.io/v1alpha1"
CLUSTERS = [cluster("m1", {"env": "prod"}), cluster("m2", {"env": "prod"}),
            cluster("m3", {"env": "dev"})]
CM = {"apiVersion": "v1", "kind": "ConfigMap"}
DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment"}


def pp(selectors: list[dict[str, Any]], placement: dict[str, Any] | None = None,
       name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": KP, "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"resourceSelectors": selectors, "placement": placement or {}, **spec}}


def entries(policy: dict[str, Any], *templates: dict[str, Any]) -> list[Any]:
    return [*CLUSTERS, ("policies/p.yaml", policy),
            *((f"templates/t{i}.yaml", t) for i, t in enumerate(templates))]


def description(result: Any, c: str, folder: str = "apps/p") -> dict[str, Any]:
    return load(result, f"clusters/{c}/{folder}/description.yaml")


def cluster_files(result: Any, c: str) -> dict[str, bytes]:
    return {k: v for k, v in result.files.items() if k.startswith(f"clusters/{c}/")}


def test_preserve_resources_on_deletion_is_carried_by_every_description_of_the_policy():
    result = render(fleet_of(*entries(pp([CM], preserveResourcesOnDeletion=True),
                                      configmap("conf", v="1"))))
    assert all(description(result, c)["spec"]["preserveResourcesOnDeletion"] is True
               for c in ("m1", "m2", "m3"))
    plain = render(fleet_of(*entries(pp([CM]), configmap("conf", v="1"))))
    assert "preserveResourcesOnDeletion" not in description(plain, "m1")["spec"]


def test_suspended_dispatching_keeps_every_cluster_exactly_as_it_was():
    before = render(fleet_of(*entries(pp([CM], {"clusterAffinity": {"clusterNames": ["m1"]}}),
                                      configmap("conf", v="1"))), source_commit="c1")
    changed = pp([CM], {"clusterAffinity": {"clusterNames": ["m2"]}},
                 suspension={"dispatching": True})
    after = render(fleet_of(*entries(changed, configmap("conf", v="2"))), source_commit="c2",
                   previous_files=before.files)
    assert after.errors == []
    for c in ("m1", "m2", "m3"):
        assert {k: v for k, v in cluster_files(after, c).items()
                if not k.endswith("cluster.yaml")} == \
            {k: v for k, v in cluster_files(before, c).items() if not k.endswith("cluster.yaml")}
    (warning,) = [w.message for w in after.warnings if "suspension" in w.message]
    assert "new Descriptions for m2" in warning and "removals for m1" in warning


def test_dispatching_suspended_on_named_clusters_holds_only_those():
    before = render(fleet_of(*entries(pp([CM]), configmap("conf", v="1"))), source_commit="c1")
    suspended = pp([CM], suspension={"dispatchingOnClusters": {"clusterNames": ["m2"]}})
    after = render(fleet_of(*entries(suspended, configmap("conf", v="2"))), source_commit="c2",
                   previous_files=before.files)
    data = {c: objects_in(after, c)["ConfigMap/apps/conf"]["data"]["v"]
            for c in ("m1", "m2", "m3")}
    assert data == {"m1": "2", "m2": "1", "m3": "2"}
    assert description(after, "m2") == description(before, "m2")


def workload_with_deps() -> dict[str, Any]:
    d = deployment("web")
    pod = d["spec"]["template"]["spec"]
    pod["serviceAccountName"] = "web-sa"
    pod["imagePullSecrets"] = [{"name": "pull"}]
    pod["volumes"] = [{"name": "conf", "configMap": {"name": "web-conf"}},
                      {"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}},
                      {"name": "all", "projected": {"sources": [{"secret": {"name": "tls"}}]}},
                      {"name": "maybe", "configMap": {"name": "absent-ok", "optional": True}}]
    pod["containers"][0]["envFrom"] = [{"secretRef": {"name": "env"}}]
    pod["containers"][0]["env"] = [{"name": "X", "valueFrom": {
        "configMapKeyRef": {"name": "web-conf", "key": "x"}}}, {"name": "Y", "valueFrom": {
            "secretKeyRef": {"name": "gone", "key": "y"}}}]
    return d


def deps() -> list[dict[str, Any]]:
    def obj(kind: str, name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "apps"}}
    return [configmap("web-conf", x="1"), obj("Secret", "pull"), obj("Secret", "tls"),
            obj("Secret", "env"), obj("ServiceAccount", "web-sa"),
            obj("PersistentVolumeClaim", "web-data"), configmap("unrelated")]


def test_propagate_deps_sends_what_the_pod_template_names_to_the_same_clusters():
    policy = pp([DEPLOY], {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}},
                propagateDeps=True)
    result = render(fleet_of(*entries(policy, workload_with_deps(), *deps())))
    assert result.errors == []
    expected = {"Deployment/apps/web", "ConfigMap/apps/web-conf", "Secret/apps/pull",
                "Secret/apps/tls", "Secret/apps/env", "ServiceAccount/apps/web-sa",
                "PersistentVolumeClaim/apps/web-data"}
    assert set(objects_in(result, "m1")) == expected == set(objects_in(result, "m2"))
    assert objects_in(result, "m3") == {}
    (missing,) = [w.message for w in result.warnings if "propagateDeps" in w.message]
    assert "Secret apps/gone" in missing and "absent-ok" not in missing
    without = render(fleet_of(*entries(pp([DEPLOY]), workload_with_deps(), *deps())))
    assert set(objects_in(without, "m1")) == {"Deployment/apps/web"}


def test_a_dependency_another_policy_delivers_is_not_delivered_twice():
    fleet = fleet_of(*entries(pp([DEPLOY], propagateDeps=True), workload_with_deps(), *deps()),
                     ("policies/q.yaml", pp([CM], name="q")))
    result = render(fleet)
    assert result.errors == []
    def names(folder: str) -> set[str]:
        return {r["name"] for r in description(result, "m1", folder)["spec"]["resources"]}
    assert "web-conf" in names("apps/q") and "web-conf" not in names("apps/p")
    assert {"web", "pull", "tls"} <= names("apps/p")


def test_a_lazy_policy_change_waits_for_each_template_s_own_change():
    only_m1 = pp([CM], {"clusterAffinity": {"clusterNames": ["m1"]}},
                 activationPreference="Lazy")
    widened = pp([CM], {"clusterAffinity": {"clusterNames": ["m1", "m2"]}},
                 activationPreference="Lazy")
    history = {"c1": fleet_of(*entries(only_m1, configmap("a", v="1"), configmap("b", v="1")))}
    first = render(history["c1"], source_commit="c1", fleet_at=history.__getitem__)
    assert [r["basisCommit"] for r in description(first, "m1")["spec"]["lazyBasis"]] == \
        ["c1", "c1"]

    history["c2"] = fleet_of(*entries(widened, configmap("a", v="1"), configmap("b", v="1")))
    policy_only = render(history["c2"], source_commit="c2", previous_files=first.files,
                         fleet_at=history.__getitem__)
    assert "clusters/m2/apps/p/description.yaml" not in policy_only.files
    (deferred,) = [w.message for w in policy_only.warnings if "deferred" in w.message]
    assert "ConfigMap apps/a, ConfigMap apps/b until that template changes" in deferred

    history["c3"] = fleet_of(*entries(widened, configmap("a", v="1"), configmap("b", v="2")))
    b_changed = render(history["c3"], source_commit="c3", previous_files=policy_only.files,
                       fleet_at=history.__getitem__)
    assert set(objects_in(b_changed, "m2")) == {"ConfigMap/apps/b"}
    assert set(objects_in(b_changed, "m1")) == {"ConfigMap/apps/a", "ConfigMap/apps/b"}
    basis = {r["template"]: r["basisCommit"]
             for r in description(b_changed, "m1")["spec"]["lazyBasis"]}
    assert basis == {"/ConfigMap/apps/a": "c1", "/ConfigMap/apps/b": "c3"}


def test_a_lazy_policy_without_history_renders_as_it_is_now():
    widened = pp([CM], {"clusterAffinity": {"clusterNames": ["m1", "m2"]}},
                 activationPreference="Lazy")
    result = render(fleet_of(*entries(widened, configmap("a", v="1"))), source_commit="c9")
    assert set(objects_in(result, "m2")) == {"ConfigMap/apps/a"}


def test_descriptions_with_these_fields_satisfy_the_description_schema():
    from gitfleet.model import schema
    policy = pp([DEPLOY], preserveResourcesOnDeletion=True, propagateDeps=True,
                activationPreference="Lazy")
    result = render(fleet_of(*entries(policy, workload_with_deps(), *deps())),
                    source_commit="c1")
    spec = description(result, "m1")["spec"]
    assert spec["preserveResourcesOnDeletion"] is True and spec["lazyBasis"]
    assert schema.problems("Description", description(result, "m1")) == []
