"""The upstream examples (shared/conformance, unchanged): they load, validate, and render to what
their own comments promise.

Each example folder becomes a fleet in memory: files whose documents are all policy kinds go under
`policies/`, every other file (plain manifests, HelmCharts, files mixing a template and a policy)
under `templates/`, keeping the example's sub-folders. The only files written here are the
`clusters/*.yaml` ManagedClusters whose labels, names and dedicated namespaces match what the
example selects (and one template the fieldpatch example names but does not ship, see there).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet import yamlio
from gitfleet.cli import main
from gitfleet.model.loader import POLICY_KINDS, load_fleet
from gitfleet.model.objects import group_of
from gitfleet.render.charts import ChartOutput, ChartRequest, is_chart_problem
from gitfleet.render.core import RenderResult, render
from gitfleet.render.status import ClusterCapacity, StatusSnapshot
from tests.conftest import CONFORMANCE

CLUSTER_ID = "clusters.clusternet.io/cluster-id"
CLUSTER_NAME = "clusters.clusternet.io/cluster-name"
ID_1 = "dc91021d-2361-4f6d-a404-7c33b9e01118"  # weight 1 in the static examples
ID_2 = "5f9da921-0437-4fea-a89d-42aa1ede9b25"  # weight 2
ID_NFD = "d1b34d4c-9deb-4b3b-949d-5454eb35b929"
NFD_LABEL = "node.clusternet.io/sample-key"


# --- building a fleet from an example ------------------------------------------------------

def is_policy_file(path: Path) -> bool:
    docs = yamlio.load_documents(path.read_bytes(), str(path))
    return bool(docs) and all(
        (group_of(d.data["apiVersion"]), d.data["kind"]) in POLICY_KINDS for d in docs)


def example_files(folder: str, *, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    base = CONFORMANCE / folder
    files = {}
    for path in sorted(base.rglob("*.yaml")):
        rel = path.relative_to(base).as_posix()
        if rel in skip:
            continue
        top = "policies" if is_policy_file(path) else "templates"
        files[f"{top}/{rel}"] = path.read_bytes()
    assert files, f"no example files in {base}"
    return files


def managed_cluster(name: str, labels: dict[str, str] | None = None, *, cluster_id: str = "",
                    namespace: str = "") -> tuple[str, bytes]:
    """A cluster file as registration writes it: `spec.clusterId` (which gitfleet turns into
    the `cluster-id` label, as Clusternet's approver does) and only the cluster's own labels;
    the `cluster-name` label is its name."""
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    spec = {"syncMode": "Pull", **({"clusterId": cluster_id} if cluster_id else {})}
    body = {"apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
            "metadata": meta, "spec": spec}
    return f"clusters/{name}.yaml", yaml.safe_dump(body, sort_keys=False).encode()


def capacity(cpu: str, memory: str = "8Gi", *, cpu_used: str = "0") -> ClusterCapacity:
    return ClusterCapacity(allocatable={"cpu": cpu, "memory": memory},
                           requested={"cpu": cpu_used, "memory": "0"})


# --- reading a render ----------------------------------------------------------------------

class Rendered:
    """A render result read the way a user reads the state tree."""

    def __init__(self, result: RenderResult) -> None:
        self.result = result

    def folders(self, cluster: str) -> set[str]:
        """`<ns>/<name>` of every Description in a cluster."""
        prefix = f"clusters/{cluster}/"
        return {p[len(prefix):].rsplit("/", 1)[0] for p in self.result.files
                if p.startswith(prefix) and p.endswith("/description.yaml")}

    def description(self, cluster: str, folder: str) -> dict[str, Any]:
        data: dict[str, Any] = yaml.safe_load(
            self.result.files[f"clusters/{cluster}/{folder}/description.yaml"])
        return data

    def objects(self, cluster: str, folder: str) -> dict[str, dict[str, Any]]:
        """`Kind/namespace/name` -> body, for every resource a Description lists."""
        out = {}
        for r in self.description(cluster, folder)["spec"]["resources"]:
            body = yaml.safe_load(self.result.files[f"clusters/{cluster}/{folder}/{r['file']}"])
            out[f"{r['kind']}/{r['namespace']}/{r['name']}"] = body
        return out

    def obj(self, cluster: str, folder: str, ident: str) -> dict[str, Any]:
        return self.objects(cluster, folder)[ident]

    def clusters(self) -> set[str]:
        return {p.split("/")[1] for p in self.result.files if p.startswith("clusters/")}


@dataclass(frozen=True)
class Example:
    id: str
    folder: str
    clusters: list[tuple[str, bytes]]
    check: Callable[[Rendered], None]
    status: StatusSnapshot = field(default_factory=StatusSnapshot)
    skip: tuple[str, ...] = ()
    extra: dict[str, Callable[[], bytes]] = field(default_factory=dict)  # read when run
    # what gitfleet warns about, each matched by one warning: nothing is placed or dropped
    # in silence (a template nothing delivers, a kind whose scope is a guess)
    warns: tuple[str, ...] = ()

    def warned(self, warnings: list[str]) -> bool:
        return len(warnings) == len(self.warns) and all(
            sum(w in line for line in warnings) == 1 for w in self.warns)

    def files(self) -> dict[str, bytes]:
        files = example_files(self.folder, skip=self.skip)
        files.update({path: make() for path, make in self.extra.items()})
        files.update(dict(self.clusters))
        return files


# --- the examples' charts ------------------------------------------------------------------

def recorded_chart(request: ChartRequest) -> ChartOutput:
    """The examples' charts are on the public internet: this chart source renders one
    ConfigMap recording what the render asked for (tests/charts renders real charts)."""
    asked = {"chart": request.spec["chart"], "version": request.spec.get("version", ""),
             "values": dict(request.values)}
    doc = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": f"{request.release}-rendered"},
           "data": {"asked": json.dumps(asked, sort_keys=True)}}
    return ChartOutput((doc,), request.spec["repo"], asked["chart"], asked["version"],
                       "sha256:" + "0" * 64)


def asked(r: Rendered, cluster: str, folder: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(r.obj(cluster, folder, f"ConfigMap/{name}")["data"]["asked"])
    return found


# --- what each example promises ------------------------------------------------------------

def check_static_dividing(r: Rendered) -> None:
    # "weight: 1 # Deployment bar/my-nginx will have 2 replicas", "weight: 2 # ... 4 replicas"
    folder = "default/static-dividing-scheduling-demo"
    for cluster, want in (("weight-one", 2), ("weight-two", 4)):
        objs = r.objects(cluster, folder)
        assert set(objs) == {"Namespace//bar", "Service/bar/my-nginx-svc",
                             "Deployment/bar/my-nginx"}
        assert objs["Deployment/bar/my-nginx"]["spec"]["replicas"] == want
    assert r.folders("unselected") == set()


def check_dynamic_dividing(r: Rendered) -> None:
    # 6 replicas of 500m cpu: "big" has room for 8, "small" for 4 -> 4 and 2
    folder = "default/dynamic-dividing-scheduling-demo"
    got = {c: r.obj(c, folder, "Deployment/qux/my-nginx")["spec"]["replicas"]
           for c in ("big", "small")}
    assert got == {"big": 4, "small": 2}
    assert r.folders("no-id") == set()
    assert set(r.objects("small", folder)) == {"Namespace//qux", "Service/qux/my-nginx-svc",
                                               "Deployment/qux/my-nginx"}


def check_replication(r: Rendered) -> None:
    # Only the cluster with the subscribed cluster-id is bound.
    assert r.folders("area2-cluster") == set()
    assert r.folders("area1-cluster") == {"default/app-demo", "default/app-demo@helm"}
    objs = r.objects("area1-cluster", "default/app-demo")
    assert set(objs) == {"Namespace//foo", "Service/foo/my-nginx-svc", "Deployment/foo/my-nginx"}
    nginx = objs["Deployment/foo/my-nginx"]
    # Globalization (area1-cluster matches): add two labels, then remove another-label.
    # Lower-priority Localization: add deployed-in-cluster, scale to 1; the higher-priority one
    # scales to 3 and, being later, wins ("this value will be overridden ... eventually").
    assert nginx["metadata"]["labels"] == {"clusternet-app": "multi-cluster-nginx",
                                           "some-label": "some-value",
                                           "deployed-in-cluster": "clusternet-5l82l"}
    assert nginx["spec"]["replicas"] == 3
    assert nginx["metadata"]["annotations"] == {"foo": "bar"}
    containers = nginx["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("nginx-container", "nginx:1.14.0-alpine"), ("redis-container", "redis:6.2.5")]
    desc = r.description("area1-cluster", "default/app-demo")["spec"]
    assert desc["deployer"] == "generic"
    assert [o["name"] for o in desc["overrides"]] == [
        "nginx-global-overrides-demo", "nginx-local-overrides-demo-higher-priority",
        "nginx-local-overrides-demo-lower-priority"]
    # The HelmChart feed: rendered (by the chart renderer) with the Globalization's and then
    # the Localization's values merged, and chart overrides where the Localization comes last.
    helm = r.description("area1-cluster", "default/app-demo@helm")["spec"]
    assert helm["deployer"] == "generic"
    assert [(c["chart"], c["version"]) for c in helm["charts"]] == [("mysql", "9.1.8")]
    assert set(r.objects("area1-cluster", "default/app-demo@helm")) == {
        "Namespace//abc", "ConfigMap/abc/mysql-rendered"}
    chart = asked(r, "area1-cluster", "default/app-demo@helm", "abc/mysql-rendered")
    assert chart["values"] == {
        "commonLabels": {"clusternet.io/override-by": "clusternet-hub",
                         "some-label": "some-value"},
        "primary": {"persistence": {"enabled": False}},
        "image": {"tag": "8.0.26-debian-10-r39"},
        "auth": {"database": "database_for_clusternet-5l82l"},
    }
    assert chart["version"] == "9.1.8" and chart["chart"] == "mysql"


def check_replication_without_localization_cluster(r: Rendered) -> None:
    # The Globalization alone (area2 is bound here, not area1's namespace): version 9.1.0.
    chart = asked(r, "area2-cluster", "default/app-demo@helm", "abc/mysql-rendered")
    assert chart["version"] == "9.1.0"
    assert "image" not in chart["values"]
    nginx = r.obj("area2-cluster", "default/app-demo", "Deployment/foo/my-nginx")
    assert nginx["spec"]["replicas"] == 3
    assert nginx["metadata"]["labels"] == {"clusternet-app": "multi-cluster-nginx",
                                           "some-label": "some-value"}
    assert "annotations" not in nginx["metadata"]


SERVER_CONF = {"db_address": "127.0.0.1:3306", "region_id": "default", "zone_id": "default"}


def check_fieldpatch(r: Rendered) -> None:
    import json

    folder = "default/dynamic-dividing-scheduling-demo"
    west = r.obj("us-west", folder, "ConfigMap/qux/server-conf")
    east = r.obj("us-east", folder, "ConfigMap/qux/server-conf")
    west_conf = json.loads(west["data"]["server.conf"])
    east_conf = json.loads(east["data"]["server.conf"])
    assert {k: west_conf[k] for k in SERVER_CONF} == {
        "db_address": "local:3306", "region_id": "us-west-1", "zone_id": "zone-1"}
    assert {k: east_conf[k] for k in SERVER_CONF} == SERVER_CONF
    # The rest of the field is untouched.
    assert west_conf["server"] == east_conf["server"] and west_conf["server"]["bind_port"] == 8080
    assert west_conf["metric"]["exporter_thread_num"] == 8
    # Dynamic dividing of a Deployment that requests nothing: room is no limit, so the 3
    # replicas are split evenly, the odd one to the first name.
    got = {c: r.obj(c, folder, "Deployment/qux/my-server")["spec"]["replicas"]
           for c in ("us-east", "us-west")}
    assert got == {"us-east": 2, "us-west": 1}


def check_scheduling_group_replication(r: Rendered) -> None:
    folder = "default/replication-scheduling-demo"
    for c in ("sh-1", "sh-2", "bj-1"):
        assert r.obj(c, folder, "Deployment/qux/my-nginx")["spec"]["replicas"] == 6
    assert r.folders("gz-1") == set()


def check_scheduling_group_static(r: Rendered) -> None:
    folder = "default/static-dividing-scheduling-demo"
    got = {c: r.obj(c, folder, "Deployment/qux/my-nginx")["spec"]["replicas"]
           for c in ("sh-1", "bj-1")}
    assert got == {"sh-1": 4, "bj-1": 2}  # weights 2 (ap-shanghai) and 1 (ap-beijing) of 6
    assert r.folders("gz-1") == set()


def check_scheduling_group_dynamic(r: Rendered) -> None:
    folder = "default/dynamic-dividing-scheduling-demo"
    got = {c: r.obj(c, folder, "Deployment/qux/my-nginx")["spec"]["replicas"]
           for c in ("sh-1", "bj-1")}
    assert got == {"sh-1": 2, "bj-1": 4}  # room 4 and 8 (2 and 4 cpu at 500m each)


def check_mcs(r: Rendered) -> None:
    folder = "default/scheduling-with-mcs-api"
    for cluster, want in (("weight-one", 2), ("weight-two", 4)):
        objs = r.objects(cluster, folder)
        assert objs["Deployment/baz/nginx-app"]["spec"]["replicas"] == want
        export = objs["ServiceExport/baz/nginx-svc"]
        assert export["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"
        assert export["metadata"]["labels"] == {"apps.clusternet.io/subs.namespace": "default"}
    # The ServiceImport is a template no Subscription feeds: it goes nowhere.
    assert not any("ServiceImport" in p for p in r.result.files)


def check_nfd(r: Rendered) -> None:
    # day0: the NFD chart, its namespace and the NodeFeatureRule to the cluster with the id.
    assert r.folders("nfd-child") == {"default/nfd-all-children",
                                      "default/nfd-all-children@helm",
                                      "default/scheduling-with-nfd-demo"}
    plain = r.objects("nfd-child", "default/nfd-all-children")
    assert set(plain) == {"Namespace//node-feature-discovery",
                          "NodeFeatureRule/default/label-aggregate-rule"}
    rule = plain["NodeFeatureRule/default/label-aggregate-rule"]
    assert rule["spec"]["rules"][0]["labels"] == {NFD_LABEL: "sample-value"}
    chart = asked(r, "nfd-child", "default/nfd-all-children@helm",
                  "node-feature-discovery/node-feature-discovery-rendered")
    assert chart["values"] == {"master": {"extraLabelNs": ["node.clusternet.io"]}}
    assert chart["version"] == "0.11.2"
    assert r.description("nfd-child", "default/nfd-all-children@helm")["spec"]["deployer"] == \
        "generic"
    # day1: the app goes to every cluster carrying the label NFD puts on it, and only there.
    assert r.folders("labelled") == {"default/scheduling-with-nfd-demo"}
    assert set(r.objects("labelled", "default/scheduling-with-nfd-demo")) == {
        "Namespace//nfd-app-ns", "Deployment/nfd-app-ns/my-nginx-nfd"}
    # Static dividing without any weight: upstream divides nothing (StaticDivideReplicas
    # returns early), so each cluster runs the template's 6 replicas.
    app = r.obj("labelled", "default/scheduling-with-nfd-demo",
                "Deployment/nfd-app-ns/my-nginx-nfd")
    assert app["spec"]["replicas"] == 6
    assert r.folders("plain") == set()


def check_oci(r: Rendered) -> None:
    # A HelmChart from an OCI registry that no Subscription feeds: valid, delivered nowhere.
    assert r.folders("c1") == set()


def check_karmada_nginx(r: Rendered) -> None:
    folder = "default/nginx-propagation"
    m1 = r.obj("member1", folder, "Deployment/default/nginx")
    m2 = r.obj("member2", folder, "Deployment/default/nginx")
    assert (m1["spec"]["replicas"], m2["spec"]["replicas"]) == (1, 1)
    # member2: labels added ("remove for" and "replace bar" find nothing to act on).
    assert m2["metadata"]["labels"] == {"app": "nginx", "env": "skoala-dev",
                                        "env-stat": "skoala-stage"}
    assert "annotations" not in m2["metadata"]
    # member1: annotations.
    assert m1["metadata"]["labels"] == {"app": "nginx"}
    assert m1["metadata"]["annotations"] == {"env": "skoala-stage"}
    assert r.folders("member3") == set()
    assert r.description("member1", folder)["spec"]["source"]["kind"] == "PropagationPolicy"


def check_karmada_guestbook(r: Rendered) -> None:
    assert r.folders("member1") == {"_cluster/example-policy", "default/example-policy"}
    crd = r.objects("member1", "_cluster/example-policy")
    assert set(crd) == {"CustomResourceDefinition//guestbooks.webapp.my.domain"}
    assert "status" not in crd["CustomResourceDefinition//guestbooks.webapp.my.domain"]
    book = r.obj("member1", "default/example-policy", "Guestbook/default/guestbook-sample")
    assert book["spec"] == {"size": 4, "configMapName": "test", "alias": "Name"}
    assert book["metadata"]["annotations"] == {"OverridePolicy": "test"}
    assert r.folders("member2") == set()
    claims = yaml.safe_load(r.result.files["claims.yaml"])["claims"]
    assert {c["policy"] for c in claims} == {"ClusterPropagationPolicy//example-policy",
                                             "PropagationPolicy/default/example-policy"}


# The fieldpatch example's Subscription feeds `Deployment qux/my-server`, but its manifest
# names the Deployment `server-deployment` (an upstream slip). The feed stays as written; this
# one template, the example's own Deployment renamed, makes the Subscription renderable.
def _my_server() -> bytes:
    docs = yamlio.load_documents(
        (CONFORMANCE / "clusternet/fieldpatch/server-deployment.yaml").read_bytes(), "x")
    deployment = next(d.data for d in docs if d.data["kind"] == "Deployment")
    deployment["metadata"]["name"] = "my-server"
    return yaml.safe_dump(deployment, sort_keys=False).encode()


SCHEDULING_GROUP = ("subscription-replication.yaml", "subscription-static-dividing.yaml",
                    "subscription-dynamic-dividing.yaml")


def _only(keep: str) -> tuple[str, ...]:
    return tuple(f for f in SCHEDULING_GROUP if f != keep)


GROUP_CLUSTERS = [managed_cluster("sh-1", {"region": "ap-shanghai"}),
                  managed_cluster("bj-1", {"region": "ap-beijing"}),
                  managed_cluster("gz-1", {"region": "ap-guangzhou"})]

EXAMPLES = [
    Example("static-dividing", "clusternet/static-dividing-scheduling", [
        managed_cluster("weight-one", cluster_id=ID_1),
        managed_cluster("weight-two", cluster_id=ID_2),
        managed_cluster("unselected", cluster_id="00000000-0000-0000-0000-000000000000"),
    ], check_static_dividing),
    Example("dynamic-dividing", "clusternet/dynamic-dividing-scheduling", [
        managed_cluster("big", cluster_id=ID_1),
        managed_cluster("small", cluster_id=ID_2),
        managed_cluster("no-id", {"env": "dev"}),
    ], check_dynamic_dividing,
        status=StatusSnapshot(capacity={"big": capacity("6", cpu_used="2"),
                                        "small": capacity("2"), "no-id": capacity("64")})),
    Example("replication", "clusternet/replication-scheduling", [
        managed_cluster("area1-cluster", cluster_id=ID_1, namespace="clusternet-5l82l"),
        managed_cluster("area2-cluster", cluster_id=ID_2),
    ], check_replication),
    Example("replication-globalization-only", "clusternet/replication-scheduling", [
        managed_cluster("area1-cluster", cluster_id=ID_2, namespace="clusternet-5l82l"),
        managed_cluster("area2-cluster", cluster_id=ID_1),
    ], check_replication_without_localization_cluster),
    Example("fieldpatch", "clusternet/fieldpatch", [
        managed_cluster("us-west"),
        managed_cluster("us-east"),
    ], check_fieldpatch, extra={"templates/gitfleet-test/my-server.yaml": _my_server},
        warns=("templates/server-deployment.yaml: Namespace/qux: not delivered to any "
               "cluster: no Subscription feeds and no propagation policy selects Namespace/qux, "
               "Deployment/qux/server-deployment",),
        status=StatusSnapshot(capacity={"us-west": capacity("4"), "us-east": capacity("4")})),
    Example("scheduling-group-replication", "clusternet/scheduling-group",
            [*GROUP_CLUSTERS, managed_cluster("sh-2", {"region": "ap-shanghai"})],
            check_scheduling_group_replication,
            skip=_only("subscription-replication.yaml")),
    Example("scheduling-group-static", "clusternet/scheduling-group", GROUP_CLUSTERS,
            check_scheduling_group_static, skip=_only("subscription-static-dividing.yaml")),
    Example("scheduling-group-dynamic", "clusternet/scheduling-group", GROUP_CLUSTERS,
            check_scheduling_group_dynamic, skip=_only("subscription-dynamic-dividing.yaml"),
            status=StatusSnapshot(capacity={"sh-1": capacity("2"), "bj-1": capacity("4")})),
    Example("mcs-api", "clusternet/scheduling-with-mcs-api", [
        managed_cluster("weight-one", cluster_id=ID_1),
        managed_cluster("weight-two", cluster_id=ID_2),
    ], check_mcs, warns=("templates/service-import.yaml:1: ServiceImport/default/my-svc: not "
                         "delivered to any cluster",)),
    Example("nfd", "clusternet/scheduling-with-nfd", [
        managed_cluster("nfd-child", {NFD_LABEL: "sample-value"}, cluster_id=ID_NFD),
        managed_cluster("labelled", {NFD_LABEL: "sample-value"}),
        managed_cluster("plain", cluster_id=ID_1),
    ], check_nfd, warns=("templates/day0/node-feature-rule.yaml:1: NodeFeatureRule/label-"
                         "aggregate-rule: the scope of NodeFeatureRule (nfd.k8s-sigs.io) is "
                         "unknown",)),
    Example("oci", "clusternet/oci", [managed_cluster("c1", cluster_id=ID_1)], check_oci,
            warns=("templates/oci-chart-mysql.yaml:1: HelmChart/default/mysql: not delivered "
                   "to any cluster",)),
    Example("karmada-nginx", "karmada/nginx", [
        managed_cluster("member1"), managed_cluster("member2"), managed_cluster("member3"),
    ], check_karmada_nginx),
    Example("karmada-guestbook", "karmada/guestbook", [
        managed_cluster("member1"), managed_cluster("member2"),
    ], check_karmada_guestbook),
]


def example_folders() -> set[str]:
    return {f"{d.parent.name}/{d.name}" for d in CONFORMANCE.glob("*/*") if d.is_dir()}


def test_every_example_folder_is_covered() -> None:
    assert example_folders() == {e.folder for e in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_example_loads_without_problems(example: Example) -> None:
    files = example.files()
    fleet = load_fleet(files)
    assert [p.format() for p in fleet.errors] == []
    # the loader's warnings are the scope guesses; the render adds what nothing delivers
    assert all(any(w in p.format() for w in example.warns) for p in fleet.warnings), \
        [p.format() for p in fleet.warnings]
    loaded_from = {t.origin.path for t in fleet.templates.values()}
    loaded_from |= {s.origin.path for s in fleet.subscriptions}
    loaded_from |= {o.origin.path for o in (*fleet.globalizations, *fleet.localizations)}
    loaded_from |= {p.origin.path for p in fleet.propagations}
    loaded_from |= {k.origin.path for k in fleet.karmada_overrides}
    assert loaded_from | {p for p in files if p.startswith("clusters/")} == set(files)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_example_renders_what_its_comments_promise(example: Example) -> None:
    result = render(load_fleet(example.files()), status=example.status, charts=recorded_chart)
    assert [p.format() for p in result.errors] == []
    assert example.warned([p.format() for p in result.warnings]), \
        [p.format() for p in result.warnings]
    rendered = Rendered(result)
    assert rendered.clusters() == {p.split("/")[1].rsplit(".", 1)[0]
                                   for p, _ in example.clusters}
    example.check(rendered)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_gitfleet_validate_accepts_the_example(example: Example, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for rel, data in example.files().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    code = main(["validate", str(tmp_path), "--chart-cache", str(tmp_path / "charts")])
    out = capsys.readouterr().out
    lines = out.splitlines()
    # validate renders HelmCharts as the hub does: the examples' charts are on the public
    # internet, which tests do not reach; each such chart is an error naming it and its file
    charts = [line for line in lines[:-1] if is_chart_problem(line)]
    assert all("HelmChart default/" in line and "(templates/" in line for line in charts), out
    assert code == (1 if charts else 0), out
    assert f": {len(charts)} errors, " in lines[-1]
    # validate knows no cluster status: dynamic division can only say it has none yet.
    warned = [line for line in lines[:-1] if line not in charts and not (
        line.startswith("warning: ") and "has reported its capacity yet" in line)]
    assert all(line.startswith("warning: ") for line in warned), out
    assert example.warned(warned), out


def test_fieldpatch_example_as_shipped_names_its_missing_feed(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    """Without the renamed template, the upstream Subscription's feed `my-server` is missing:
    every file still loads, and validate names the Subscription, its file and the feed."""
    example = next(e for e in EXAMPLES if e.id == "fieldpatch")
    files = {p: d for p, d in example.files().items() if "gitfleet-test" not in p}
    assert load_fleet(files).errors == ()
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    assert main(["validate", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("policies/subscription.yaml:1: Subscription/default/"
                        "dynamic-dividing-scheduling-demo: feed not found: apps/v1 Deployment "
                        "qux/my-server")
    # the template the feed meant to name, now nothing delivers it
    assert lines[1] == ("warning: templates/server-deployment.yaml: Namespace/qux: not "
                        "delivered to any cluster: no Subscription feeds and no propagation "
                        "policy selects Namespace/qux, Deployment/qux/server-deployment")
    assert lines[-1].endswith("1 errors, 1 warnings")
