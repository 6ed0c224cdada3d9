"""Rules of the render as a whole: conflicts between Descriptions, ApplyLater bases, stable
sourceCommits, last good state, determinism (property tests)."""

from __future__ import annotations

import random

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from tests.render.conftest import (
    cluster,
    configmap,
    deployment,
    doc,
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

ALL = [{"clusterAffinity": {}}]


def test_object_claimed_by_two_descriptions_is_an_error_on_the_later_claimer():
    result = run(cluster("a"), ("templates/cm.yaml", configmap("conf", v="1")),
                 ("policies/a.yaml", subscription("first", [feed("ConfigMap", "conf")], ALL)),
                 ("policies/b.yaml", subscription("second", [feed("ConfigMap", "conf")], ALL)))
    assert [e.obj for e in result.errors] == ["Subscription/apps/second"]
    assert "already delivered" in result.errors[0].message
    first = load(result, "clusters/a/apps/first/description.yaml")["spec"]["resources"]
    second = load(result, "clusters/a/apps/second/description.yaml")["spec"]["resources"]
    assert [r["name"] for r in first] == ["conf"] and second == []


def _applylater_fleet(value: str, *, policy: str = "", feed_value: str = "1",
                      extra_cluster: bool = False) -> dict[str, bytes]:
    files = {
        "clusters/a.yaml": cluster("a", namespace="ns-a")[1],
        "templates/cm.yaml": doc(configmap("conf", v=feed_value)),
        "policies/s.yaml": doc(subscription("s", [feed("ConfigMap", "conf")], ALL)),
        "policies/l.yaml": doc(override_set(
            "Localization", "l", feed("ConfigMap", "conf", namespace="apps"),
            [merge("x", {"data": {"extra": value}})], namespace="ns-a", policy=policy)),
    }
    if extra_cluster:
        files["clusters/b.yaml"] = cluster("b")[1]
    return files


def _history(*snapshots: dict[str, bytes]):
    """Render a sequence of commits the way the hub does; returns the results."""
    commits = {f"c{i}": load_fleet(files) for i, files in enumerate(snapshots)}
    results = []
    previous = None
    for sha, fleet in commits.items():
        result = render(fleet, source_commit=sha, previous_files=previous,
                        fleet_at=lambda s: commits[s])
        results.append(result)
        previous = result.files
    return results


def extra(result, cluster_name: str = "a") -> str:
    return objects_in(result, cluster_name)["ConfigMap/apps/conf"]["data"]["extra"]


def test_applylater_change_waits_for_a_trigger_and_is_reported_as_deferred():
    r0, r1, r2 = _history(_applylater_fleet("old"), _applylater_fleet("new"),
                          _applylater_fleet("new", feed_value="2"))
    assert extra(r0) == "old"
    assert extra(r1) == "old"  # deferred: the Localization changed, nothing else did
    assert any("deferred (ApplyLater)" in w.message for w in r1.warnings)
    desc = load(r1, "clusters/a/apps/s/description.yaml")
    assert desc["spec"]["basisCommit"] == "c0"
    assert desc["spec"]["overrides"][0]["deferred"] is True
    assert extra(r2) == "new"  # the feed changed: a trigger
    assert load(r2, "clusters/a/apps/s/description.yaml")["spec"]["basisCommit"] == "c2"


def test_applylater_picks_up_on_a_change_of_bound_clusters():
    r0, r1, r2 = _history(_applylater_fleet("old"), _applylater_fleet("new"),
                          _applylater_fleet("new", extra_cluster=True))
    assert extra(r1) == "old" and extra(r2) == "new"


def test_applynow_changes_at_once():
    r0, r1 = _history(_applylater_fleet("old", policy="ApplyNow"),
                      _applylater_fleet("new", policy="ApplyNow"))
    assert extra(r1) == "new"
    assert not any("deferred" in w.message for w in r1.warnings)


def test_source_commit_changes_only_with_the_description_content():
    base = _applylater_fleet("v", policy="ApplyNow")
    other = dict(base)
    other["templates/unrelated.yaml"] = doc(configmap("unrelated", v="x"))
    r0, r1 = _history(base, other)
    assert r0.files == r1.files or \
        load(r1, "clusters/a/apps/s/description.yaml")["spec"]["sourceCommit"] == "c0"
    assert r1.files["clusters/a/apps/s/description.yaml"] == \
        r0.files["clusters/a/apps/s/description.yaml"]


def test_render_of_an_unchanged_fleet_is_byte_identical():
    files = _applylater_fleet("v")
    r0, r1 = _history(files, dict(files))
    assert r0.files == r1.files


def test_missing_feed_keeps_last_good_descriptions_marked_with_render_errors():
    good = _applylater_fleet("v")
    broken = dict(good)
    del broken["templates/cm.yaml"]
    r0, r1 = _history(good, broken)
    assert r1.errors and "feed not found" in r1.errors[0].message
    kept = load(r1, "clusters/a/apps/s/description.yaml")
    assert kept["spec"]["renderErrors"] == [r1.errors[0].message]
    assert r1.files["clusters/a/apps/s/core_ConfigMap_apps_conf.yaml"] == \
        r0.files["clusters/a/apps/s/core_ConfigMap_apps_conf.yaml"]


def test_broken_template_file_keeps_what_a_karmada_policy_had_from_it():
    files = {"clusters/a.yaml": cluster("a")[1],
             "templates/d.yaml": doc(deployment("web")),
             "policies/p.yaml": doc({
                 "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                 "metadata": {"name": "p", "namespace": "apps"},
                 "spec": {"resourceSelectors": [{"apiVersion": "apps/v1",
                                                 "kind": "Deployment"}]}})}
    broken = dict(files, **{"templates/d.yaml": b"kind: [unclosed\n"})
    r0, r1 = _history(files, broken)
    assert replicas(r1, "a", "web") == 6
    assert load(r1, "clusters/a/apps/p/description.yaml")["spec"]["renderErrors"]
    assert any(e.path == "templates/d.yaml" for e in r1.errors)


# -- determinism -------------------------------------------------------------------------------

def _fleet_files(n_clusters: int, weights: list[int]) -> dict[str, bytes]:
    files = {}
    for i in range(n_clusters):
        path, body = cluster(f"k{i}", {"env": "prod", "w": str(weights[i % len(weights)])},
                             namespace=f"ns-k{i}")
        files[path] = body
    files["templates/d.yaml"] = doc(deployment("web", replicas=17))
    files["templates/cm.yaml"] = doc(configmap("conf", v="1"))
    subscribers = [{"clusterAffinity": {"matchLabels": {"w": str(w)}}, "weight": w}
                   for w in sorted(set(weights))]
    files["policies/s.yaml"] = doc(subscription(
        "s", [feed("Deployment", "web"), feed("ConfigMap", "conf")], subscribers,
        schedulingStrategy="Dividing"))
    files["policies/l.yaml"] = doc(override_set(
        "Localization", "l", feed("ConfigMap", "conf", namespace="apps"),
        [merge("x", {"data": {"v": "2"}})], namespace="ns-k0"))
    return files


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=1, max_value=12),
       weights=st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=4),
       seed=st.integers())
def test_output_is_independent_of_file_order_and_identical_across_runs(n, weights, seed):
    files = _fleet_files(n, weights)
    items = list(files.items())
    random.Random(seed).shuffle(items)
    a = render(load_fleet(files), source_commit="x")
    b = render(load_fleet(dict(items)), source_commit="x")
    assert a.files == b.files
    total = sum(replicas(a, f"k{i}", "web") or 0 for i in range(n))
    # every weight 0: nothing divided, each cluster runs the template's 17 (as upstream)
    assert total == (17 if any(weights[i % len(weights)] for i in range(n)) else 17 * n)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=2, max_value=8), seed=st.integers())
def test_renaming_nothing_but_shuffling_clusters_changes_nothing(n, seed):
    files = _fleet_files(n, [1, 2, 3])
    cluster_paths = [p for p in files if p.startswith("clusters/")]
    order = cluster_paths[:]
    random.Random(seed).shuffle(order)
    shuffled = {p: files[p] for p in order}
    shuffled.update({p: d for p, d in files.items() if p not in shuffled})
    assert render(load_fleet(files)).files == render(load_fleet(shuffled)).files


def test_errors_file_lists_errors_and_warnings():
    result = run(cluster("a"), ("policies/s.yaml", subscription("s", [feed("ConfigMap", "x")],
                                                                 ALL)))
    data = yaml.safe_load(result.files["errors.yaml"])
    assert data["errors"][0]["path"] == "policies/s.yaml"
    assert data["errors"][0]["object"] == "Subscription/apps/s"
    assert fleet_of(cluster("a")).errors == ()
