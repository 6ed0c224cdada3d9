"""`render`, `diff` and `validate` show what the hub commits: three clusters at Kubernetes
1.30, 1.32 and 1.33 report their capabilities in their status branches (written by the agent's
own status writer), and three charts whose output depends on the version and on the served
API versions render through the hub, `render --out` of a reviewer's clone and `diff` to the
same bytes, which are exactly what `helm template` prints with the cluster's `--kube-version`
and `--api-versions`, and which apply to kubesim. The commands run in this process
(`gitfleet.cli.main`; helm is still its own process)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.charts.renderer import Charts
from gitfleet.clock import isoformat
from gitfleet.diff.compare import compare_cluster
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git, init_repo
from gitfleet.state.store import open_store
from gitfleet.wire.status import ClusterStatus, Heartbeat
from tests.charts.chartrepo import HELM
from tests.charts.helmtemplate import LIBRARY, copy_chart, helm_template
from tests.harness import Remote, clone, gitfleet_here, person, push, wait_for
from tests.render.conftest import cluster, doc, subscription

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(HELM is None, reason="helm is not installed (tools/setup)")]

SERVED = ("v1", "apps/v1", "batch/v1", "autoscaling/v1", "autoscaling/v2", "policy/v1",
          "networking.k8s.io/v1", "rbac.authorization.k8s.io/v1", "apiextensions.k8s.io/v1",
          "admissionregistration.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1",
          "storage.k8s.io/v1")
# cluster -> (the version its API server reports, the group/versions it serves)
CLUSTERS = {
    "old": ("v1.30.4", SERVED),
    "mid": ("v1.32.2", (*SERVED, "monitoring.coreos.com/v1")),
    "new": ("v1.33.1", (*SERVED, "monitoring.coreos.com/v1", "autoscaling.k8s.io/v1")),
}
UIDS = {"old": "0f0f0f0f-0000-4000-8000-000000000001",
        "mid": "0f0f0f0f-0000-4000-8000-000000000002",
        "new": "0f0f0f0f-0000-4000-8000-000000000003"}
# HelmChart name -> (chart, targetNamespace, values)
CHARTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "edge": ("gateway", "ingress", {"controller": {"replicaCount": 2,
                                                   "extraArgs": {"enable-metrics": "true"}},
                                    "admissionWebhook": {"enabled": True}}),
    "site": ("webapp", "web", {"hpa": {"enabled": True}, "serviceMonitor": {"enabled": True},
                               "env": [{"name": "REGION", "value": "eu"}]}),
    "ksm": ("statemetrics", "monitoring", {"verticalPodAutoscaler": {"enabled": True},
                                           "image": {"sha": "ab" * 32}}),
}


def _fleet() -> dict[str, bytes]:
    files = dict(cluster(name, {"env": "prod"}, clusterId=UIDS[name]) for name in CLUSTERS)
    files["fleet.yaml"] = doc({"apiVersion": "gitfleet.io/v1alpha1", "kind": "FleetSettings",
                               "kubernetesVersion": "1.31"})
    feeds = []
    for name, (chart, namespace, values) in CHARTS.items():
        version = yaml.safe_load((LIBRARY / chart / "Chart.yaml").read_text())["version"]
        files[f"templates/{name}.yaml"] = doc({
            "apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"repo": "file://charts", "chart": chart, "version": version,
                     "targetNamespace": namespace, "values": values}})
        feeds.append({"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart",
                      "name": name})
    files["policies/platform.yaml"] = doc(subscription(
        "platform", feeds, [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}]))
    return files


def _report(remote: Remote, tmp: Path) -> None:
    """Each cluster's status as its agent writes it: the agent's status writer, a heartbeat
    with the cluster's version and served API versions."""
    for name, (version, served) in CLUSTERS.items():
        branch = StatusBranch(init_repo(tmp / f"agent-{name}.git", bare=True), remote.url,
                              Branches(), name)
        beat = Heartbeat(time=isoformat(time.time()), interval_seconds=60, cluster_id=UIDS[name],
                         kubernetes_version=version, agent_version="0.1.0", healthz=True,
                         livez=True, readyz=True, nodes_ready=1,
                         allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"},
                         requested={"cpu": "0", "memory": "0"}, api_versions=served)
        branch.write(ClusterStatus(cluster=name, heartbeat=beat), when=time.time())


def _branch_files(git: Git, ref: str) -> dict[str, bytes]:
    listing = git.ls_tree(ref, "")
    blobs = git.read_objects(listing.values())
    return {path: blobs[sha] for path, sha in listing.items()}


def _out_files(out: Path, name: str) -> dict[str, bytes]:
    top = out / "clusters" / name
    return {p.relative_to(top).as_posix(): p.read_bytes() for p in top.rglob("*") if p.is_file()}


def _objects(files: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    out = {}
    for path, data in files.items():
        if path.count("/") == 2 and not path.endswith("description.yaml"):
            body = yaml.safe_load(data)
            meta = body["metadata"]
            out[f"{body['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = body
    return out


def _units(files: dict[str, bytes]) -> dict[str, dict[str, bytes]]:
    """`<ns>/<name>` Description folder -> file -> bytes, as `diff` groups a cluster."""
    out: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        parts = path.split("/")
        if len(parts) == 3:
            out.setdefault(f"{parts[0]}/{parts[1]}", {})[parts[2]] = data
    return out


def test_render_diff_and_the_hub_agree_with_each_cluster_and_with_helm(
        remote: Remote, kubesim: Any, tmp_path: Path) -> None:
    work = clone(remote.git.path, tmp_path / "work")
    for path, data in _fleet().items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_bytes(data)
    for chart, _, _ in CHARTS.values():
        copy_chart(chart, work)
    base = push(work, "three charts on three clusters")
    _report(remote, tmp_path)
    hub = Hub(open_store(str(remote.git.path)), settings=HubSettings(fleet_status=False),
              charts=Charts(tmp_path / "hub-charts"))
    first = hub.run_once()
    assert first is not None and first.result.errors == [], first and first.result.errors
    branches = Branches()
    hub_files = {name: _branch_files(remote.git, branches.cluster(name)) for name in CLUSTERS}

    # the version and the served API versions decide what each cluster gets
    objects = {name: _objects(files) for name, files in hub_files.items()}
    vpa = "VerticalPodAutoscaler/monitoring/ksm-statemetrics"
    monitor = "ServiceMonitor/web/site-webapp"
    assert vpa in objects["new"] and vpa not in objects["mid"] and vpa not in objects["old"]
    assert monitor in objects["new"] and monitor in objects["mid"] and monitor not in objects["old"]

    def args(name: str, key: str) -> list[str]:
        [container] = objects[name][key]["spec"]["template"]["spec"]["containers"]
        return list(container["args"])

    gated = "--endpointslice-traffic-distribution=PreferClose"
    assert [gated in args(n, "Deployment/ingress/edge-gateway-controller") for n in CLUSTERS] \
        == [False, False, True]
    assert ["--use-endpointslices=true" in args(n, "Deployment/monitoring/ksm-statemetrics")
            for n in CLUSTERS] == [False, True, True]

    # exactly what helm template prints with the cluster's --kube-version and --api-versions
    for name, (version, served) in CLUSTERS.items():
        expected: dict[str, dict[str, Any]] = {}
        for release, (chart, namespace, values) in CHARTS.items():
            expected.update(helm_template(work / "charts" / chart, release=release,
                                          namespace=namespace, values=[values],
                                          kube_version=version, api_versions=served,
                                          work=tmp_path / "helm" / name / release))
            expected[f"Namespace//{namespace}"] = {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": namespace}}
        assert objects[name] == expected, name

    # a reviewer's clone: `render --out` writes what the hub wrote, byte for byte
    review = clone(remote.url, tmp_path / "review")
    cache = ["--chart-cache", str(tmp_path / "cli-charts")]
    done = gitfleet_here("render", str(review), "--rev", "HEAD", "--out", str(tmp_path / "out"),
                         "-o", "json", *cache)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in CLUSTERS:
        assert _out_files(tmp_path / "out", name) == hub_files[name], name
    report = json.loads(done.stdout)["capabilities"]
    assert report["source"] == "status"
    assert report["refs"] == "refs/remotes/origin/gitfleet/status/* as last fetched"
    assert {n: c["kubernetesVersion"] for n, c in report["clusters"].items()} == \
        {n: v for n, (v, _) in CLUSTERS.items()}
    line = ("capabilities: from status (refs/remotes/origin/gitfleet/status/* as last "
            "fetched): v1.30.4 (old); v1.32.2 (mid); v1.33.1 (new)")
    done = gitfleet_here("render", str(review), "--rev", "HEAD", "--out", str(tmp_path / "out"),
                         *cache)
    assert done.returncode == 0 and line + "\n" in done.stderr, done.stderr
    done = gitfleet_here("validate", str(review), *cache)
    assert done.returncode == 0 and line + "\n" in done.stderr, done.stdout + done.stderr

    # a change that matters only at >= 1.33 (the traffic distribution argument) and only where
    # autoscaling.k8s.io/v1 is served (the VPA): diff shows one cluster affected
    gw = yaml.safe_load((work / "templates/edge.yaml").read_text())
    gw["spec"]["values"]["controller"]["trafficDistribution"] = "PreferSameZone"
    ksm = yaml.safe_load((work / "templates/ksm.yaml").read_text())
    ksm["spec"]["values"]["verticalPodAutoscaler"]["maxAllowed"] = {"cpu": "200m"}
    head = push(work, "edge: same-zone traffic; ksm: bounded VPA", {
        "templates/edge.yaml": yaml.safe_dump(gw), "templates/ksm.yaml": yaml.safe_dump(ksm)})
    git_review = Git(review)
    git_review.run("fetch", "-q", "origin")
    done = gitfleet_here("diff", base, head, "--repo", str(review), "--format", "json", *cache)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = json.loads(done.stdout)
    assert shown["capabilities"] == report
    done = gitfleet_here("diff", base, head, "--repo", str(review), "--no-diffs", *cache)
    assert line in done.stdout.splitlines()[:3], done.stdout
    assert [c["name"] for c in shown["clusters"] if c["affected"]] == ["new"]
    # the hub renders HEAD: each cluster branch changes exactly as diff showed (the values
    # digest in every description.yaml; the two objects in `new` only)
    assert hub.run_once() is not None
    by_name = {c["name"]: c for c in shown["clusters"]}
    for name in CLUSTERS:
        hub_change = compare_cluster(name, _units(hub_files[name]), _units(
            _branch_files(remote.git, branches.cluster(name)))).to_dict()
        assert by_name.get(name, {"objects": [], "descriptions": []})["objects"] == \
            hub_change["objects"], name
        assert by_name.get(name, {"descriptions": []})["descriptions"] == \
            hub_change["descriptions"], name
    assert {o["name"] for o in by_name["new"]["objects"]} == {"edge-gateway-controller",
                                                              "ksm-statemetrics"}
    # the same through a URL (a temporary clone of the remote's branches)
    done = gitfleet_here("diff", base, head, "--repo", remote.url, "--format", "json", *cache)
    assert done.returncode == 0 and json.loads(done.stdout)["clusters"] == shown["clusters"]
    assert json.loads(done.stdout)["capabilities"]["refs"] == "refs/heads/gitfleet/status/*"

    # what the hub committed applies to a Kubernetes API (kubesim, one per cluster); the
    # VerticalPodAutoscaler and ServiceMonitor kinds come from their projects' CRDs
    for name in CLUSTERS:
        files = _branch_files(remote.git, branches.cluster(name))
        _apply_all(person(kubesim(nodes=1)), _objects(files).values())


CRDS = {("autoscaling.k8s.io", "VerticalPodAutoscaler"): "verticalpodautoscalers",
        ("monitoring.coreos.com", "ServiceMonitor"): "servicemonitors"}


def _crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _apply_all(kube: Any, bodies: Any) -> None:
    bodies = list(bodies)
    kinds = {(b["apiVersion"].split("/")[0], b["kind"]) for b in bodies}
    crds = [_crd(group, kind, plural) for (group, kind), plural in CRDS.items()
            if (group, kind) in kinds]
    for crd in crds:
        kube.apply(crd)
    if crds:
        wait_for(lambda: not kube.wait_crds_established(
            [c["metadata"]["name"] for c in crds], timeout=1.0), what="CRDs served")
    first = [b for b in bodies if b["kind"] == "Namespace"]
    for body in first + [b for b in bodies if b["kind"] != "Namespace"]:
        kube.apply(body)
        meta = body["metadata"]
        assert kube.get(body["apiVersion"], body["kind"], meta.get("namespace", ""),
                        meta["name"]) is not None
