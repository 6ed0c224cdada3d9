"""HelmChart feeds rendered by the real `helm template` against a chart repository on
127.0.0.1: each cluster gets the chart's objects with its own values and capabilities."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitfleet.charts.renderer import Charts
from gitfleet.model.loader import load_fleet
from gitfleet.render.charts import Capabilities
from gitfleet.render.core import render
from gitfleet.render.status import StatusSnapshot
from tests.charts.chartrepo import HELM, ChartRepo
from tests.charts.fleet import chart_fleet
from tests.render.conftest import objects_in

pytestmark = pytest.mark.skipif(HELM is None, reason="helm is not installed (bash tools/setup)")


def test_each_cluster_gets_the_chart_with_its_values(repo: ChartRepo, tmp_path: Path) -> None:
    charts = Charts(tmp_path / "work")
    result = render(load_fleet(chart_fleet(repo.url)), source_commit="c1", charts=charts)
    assert result.errors == []
    a, b = objects_in(result, "a"), objects_in(result, "b")
    assert a["ConfigMap/web/web-settings"]["data"]["message"] == "hello"
    assert b["ConfigMap/web/web-settings"]["data"]["message"] == "from-b"
    assert a["Deployment/web/web-web"]["spec"]["replicas"] == 1
    assert b["Deployment/web/web-web"]["spec"]["replicas"] == 3
    # createNamespace (default true) adds the namespace; crds/ are included; the hook keeps
    # its annotations for the agent; the test hook is never delivered
    assert set(a) == {"Namespace//web", "CustomResourceDefinition//widgets.example.io",
                      "ConfigMap/web/web-settings", "Deployment/web/web-web",
                      "Job/web/web-migrate", "Service/web/web-extra"}
    assert a["Job/web/web-migrate"]["metadata"]["annotations"]["helm.sh/hook"] == \
        "pre-install,pre-upgrade"
    desc = yaml.safe_load(result.files["clusters/b/apps/web@helm/description.yaml"])["spec"]
    assert desc["deployer"] == "generic"
    [record] = desc["charts"]
    assert record["helmChart"] == "apps/web" and record["version"] == "1.0.0"
    assert record["chart"] == "web" and record["repo"] == repo.url
    archive = next((repo.root).glob("web-1.0.0.tgz"))
    import hashlib
    assert record["digest"] == "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
    assert record["valuesDigest"].startswith("sha256:")
    # two distinct value sets: helm ran twice, the archive was fetched once
    assert charts.counters.templated == 2 and charts.counters.fetched == 1


def test_rendered_once_and_remembered_across_renders(repo: ChartRepo, tmp_path: Path) -> None:
    charts = Charts(tmp_path / "work")
    fleet = load_fleet(chart_fleet(repo.url))
    first = render(fleet, source_commit="c1", charts=charts)
    again = render(fleet, source_commit="c1", charts=charts)
    assert first.files == again.files
    assert charts.counters.templated == 2 and charts.counters.resolved == 1


def test_capabilities_come_from_the_cluster(repo: ChartRepo, tmp_path: Path) -> None:
    status = StatusSnapshot(capabilities={
        "a": Capabilities("v1.29.3", ("v1", "apps/v1", "example.io/v1")),
        "b": Capabilities("v1.30.1", ("v1", "apps/v1"))})
    result = render(load_fleet(chart_fleet(repo.url)), source_commit="c1", status=status,
                    charts=Charts(tmp_path / "work"))
    assert result.errors == []
    a = objects_in(result, "a")["ConfigMap/web/web-settings"]["data"]
    b = objects_in(result, "b")["ConfigMap/web/web-settings"]["data"]
    assert a["kubeVersion"] == "v1.29.3" and a["exampleApi"] == "served"
    assert b["kubeVersion"] == "v1.30.1" and "exampleApi" not in b


def test_a_version_that_does_not_exist_is_an_error(repo: ChartRepo, tmp_path: Path) -> None:
    result = render(load_fleet(chart_fleet(repo.url, "9.9.9")), source_commit="c1",
                    charts=Charts(tmp_path / "work"))
    messages = [p.message for p in result.errors]
    assert messages and all("HelmChart apps/web (templates/web.yaml)" in m and
                            "no version 9.9.9" in m and "1.0.0" in m for m in messages)
    assert not any(p.startswith("clusters/a/apps/web@helm/") for p in result.files)


def test_a_dividing_subscription_divides_the_replica_value_it_is_pointed_at(
        repo: ChartRepo, tmp_path: Path) -> None:
    """`gitfleet.io/replicas-path` on a HelmChart pointing into its values: static weights 1:2
    divide 6 replicas into 2 and 4, and each cluster's chart renders with its share."""
    files = {p: d for p, d in chart_fleet(repo.url).items() if "loc-b" not in p}
    chart = yaml.safe_load(files["templates/web.yaml"])
    chart["metadata"]["annotations"] = {"gitfleet.io/replicas-path": "/spec/values/replicas"}
    chart["spec"]["values"] = {"replicas": 6}
    files["templates/web.yaml"] = yaml.safe_dump(chart).encode()
    sub = yaml.safe_load(files["policies/sub.yaml"])
    sub["spec"]["schedulingStrategy"] = "Dividing"
    sub["spec"]["dividingScheduling"] = {"type": "Static"}
    for c in ("a", "b"):
        body = yaml.safe_load(files[f"clusters/{c}.yaml"])
        body["metadata"]["labels"]["site"] = c
        files[f"clusters/{c}.yaml"] = yaml.safe_dump(body).encode()
    sub["spec"]["subscribers"] = [{"clusterAffinity": {"matchLabels": {"site": c}}, "weight": w}
                                  for c, w in (("a", 1), ("b", 2))]
    files["policies/sub.yaml"] = yaml.safe_dump(sub).encode()
    result = render(load_fleet(files), source_commit="c1", charts=Charts(tmp_path / "work"))
    assert result.errors == []
    assert objects_in(result, "a")["Deployment/web/web-web"]["spec"]["replicas"] == 2
    assert objects_in(result, "b")["Deployment/web/web-web"]["spec"]["replicas"] == 4


def test_karmada_overrides_apply_to_the_charts_objects(repo: ChartRepo, tmp_path: Path) -> None:
    files = chart_fleet(repo.url)
    files["policies/override.yaml"] = yaml.safe_dump({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy",
        "metadata": {"name": "registry"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                 "overrideRules": [{
                     "targetCluster": {"clusterNames": ["a"]},
                     "overriders": {"imageOverrider": [{"component": "Registry",
                                                        "operator": "replace",
                                                        "value": "mirror.example"}]}}]}}
    ).encode()
    result = render(load_fleet(files), source_commit="c1", charts=Charts(tmp_path / "work"))
    assert result.errors == []

    def image(cluster: str) -> str:
        dep = objects_in(result, cluster)["Deployment/web/web-web"]
        return str(dep["spec"]["template"]["spec"]["containers"][0]["image"])

    assert image("a") == "mirror.example/nginx:1.25" and image("b") == "nginx:1.25"
    desc = yaml.safe_load(result.files["clusters/a/apps/web@helm/description.yaml"])["spec"]
    assert {o["name"] for o in desc["overrides"]} >= {"registry"}


def test_without_helm_each_helm_chart_is_an_error_saying_what_is_missing(
        repo: ChartRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = render(load_fleet(chart_fleet(repo.url)), source_commit="c1",
                    charts=Charts(tmp_path / "work"))
    assert {p.message.split(" (cluster")[0] for p in result.errors} == {
        "HelmChart apps/web (templates/web.yaml): helm is not on the PATH: HelmChart feeds are "
        "rendered with `helm template` (Helm 3) where the hub, `render`, `validate` and `diff` "
        "run"}
