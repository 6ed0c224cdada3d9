"""SEMANTICS.md, "Clusters", "Subscriptions (Clusternet)" and "Overrides (Clusternet)": one test
per rule."""

from __future__ import annotations

import yaml

from gitfleet.model.objects import Taint
from gitfleet.render.core import render
from gitfleet.render.status import ClusterCapacity, StatusSnapshot
from tests.render.conftest import (
    cluster,
    configmap,
    deployment,
    feed,
    fleet_of,
    load,
    merge,
    objects_in,
    override_set,
    replicas,
    run,
    subscription,
)

PROD = {"matchLabels": {"env": "prod"}}


def three_clusters() -> list:
    return [cluster("a", {"env": "prod", "tier": "large"}), cluster("b", {"env": "prod"}),
            cluster("c", {"env": "dev"})]


def test_bound_clusters_are_the_union_of_every_subscriber():
    result = run(*three_clusters(), ("templates/d.yaml", deployment("web")),
                 ("policies/s.yaml", subscription("s", [feed("Deployment", "web")], [
                     {"clusterAffinity": {"matchLabels": {"tier": "large"}}},
                     {"clusterAffinity": {"matchLabels": {"env": "dev"}}}])))
    assert [c.name for c in result.clusters if c.descriptions] == ["a", "c"]


def test_match_expressions_select_clusters():
    result = run(*three_clusters(), ("templates/d.yaml", deployment("web")),
                 ("policies/s.yaml", subscription("s", [feed("Deployment", "web")], [
                     {"clusterAffinity": {"matchExpressions": [
                         {"key": "env", "operator": "NotIn", "values": ["dev"]},
                         {"key": "tier", "operator": "DoesNotExist"}]}}])))
    assert [c.name for c in result.clusters if c.descriptions] == ["b"]


def test_untolerated_noschedule_taint_keeps_a_cluster_out_and_a_toleration_lets_it_in():
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    entries = [cluster("a", {"env": "prod"}), cluster("g", {"env": "prod"}, taints=taint),
               ("templates/d.yaml", deployment("web"))]
    plain = run(*entries, ("policies/s.yaml", subscription(
        "s", [feed("Deployment", "web")], [{"clusterAffinity": PROD}])))
    assert objects_in(plain, "g") == {}
    tolerant = run(*entries, ("policies/s.yaml", subscription(
        "s", [feed("Deployment", "web")], [{"clusterAffinity": PROD}],
        clusterTolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu",
                             "effect": "NoSchedule"}])))
    assert "Deployment/apps/web" in objects_in(tolerant, "g")


def test_prefer_noschedule_taint_does_not_keep_a_cluster_out():
    taint = [{"key": "spot", "value": "", "effect": "PreferNoSchedule"}]
    result = run(cluster("a", {"env": "prod"}, taints=taint),
                 ("templates/d.yaml", deployment("web")),
                 ("policies/s.yaml", subscription("s", [feed("Deployment", "web")],
                                                  [{"clusterAffinity": PROD}])))
    assert replicas(result, "a", "web") == 6


def test_unreachable_taint_from_status_keeps_new_placements_away():
    entries = [cluster("a", {"env": "prod"}), cluster("b", {"env": "prod"}),
               ("templates/d.yaml", deployment("web")),
               ("policies/s.yaml", subscription("s", [feed("Deployment", "web")],
                                                [{"clusterAffinity": PROD}]))]
    status = StatusSnapshot(taints={"b": (Taint("cluster.gitfleet.io/unreachable", "",
                                                "NoSchedule"),)})
    result = render(fleet_of(*entries), status=status)
    assert objects_in(result, "b") == {}
    assert replicas(result, "a", "web") == 6


def test_replication_gives_every_bound_cluster_the_template_replicas():
    result = run(*three_clusters(), ("templates/d.yaml", deployment("web", replicas=5)),
                 ("policies/s.yaml", subscription("s", [feed("Deployment", "web")],
                                                  [{"clusterAffinity": PROD}])))
    assert replicas(result, "a", "web") == 5 and replicas(result, "b", "web") == 5


def test_static_dividing_sums_the_weights_of_matching_subscribers():
    # a matches both subscribers (1 + 2 = 3), b only the first (1): 6 -> 4.5/1.5 -> 5 and 1
    result = run(*three_clusters(), ("templates/d.yaml", deployment("web", replicas=6)),
                 ("policies/s.yaml", subscription(
                     "s", [feed("Deployment", "web")],
                     [{"clusterAffinity": PROD, "weight": 1},
                      {"clusterAffinity": {"matchLabels": {"tier": "large"}}, "weight": 2}],
                     schedulingStrategy="Dividing", dividingScheduling={"type": "Static"})))
    assert (replicas(result, "a", "web"), replicas(result, "b", "web")) == (5, 1)


def test_static_remainder_goes_by_descending_weight_then_cluster_name():
    entries = [cluster(n, {"env": "prod"}) for n in ("x", "y", "z")]
    result = run(*entries, ("templates/d.yaml", deployment("web", replicas=2)),
                 ("policies/s.yaml", subscription(
                     "s", [feed("Deployment", "web")], [{"clusterAffinity": PROD, "weight": 1}],
                     schedulingStrategy="Dividing")))
    assert [replicas(result, n, "web") for n in ("x", "y", "z")] == [1, 1, 0]


def test_weight_zero_cluster_stays_bound_with_zero_replicas():
    result = run(*three_clusters(), ("templates/d.yaml", deployment("web", replicas=4)),
                 ("policies/s.yaml", subscription(
                     "s", [feed("Deployment", "web")],
                     [{"clusterAffinity": {"matchLabels": {"tier": "large"}}, "weight": 1},
                      {"clusterAffinity": {"matchLabels": {"env": "dev"}}, "weight": 0}],
                     schedulingStrategy="Dividing")))
    assert replicas(result, "a", "web") == 4
    assert replicas(result, "c", "web") == 0


def test_dynamic_dividing_follows_available_replicas():
    entries = [cluster("a", {"env": "prod"}), cluster("b", {"env": "prod"}),
               ("templates/d.yaml", deployment("web", replicas=6, cpu="500m")),
               ("policies/s.yaml", subscription(
                   "s", [feed("Deployment", "web")], [{"clusterAffinity": PROD}],
                   schedulingStrategy="Dividing", dividingScheduling={"type": "Dynamic"}))]
    status = StatusSnapshot(capacity={
        "a": ClusterCapacity(allocatable={"cpu": "4"}, requested={"cpu": "0"}),  # 8 fit
        "b": ClusterCapacity(allocatable={"cpu": "2", "memory": "1Gi"},
                             requested={"cpu": "1"})})  # 2 fit
    result = render(fleet_of(*entries), status=status)
    assert (replicas(result, "a", "web"), replicas(result, "b", "web")) == (5, 1)


def test_dynamic_dividing_with_too_little_room_gives_each_what_it_holds():
    entries = [cluster("a", {"env": "prod"}), cluster("b", {"env": "prod"}),
               ("templates/d.yaml", deployment("web", replicas=10, cpu="1")),
               ("policies/s.yaml", subscription(
                   "s", [feed("Deployment", "web")], [{"clusterAffinity": PROD}],
                   schedulingStrategy="Dividing", dividingScheduling={"type": "Dynamic"}))]
    status = StatusSnapshot(capacity={"a": ClusterCapacity(allocatable={"cpu": "3"}),
                                      "b": ClusterCapacity(allocatable={"cpu": "2"})})
    result = render(fleet_of(*entries), status=status)
    assert (replicas(result, "a", "web"), replicas(result, "b", "web")) == (3, 2)
    assert any("room for 5 of 10" in w.message for w in result.warnings)


def test_namespaced_feed_defaults_to_the_subscription_namespace():
    result = run(cluster("a", {"env": "prod"}),
                 ("templates/cm.yaml", configmap("conf", namespace="team", k="v")),
                 ("policies/s.yaml", subscription("s", [feed("ConfigMap", "conf")],
                                                  [{"clusterAffinity": PROD}],
                                                  namespace="team")))
    assert "ConfigMap/team/conf" in objects_in(result, "a")
    assert not result.errors


def test_missing_feed_is_an_error_of_that_subscription_only():
    result = run(cluster("a", {"env": "prod"}), ("templates/d.yaml", deployment("web")),
                 ("policies/s.yaml", subscription("good", [feed("Deployment", "web")],
                                                  [{"clusterAffinity": PROD}])),
                 ("policies/t.yaml", subscription("bad", [feed("Deployment", "nope")],
                                                  [{"clusterAffinity": PROD}])))
    assert [e.obj for e in result.errors] == ["Subscription/apps/bad"]
    assert "feed not found" in result.errors[0].message
    assert "clusters/a/apps/good/description.yaml" in result.files


def test_unbound_cluster_loses_the_description():
    entries = [cluster("a", {"env": "prod"}), ("templates/d.yaml", deployment("web"))]
    sub = ("policies/s.yaml", subscription("s", [feed("Deployment", "web")],
                                           [{"clusterAffinity": PROD}]))
    first = run(*entries, sub)
    relabelled = [cluster("a", {"env": "dev"}), entries[1], sub]
    second = render(fleet_of(*relabelled), previous_files=first.files)
    assert not any(p.startswith("clusters/a/apps/") for p in second.files)


# -- overrides ---------------------------------------------------------------------------------

def _with_overrides(*sets: dict) -> dict:
    entries = [cluster("a", {"env": "prod"}, namespace="ns-a"),
               cluster("b", {"env": "prod"}, namespace="ns-b"),
               ("templates/cm.yaml", configmap("conf", v="template")),
               ("policies/s.yaml", subscription("s", [feed("ConfigMap", "conf")],
                                                [{"clusterAffinity": PROD}]))]
    entries += [(f"policies/o{i}.yaml", s) for i, s in enumerate(sets)]
    result = run(*entries)
    assert not result.errors, result.errors
    return {c: objects_in(result, c)["ConfigMap/apps/conf"]["data"]["v"] for c in ("a", "b")}


TARGET = feed("ConfigMap", "conf", namespace="apps")


def test_localization_applies_to_its_cluster_only():
    values = _with_overrides(override_set("Localization", "l", TARGET,
                                          [merge("x", {"data": {"v": "local"}})], namespace="ns-a"))
    assert values == {"a": "local", "b": "template"}


def test_globalization_with_affinity_applies_to_matching_clusters_and_without_to_all():
    only_b = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}
    assert _with_overrides(override_set("Globalization", "g", TARGET,
                                        [merge("x", {"data": {"v": "global"}})])) == \
        {"a": "global", "b": "global"}
    assert _with_overrides(override_set("Globalization", "g", TARGET,
                                        [merge("x", {"data": {"v": "g"}})],
                                        affinity={"matchLabels": {"env": "dev"}})) == \
        {"a": "template", "b": "template"}
    assert _with_overrides(override_set("Globalization", "g", TARGET,
                                        [merge("x", {"data": {"v": "g"}})],
                                        affinity=only_b))["b"] == "g"


def test_localizations_apply_after_globalizations_whatever_the_priority():
    values = _with_overrides(
        override_set("Globalization", "g", TARGET, [merge("x", {"data": {"v": "global"}})],
                     priority=1000),
        override_set("Localization", "l", TARGET, [merge("x", {"data": {"v": "local"}})],
                     namespace="ns-a", priority=0))
    assert values == {"a": "local", "b": "global"}


def test_higher_priority_applies_later_and_equal_priorities_go_by_name():
    values = _with_overrides(
        override_set("Localization", "zz-low", TARGET, [merge("x", {"data": {"v": "low"}})],
                     namespace="ns-a", priority=100),
        override_set("Localization", "aa-high", TARGET, [merge("x", {"data": {"v": "high"}})],
                     namespace="ns-a", priority=900),
        override_set("Localization", "b1", TARGET, [merge("x", {"data": {"v": "b1"}})],
                     namespace="ns-b"),
        override_set("Localization", "b2", TARGET, [merge("x", {"data": {"v": "b2"}})],
                     namespace="ns-b"))
    assert values == {"a": "high", "b": "b2"}


def test_default_priority_is_500():
    values = _with_overrides(
        override_set("Localization", "a-default", TARGET, [merge("x", {"data": {"v": "d"}})],
                     namespace="ns-a"),
        override_set("Localization", "b-499", TARGET, [merge("x", {"data": {"v": "499"}})],
                     namespace="ns-a", priority=499))
    assert values["a"] == "d"


def test_division_acts_as_a_priority_1000_localization_above_every_user_override():
    # upstream's deployer writes the split as a Localization of priority 1000, "the highest"
    # (clusternet pkg/controllermanager/deployer/utils.go, commit 19245baa3558)
    entries = [cluster("a", {"env": "prod"}, namespace="ns-a"),
               cluster("b", {"env": "prod"}, namespace="ns-b"),
               ("templates/d.yaml", deployment("web", replicas=6)),
               ("policies/s.yaml", subscription("s", [feed("Deployment", "web")],
                                                [{"clusterAffinity": PROD, "weight": 1}],
                                                schedulingStrategy="Dividing"))]
    scale = [{"name": "r", "type": "JSONPatch",
              "value": '[{"op": "replace", "path": "/spec/replicas", "value": 9}]'}]
    target = feed("Deployment", "web", namespace="apps")
    for priority in (499, 501, 999, 1000):
        local = run(*entries, ("policies/l.yaml", override_set(
            "Localization", "l", target, scale, namespace="ns-a", priority=priority)))
        assert list(local.errors) == []
        assert replicas(local, "a", "web") == 3, priority   # the split wins
        glob = run(*entries, ("policies/g.yaml", override_set(
            "Globalization", "g", target, scale, priority=priority)))
        assert replicas(glob, "a", "web") == 3, priority


def test_static_dividing_without_weights_runs_the_templates_replicas_everywhere():
    # upstream's StaticDivideReplicas returns early when the weights sum to 0 and the
    # deployer writes no split (the nfd day1 example: no weights, each cluster runs them all)
    entries = [cluster("a", {"env": "prod"}), cluster("b", {"env": "prod"}),
               ("templates/d.yaml", deployment("web", replicas=6)),
               ("templates/c.yaml", configmap("conf", v="1"))]
    unweighted = run(*entries, ("policies/s.yaml", subscription(
        "s", [feed("Deployment", "web"), feed("ConfigMap", "conf")],
        [{"clusterAffinity": PROD}], schedulingStrategy="Dividing",
        dividingScheduling={"type": "Static"})))
    assert list(unweighted.errors) == [] and list(unweighted.warnings) == []
    assert (replicas(unweighted, "a", "web"), replicas(unweighted, "b", "web")) == (6, 6)
    zero = run(*entries, ("policies/s.yaml", subscription(
        "s", [feed("Deployment", "web")], [{"clusterAffinity": PROD, "weight": 0}],
        schedulingStrategy="Dividing")))
    assert (replicas(zero, "a", "web"), replicas(zero, "b", "web")) == (6, 6)
    # one positive weight divides: the weight-0 cluster stays bound with 0
    one = run(*entries, ("policies/s.yaml", subscription(
        "s", [feed("Deployment", "web")],
        [{"clusterAffinity": {"matchLabels": {"env": "prod"}}, "weight": 0},
         {"clusterAffinity": {"matchExpressions": [
             {"key": "clusters.clusternet.io/cluster-name", "operator": "In",
              "values": ["a"]}]}, "weight": 1}],
        schedulingStrategy="Dividing")))
    assert (replicas(one, "a", "web"), replicas(one, "b", "web")) == (6, 0)


def test_json_patch_to_a_missing_path_warns_and_leaves_the_object_unpatched():
    entries = [cluster("a", {"env": "prod"}, namespace="ns-a"),
               ("templates/cm.yaml", configmap("conf", v="template")),
               ("policies/s.yaml", subscription("s", [feed("ConfigMap", "conf")],
                                                [{"clusterAffinity": PROD}])),
               ("policies/l.yaml", override_set("Localization", "l", TARGET, [
                   {"name": "bad-path", "type": "JSONPatch",
                    "value": '[{"op": "replace", "path": "/data/missing/deep", "value": 1}]'}],
                   namespace="ns-a"))]
    result = run(*entries)
    assert not result.errors
    assert objects_in(result, "a")["ConfigMap/apps/conf"]["data"] == {"v": "template"}
    [warning] = [w for w in result.warnings if "bad-path" in w.message]
    assert "(cluster a)" in warning.message and warning.obj == "Subscription/apps/s"


def test_server_fields_and_status_are_removed_after_overrides():
    cm = configmap("conf", v="1")
    cm["metadata"].update(uid="u-1", resourceVersion="42", managedFields=[{"manager": "x"}])
    cm["status"] = {"phase": "whatever"}
    result = run(cluster("a", {"env": "prod"}), ("templates/cm.yaml", cm),
                 ("policies/s.yaml", subscription("s", [feed("ConfigMap", "conf")],
                                                  [{"clusterAffinity": PROD}])))
    body = objects_in(result, "a")["ConfigMap/apps/conf"]
    assert "status" not in body
    assert not {"uid", "resourceVersion", "managedFields"} & set(body["metadata"])


def test_description_records_source_resources_and_overrides():
    result = run(cluster("a", {"env": "prod"}, namespace="ns-a"),
                 ("templates/cm.yaml", configmap("conf", v="1")),
                 ("policies/s.yaml", subscription("s", [feed("ConfigMap", "conf")],
                                                  [{"clusterAffinity": PROD}])),
                 ("policies/l.yaml", override_set("Localization", "l", TARGET,
                                                  [merge("x", {"data": {"v": "2"}})],
                                                  namespace="ns-a")),
                 source_commit="c0ffee")
    desc = load(result, "clusters/a/apps/s/description.yaml")
    assert desc["kind"] == "Description" and desc["spec"]["cluster"] == "a"
    assert desc["spec"]["source"]["kind"] == "Subscription"
    assert desc["spec"]["sourceCommit"] == "c0ffee"
    [res] = desc["spec"]["resources"]
    assert res["file"] == "core_ConfigMap_apps_conf.yaml" and res["hash"].startswith("sha256:")
    assert [o["name"] for o in desc["spec"]["overrides"]] == ["l"]
    assert yaml.safe_load(result.files["clusters/a/apps/s/" + res["file"]])["data"]["v"] == "2"
