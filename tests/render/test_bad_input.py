"""Bad input: every broken fleet gives a clear problem naming the file (and line and object where
known), never crashes the render, leaves unaffected Subscriptions exactly as they were, and never
costs what was deployed before.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet.model.loader import load_fleet
from gitfleet.model.problems import Problem
from gitfleet.render.core import RenderResult, render
from tests.harness import gitfleet_here
from tests.hub.fleet import STATE, commit, edit, example_repo, git, source_of

APPS = "apps.clusternet.io/v1alpha1"


def doc(*objs: dict[str, Any]) -> bytes:
    return yaml.safe_dump_all(objs, sort_keys=False).encode()


def managed_cluster(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
            "metadata": {"name": name, "labels": labels}, "spec": {"syncMode": "Pull"}}


def deployment(name: str, replicas: int = 4) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "apps", "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main",
                                                           "image": f"{name}:1"}]}}}}


def subscription(name: str, feed: str, *, weight: Any = 1, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": APPS, "kind": "Subscription",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"subscribers": [{"clusterAffinity": {"matchLabels": {"env": "prod"}},
                                      "weight": weight}],
                     "schedulingStrategy": "Dividing",
                     "feeds": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": feed,
                                "namespace": "apps"}], **spec}}


def localization(name: str, cluster_namespace: str, feed: str,
                 overrides: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": APPS, "kind": "Localization",
            "metadata": {"name": name, "namespace": cluster_namespace},
            "spec": {"feed": {"apiVersion": "apps/v1", "kind": "Deployment", "name": feed,
                              "namespace": "apps"}, "overrides": overrides}}


GOOD: dict[str, bytes] = {
    "clusters/east.yaml": doc(managed_cluster("east", {"env": "prod"})),
    "clusters/west.yaml": doc(managed_cluster("west", {"env": "prod"})),
    "templates/web.yaml": doc(deployment("web")),
    "templates/api.yaml": doc(deployment("api", 6)),
    "policies/web.yaml": doc(subscription("web", "web")),
    "policies/api.yaml": doc(subscription("api", "api")),
}

# The Subscription that no broken file below touches: its files must not change.
UNAFFECTED = "apps/api"


def unaffected_files(result: RenderResult) -> dict[str, bytes]:
    return {p: d for p, d in result.files.items()
            if p.startswith("clusters/") and f"/{UNAFFECTED}/" in p}


def settings(**limits: int) -> bytes:
    return doc({"apiVersion": "gitfleet.io/v1alpha1", "kind": "FleetSettings",
                "limits": {"maxFileBytes": limits["maxFileBytes"]}})


BILLION_LAUGHS = b"""apiVersion: v1
kind: ConfigMap
metadata:
  name: lol
  namespace: apps
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


# web's Deployment with one more annotation line (line 8): VALUE is what the cases put there.
WEB_ANNOTATED = b"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
  annotations:
    team: a
    VALUE
  labels: {app: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: "web:1"}]
"""


@dataclass(frozen=True)
class Broken:
    """One broken fleet: `files` added to (or replacing files of) GOOD; `base` is extra good
    files the comparison render gets too (e.g. fleet.yaml)."""

    id: str
    files: dict[str, bytes]
    path: str  # the file the problem must name
    message: str  # a piece of the message
    line: int | None = None
    obj: str = ""  # a piece of the object name
    warning: bool = False
    base: dict[str, bytes] = field(default_factory=dict)


CORPUS = [
    Broken("invalid-yaml", {"policies/broken.yaml": b"kind: Subscription\nspec: [1, 2\n"},
           "policies/broken.yaml", "invalid YAML", line=3),
    Broken("not-a-mapping", {"templates/list.yaml": b"- a\n- b\n"},
           "templates/list.yaml", "not a Kubernetes object", line=1),
    Broken("scalar-document", {"templates/scalar.yaml": doc(deployment("x")) + b"---\n42\n"},
           "templates/scalar.yaml", "document 2 is a int", line=22),
    Broken("wrong-type", {"policies/two.yaml": doc(subscription("two", "web", weight="two"))},
           "policies/two.yaml", "spec.subscribers[0].weight: 'two' is not of type 'integer'",
           line=11, obj="Subscription/apps/two"),
    Broken("missing-required", {"policies/nofeeds.yaml": doc(
        {"apiVersion": APPS, "kind": "Subscription", "metadata": {"name": "nofeeds"},
         "spec": {"subscribers": [{"clusterAffinity": {}}]}})},
           "policies/nofeeds.yaml", "'feeds' is a required property", obj="nofeeds"),
    Broken("unknown-setting", {"fleet.yaml": b"apiVersion: gitfleet.io/v1alpha1\n"
                                             b"kind: FleetSettings\nlimts:\n  maxFileBytes: 5\n"},
           "fleet.yaml", "`limts` is not a field of FleetSettings", line=3,
           obj="FleetSettings"),
    Broken("unknown-kind-under-policies", {"policies/cm.yaml": doc(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "apps"}})},
           "policies/cm.yaml", "unknown kind v1/ConfigMap under policies/", line=1,
           obj="ConfigMap/apps/c"),
    Broken("duplicate-template", {"templates/zz-again.yaml": doc(deployment("web", 9))},
           "templates/zz-again.yaml", "duplicate object, first defined at templates/web.yaml",
           line=1, obj="Deployment/apps/web"),
    Broken("duplicate-policy", {"policies/zz-api-again.yaml": doc(subscription("api", "web"))},
           "policies/zz-api-again.yaml", "duplicate object, first defined at policies/api.yaml",
           obj="Subscription/apps/api"),
    Broken("name-not-dns", {"templates/bad-name.yaml": doc(
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "Bad Name!", "namespace": "apps"}})},
           "templates/bad-name.yaml", "is not a valid name", line=1),
    Broken("name-climbs-out", {"templates/climb.yaml": doc(
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "../x", "namespace": "apps"}})},
           "templates/climb.yaml", "'../x' is not a valid name", line=1),
    Broken("namespace-climbs-out", {"templates/climb-ns.yaml": doc(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": ".."}})},
           "templates/climb-ns.yaml", "metadata.namespace '..' is not a DNS label", line=1),
    Broken("api-version-climbs-out", {"templates/climb-api.yaml": doc(
        {"apiVersion": "../../../../tmp/evil/v1", "kind": "Thing",
         "metadata": {"name": "x", "namespace": "apps"}})},
           "templates/climb-api.yaml", "is not a Kubernetes API version", line=1),
    Broken("kind-climbs-out", {"templates/climb-kind.yaml": doc(
        {"apiVersion": "v1", "kind": "../../x", "metadata": {"name": "x", "namespace": "apps"}})},
           "templates/climb-kind.yaml", "is not a Kubernetes kind", line=1),
    Broken("policy-name-climbs-out", {"policies/climb.yaml": doc(subscription("../../x", "web"))},
           "policies/climb.yaml", "is not a valid name", line=1),
    Broken("cluster-name-not-dns", {"clusters/Big_One.yaml": doc(
        managed_cluster("Big_One", {"env": "prod"}))},
           "clusters/Big_One.yaml", "metadata.name: 'Big_One' is not valid here", line=4,
           obj="ManagedCluster/Big_One"),
    Broken("cluster-file-misnamed", {"clusters/north.yaml": doc(
        managed_cluster("south", {"env": "prod"}))},
           "clusters/north.yaml", "must be named after the cluster: clusters/south.yaml",
           obj="ManagedCluster/south"),
    Broken("template-under-clusters", {"clusters/cm.yaml": doc(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})},
           "clusters/cm.yaml", "clusters/ holds only ManagedCluster objects"),
    Broken("non-utf8", {"templates/latin1.yaml": b"apiVersion: v1\nkind: ConfigMap\n"
                                                 b"metadata:\n  name: caf\xe9\n"},
           "templates/latin1.yaml", "not valid UTF-8", line=4),
    Broken("alias-bomb", {"templates/lol.yaml": BILLION_LAUGHS},
           "templates/lol.yaml", "alias bomb", line=1),
    Broken("over-size-limit", {"templates/big.yaml": doc(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "apps"},
         "data": {"blob": "x" * 5000}})},
           "templates/big.yaml", "over the limit of 4096 (fleet.yaml limits.maxFileBytes)",
           base={"fleet.yaml": settings(maxFileBytes=4096)}),
    *[Broken(f"yaml-{name}", {"templates/web.yaml": WEB_ANNOTATED.replace(b"VALUE", value)},
             "templates/web.yaml", message, line=line)
      for name, value, message, line in [
          ("date", b"released: 2024-01-01", "quote it: '2024-01-01'", 8),
          ("timestamp", b"at: 2024-01-01T10:00:00Z", "reads as a YAML date/time", 8),
          ("binary", b"blob: !!binary aGVsbG8=", "!!binary data", 8),
          ("set", b"s: !!set {a, b}", "write a list", 8),
          ("unknown-tag", b"x: !foo bar", "YAML tag '!foo' is not allowed", 8),
          ("python-tag", b"x: !!python/object/apply:os.system [ls]", "is not allowed", 8),
          ("int-key", b"80: http", "mapping key '80' reads as an integer", 8),
          ("bool-key", b"on: push", "quote it: 'on'", 8),
          ("null-key", b"~: x", "a mapping key is null", 8),
          ("list-key", b"? [a]\n    : x", "a mapping key is a list", 8),
          ("duplicate-key", b"team: b", "key 'team' appears twice", 8),
          ("huge-int", b"n: 99999999999999999999", "does not fit in 64 bits", 8),
          ("nan", b"n: .nan", "not a finite number", 8),
          ("deep", b"d: " + b"[" * 150 + b"]" * 150, "nest deeper than 100 levels", 8),
          ("very-deep", b"d: " + b"[" * 300_000 + b"]" * 300_000, "nest deeper", 8),
          ("recursive-alias", b"r: &r [*r]", "recursive alias", 8),
      ]],
    Broken("replicas-not-a-number", {"templates/web.yaml": doc(
        {**deployment("web"), "spec": {**deployment("web")["spec"], "replicas": "three"}})},
           "templates/web.yaml", "/spec/replicas must be a whole number >= 0, not 'three'",
           line=1, obj="Deployment/apps/web"),
    Broken("spec-not-a-mapping", {"templates/web.yaml": doc({**deployment("web"), "spec": [1]})},
           "templates/web.yaml", "/spec is not a mapping", line=1, obj="Deployment/apps/web"),
    Broken("missing-feed", {"policies/ghost.yaml": doc(subscription("ghost", "nowhere"))},
           "policies/ghost.yaml", "feed not found: apps/v1 Deployment apps/nowhere", line=1,
           obj="Subscription/apps/ghost"),
    Broken("localization-for-no-cluster", {"policies/loc.yaml": doc(localization(
        "lonely", "gitfleet-nowhere", "web",
        [{"name": "m", "type": "MergePatch", "value": '{"metadata":{"labels":{"x":"y"}}}'}]))},
           "policies/loc.yaml", "is no cluster's dedicated namespace", line=1,
           obj="Localization/gitfleet-nowhere/lonely", warning=True),
    Broken("json-patch-missing-path", {"policies/loc.yaml": doc(localization(
        "patch-east", "gitfleet-east", "web",
        [{"name": "deep-one", "type": "JSONPatch",
          "value": '[{"op": "replace", "path": "/spec/nothere/x", "value": 1}]'}]))},
           "policies/web.yaml", "patch-east", obj="Subscription/apps/web", warning=True),
    Broken("unknown-override-type", {"policies/loc.yaml": doc(localization(
        "odd", "gitfleet-east", "web", [{"name": "s", "type": "StrategicMergePatch",
                                          "value": "{}"}]))},
           "policies/loc.yaml", "spec.overrides[0].type", line=14, obj="Localization"),
]


def find(problems: list[Problem], case: Broken) -> list[Problem]:
    return [p for p in problems if p.path == case.path and case.message in p.message
            and case.obj in p.obj and (case.line is None or p.line == case.line)]


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.id)
def test_broken_file_gives_a_clear_problem_and_spares_the_rest(case: Broken) -> None:
    baseline = render(load_fleet({**GOOD, **case.base}))
    assert baseline.errors == [] and baseline.warnings == []
    result = render(load_fleet({**GOOD, **case.base, **case.files}))
    problems = result.warnings if case.warning else result.errors
    assert find(problems, case), "\n".join(p.format() for p in result.errors + result.warnings)
    if case.warning:
        assert result.errors == []
    assert unaffected_files(result) == unaffected_files(baseline)
    assert unaffected_files(baseline), "the unaffected Subscription rendered nothing"
    # errors.yaml carries the same problem for the hub and `gitfleet status`.
    listed = yaml.safe_load(result.files["errors.yaml"])
    entries = listed["warnings" if case.warning else "errors"]
    assert any(e["path"] == case.path and case.message in e["message"] for e in entries)


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.id)
def test_broken_file_never_loses_what_rendered_before(case: Broken) -> None:
    good = render(load_fleet({**GOOD, **case.base}))
    result = render(load_fleet({**GOOD, **case.base, **case.files}), previous_files=good.files)
    before = {p for p in good.files if p.startswith("clusters/")}
    assert before <= set(result.files)
    assert unaffected_files(result) == unaffected_files(good)


def test_json_patch_to_a_missing_path_leaves_the_object_unpatched() -> None:
    case = next(c for c in CORPUS if c.id == "json-patch-missing-path")
    good = render(load_fleet(GOOD))
    result = render(load_fleet({**GOOD, **case.files}))
    [warning] = result.warnings
    assert "deep-one" in warning.message and "(cluster east)" in warning.message
    assert warning.path == "policies/web.yaml" and warning.obj == "Subscription/apps/web"
    obj = "clusters/east/apps/web/apps_Deployment_apps_web.yaml"
    assert result.files[obj] == good.files[obj]


@pytest.mark.parametrize("patch", [{"kind": None}, {"apiVersion": 5},
                                   {"metadata": {"name": "other"}}],
                         ids=["kind-removed", "api-version-changed", "renamed"])
def test_override_that_changes_what_identifies_the_object_is_an_error(patch: Any) -> None:
    import json

    good = render(load_fleet(GOOD))
    files = {**GOOD, "policies/l.yaml": doc(localization(
        "identity", "gitfleet-east", "web",
        [{"name": "change-id", "type": "MergePatch", "value": json.dumps(patch)}]))}
    result = render(load_fleet(files), previous_files=good.files)
    assert any("change-id" in e.message and "(cluster east)" in e.message
               for e in result.errors)
    obj = "clusters/east/apps/web/apps_Deployment_apps_web.yaml"
    assert result.files[obj] == good.files[obj]


def test_alias_bomb_is_refused_quickly_without_expanding() -> None:
    # A bigger bomb than the corpus one: 9**12 leaves if ever expanded.
    lines = ['apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol, namespace: apps}\ndata:\n',
             '  l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    for i in range(1, 12):
        lines.append(f"  l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n")
    fleet = load_fleet({**GOOD, "templates/bomb.yaml": "".join(lines).encode()})
    [error] = fleet.errors
    assert error.path == "templates/bomb.yaml" and "alias bomb" in error.message


def test_no_rendered_path_climbs_out_of_its_description_folder() -> None:
    climbing = {"apiVersion": "../../../../tmp/evil/v1", "kind": "Thing",
                "metadata": {"name": "t", "namespace": "apps"}}
    sub = {"apiVersion": APPS, "kind": "Subscription",
           "metadata": {"name": "evil", "namespace": "apps"},
           "spec": {"subscribers": [{"clusterAffinity": {}}], "feeds": [
               {"apiVersion": climbing["apiVersion"], "kind": "Thing", "name": "t",
                "namespace": "apps"}]}}
    result = render(load_fleet({**GOOD, "templates/evil.yaml": doc(climbing),
                                "policies/evil.yaml": doc(sub)}))
    assert not [p for p in result.files if ".." in p]
    assert any(e.path == "templates/evil.yaml" for e in result.errors)
    assert any(e.path == "policies/evil.yaml" and "feed not found" in e.message
               for e in result.errors)


def test_a_problem_reads_as_path_line_object_message() -> None:
    case = next(c for c in CORPUS if c.id == "wrong-type")
    result = render(load_fleet({**GOOD, **case.files}))
    assert [p.format() for p in result.errors] == [
        "policies/two.yaml:11: Subscription/apps/two: spec.subscribers[0].weight: 'two' is not "
        "of type 'integer'"]


# --- errors keep deployed state ------------------------------------------------------------

def description(result: RenderResult, cluster: str, folder: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        result.files[f"clusters/{cluster}/{folder}/description.yaml"])
    return data


def folder_files(result: RenderResult, cluster: str, folder: str) -> dict[str, bytes]:
    prefix = f"clusters/{cluster}/{folder}/"
    return {p[len(prefix):]: d for p, d in result.files.items() if p.startswith(prefix)}


def assert_kept(good: RenderResult, now: RenderResult, folder: str) -> None:
    for cluster in ("east", "west"):
        before = folder_files(good, cluster, folder)
        after = folder_files(now, cluster, folder)
        assert before and set(after) == set(before)
        for name in before:
            if name != "description.yaml":
                assert after[name] == before[name], name
        spec = description(now, cluster, folder)["spec"]
        assert spec["renderErrors"], f"{cluster}: kept Description does not say why"
        old = description(good, cluster, folder)["spec"]
        assert spec["resources"] == old["resources"]
        assert old["renderErrors"] == []


def test_subscription_whose_feed_went_missing_keeps_its_last_good_descriptions() -> None:
    good = render(load_fleet(GOOD))
    broken = {p: d for p, d in GOOD.items() if p != "templates/web.yaml"}
    now = render(load_fleet(broken), previous_files=good.files)
    assert_kept(good, now, "apps/web")
    [error] = now.errors
    assert error.path == "policies/web.yaml" and "feed not found" in error.message
    reasons = description(now, "east", "apps/web")["spec"]["renderErrors"]
    assert any("apps/v1 Deployment apps/web" in r for r in reasons)
    assert unaffected_files(now) == unaffected_files(good)


def test_broken_policy_file_keeps_the_descriptions_of_its_subscription() -> None:
    good = render(load_fleet(GOOD))
    now = render(load_fleet({**GOOD, "policies/web.yaml": b"spec: [unclosed\n"}),
                 previous_files=good.files)
    assert_kept(good, now, "apps/web")
    assert any(e.path == "policies/web.yaml" and "invalid YAML" in e.message for e in now.errors)
    assert unaffected_files(now) == unaffected_files(good)


def test_policy_failing_schema_keeps_the_descriptions_of_its_subscription() -> None:
    good = render(load_fleet(GOOD))
    now = render(load_fleet({**GOOD, "policies/web.yaml": doc(
        subscription("web", "web", weight=-1))}), previous_files=good.files)
    assert_kept(good, now, "apps/web")


def test_broken_template_file_keeps_the_descriptions_that_held_it() -> None:
    good = render(load_fleet(GOOD))
    now = render(load_fleet({**GOOD, "templates/web.yaml": b"\xff\xfe not yaml"}),
                 previous_files=good.files)
    assert_kept(good, now, "apps/web")
    assert any(e.path == "templates/web.yaml" and "UTF-8" in e.message for e in now.errors)


def test_broken_cluster_file_keeps_the_whole_subtree_of_that_cluster() -> None:
    good = render(load_fleet(GOOD))
    now = render(load_fleet({**GOOD, "clusters/west.yaml": b"metadata: [\n"}),
                 previous_files=good.files)
    west = {p: d for p, d in good.files.items() if p.startswith("clusters/west/")}
    assert west and {p: d for p, d in now.files.items() if p.startswith("clusters/west/")} == west
    assert any(e.path == "clusters/west.yaml" and "invalid YAML" in e.message
               for e in now.errors)


def test_broken_cluster_file_leaves_the_division_of_other_clusters_alone() -> None:
    good = render(load_fleet(GOOD))
    now = render(load_fleet({**GOOD, "clusters/west.yaml": b"metadata: [\n"}),
                 previous_files=good.files)
    assert {p: d for p, d in now.files.items() if p.startswith("clusters/east/")} == \
        {p: d for p, d in good.files.items() if p.startswith("clusters/east/")}


def test_cluster_file_failing_schema_keeps_the_whole_subtree_of_that_cluster() -> None:
    good = render(load_fleet(GOOD))
    bad = managed_cluster("west", {"env": "prod"})
    bad["spec"]["syncMode"] = "Sometimes"
    now = render(load_fleet({**GOOD, "clusters/west.yaml": doc(bad)}), previous_files=good.files)
    west = {p: d for p, d in good.files.items() if p.startswith("clusters/west/")}
    assert {p: d for p, d in now.files.items() if p.startswith("clusters/west/")} == west
    assert any(e.path == "clusters/west.yaml" and "syncMode" in e.message for e in now.errors)


def test_a_fixed_fleet_renders_as_before_the_break() -> None:
    good = render(load_fleet(GOOD))
    broken = render(load_fleet({**GOOD, "policies/web.yaml": b"{"}), previous_files=good.files)
    fixed = render(load_fleet(GOOD), previous_files=broken.files)
    assert fixed.files == good.files
    assert fixed.errors == []


# --- the commands a user runs, on a real Git repo ------------------------------------------

CLUSTERS = ("prod-east", "prod-west", "staging")


def gitfleet(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The command in this process (`gitfleet.cli.main`): a crash fails the test with its
    traceback, as it would print one from a process."""
    return gitfleet_here(*map(str, args))


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode in (0, 1), done.stderr


@pytest.mark.slow
def test_a_date_in_one_annotation_crashes_no_command_and_blocks_no_other_change(
        tmp_path: Path) -> None:
    """Issue 9: `released: 2024-01-01` in one annotation made validate, render and the hub
    crash, and the hub then rendered nothing, blocking an unrelated change."""
    repo = example_repo(tmp_path / "fleet")
    base = git(repo, "rev-parse", "HEAD").strip()
    assert gitfleet("hub", "--repo", repo, "--once").returncode == 0
    good = {c: git(repo, "ls-tree", "-r", STATE, f"clusters/{c}") for c in CLUSTERS}
    edit(repo, "templates/web/web.yaml", "  name: web\n",
         "  name: web\n  annotations:\n    released: 2024-01-01\n")
    edit(repo, "policies/api/localization-staging.yaml", '"value": 1}', '"value": 2}')
    head = commit(repo, "web: released annotation; staging: two api replicas")
    where = "templates/web/web.yaml:6"

    checked = gitfleet("validate", repo)
    _no_traceback(checked)
    assert checked.returncode == 1 and where in checked.stdout + checked.stderr
    assert "quote it: '2024-01-01'" in checked.stdout + checked.stderr

    out = tmp_path / "out"
    rendered = gitfleet("render", repo, "--out", out)
    _no_traceback(rendered)
    assert where in rendered.stdout + rendered.stderr
    assert "replicas: 2" in (out / "clusters/staging/api/api/apps_Deployment_api_api.yaml"
                             ).read_text()
    assert not (tmp_path / "fleet" / "out").exists()

    diffed = gitfleet("diff", base, head, "--repo", repo)
    _no_traceback(diffed)
    assert where in diffed.stdout and "Deployment api/api 1→2" in diffed.stdout

    hub = gitfleet("hub", "--repo", repo, "--once")
    _no_traceback(hub)
    assert hub.returncode == 0 and where in hub.stdout + hub.stderr, hub.stdout + hub.stderr
    assert source_of(repo) == head  # the unrelated change landed
    assert "replicas: 2" in git(repo, "show", f"{STATE}:clusters/staging/api/api/"
                                              "apps_Deployment_api_api.yaml")
    for c in ("prod-east", "prod-west"):  # the objects that came from web are kept as they were
        assert objects(git(repo, "ls-tree", "-r", STATE, f"clusters/{c}")) == objects(good[c])
    assert where in git(repo, "show", f"{STATE}:errors.yaml").replace("\n  line: ", ":")


def objects(listing: str) -> list[str]:
    return [line for line in listing.splitlines() if not line.endswith("/description.yaml")]


def test_a_broken_file_is_reported_before_the_errors_it_causes() -> None:
    # web's template does not parse, so web's Subscription misses its feed: the cause first.
    result = render(load_fleet({**GOOD, "templates/web.yaml": b"kind: Deployment\nspec: [1,\n"}))
    messages = [p.format() for p in result.errors]
    assert len(messages) == 2, messages
    assert messages[0].startswith("templates/web.yaml:3: invalid YAML")
    assert messages[1].startswith("policies/web.yaml:1: Subscription/apps/web: feed not found")
