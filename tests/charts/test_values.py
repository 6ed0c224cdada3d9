"""Helm values as Helm merges them: the HelmChart's values, then the Helm overrides of the
cluster's Globalizations and Localizations by priority, each layer merged as `helm template
-f a -f b` merges values files. A `null` deletes the key, a chart default included (the
image `digest: null` over a chart default digest, as ingress-nginx's own values file does);
maps merge; lists replace. Checked against the real `helm template`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitfleet.charts import folders
from gitfleet.charts.renderer import Charts
from gitfleet.model.loader import load_fleet
from gitfleet.render.charts import Capabilities
from gitfleet.render.core import render
from gitfleet.render.status import StatusSnapshot
from tests.charts.chartrepo import HELM
from tests.charts.fleet import helm_chart, helm_values
from tests.charts.helmtemplate import copy_chart, helm_template
from tests.render.conftest import cluster, doc, objects_in, override_set, subscription

pytestmark = pytest.mark.skipif(HELM is None, reason="helm is not installed (bash tools/setup)")

CHART = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart", "name": "gw",
         "namespace": "apps"}
BASE: dict[str, Any] = {"controller": {"replicaCount": 2, "extraArgs": {"v": "2"}}}
EVERYWHERE: dict[str, Any] = {"controller": {
    "image": {"tag": "1.1.0"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}],
    "config": {"use-forwarded-headers": "true"}}}
ONLY_B: dict[str, Any] = {"controller": {
    "image": {"digest": None},                          # the chart's default digest goes
    "tolerations": [{"key": "edge", "operator": "Exists"}],          # the list is replaced
    "config": {"allow-snippet-annotations": None},      # a chart default map entry goes
    "extraArgs": {"v": None, "enable-ssl-passthrough": ""}}}        # a base value goes


def _fleet(root: Path) -> dict[str, bytes]:
    files = dict([cluster("a", {"env": "prod"}), cluster("b", {"env": "prod"})])
    files["templates/gw.yaml"] = doc(helm_chart("file://charts", "4.2.0", name="gw",
                                                chart="gateway", values=BASE,
                                                createNamespace=False))
    files["policies/sub.yaml"] = doc(subscription(
        "gw", [{k: v for k, v in CHART.items() if k != "namespace"}],
        [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}]))
    files["policies/everywhere.yaml"] = doc(override_set(
        "Globalization", "gw-everywhere", CHART, [helm_values("everywhere", EVERYWHERE)],
        priority=100))
    files["policies/only-b.yaml"] = doc(override_set(
        "Localization", "gw-b", CHART, [helm_values("edge", ONLY_B)], namespace="gitfleet-b"))
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    copy_chart("gateway", root)
    return files


def test_a_null_deletes_the_chart_default_as_helm_does(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    files = _fleet(root)
    caps = Capabilities("v1.31.0", ("v1", "apps/v1", "policy/v1", "networking.k8s.io/v1"))
    result = render(load_fleet(files), source_commit="c1",
                    status=StatusSnapshot(capabilities={"a": caps, "b": caps}),
                    charts=Charts(tmp_path / "work").at(folders.worktree(root)))
    assert result.errors == []
    a, b = objects_in(result, "a"), objects_in(result, "b")
    deployment = "Deployment/web/gw-gateway-controller"
    image = "registry.example.io/gateway/controller:1.1.0"
    [container_a] = a[deployment]["spec"]["template"]["spec"]["containers"]
    [container_b] = b[deployment]["spec"]["template"]["spec"]["containers"]
    assert container_a["image"].startswith(image + "@sha256:594c")
    assert container_b["image"] == image                           # no digest
    assert b[deployment]["spec"]["template"]["spec"]["tolerations"] == \
        [{"key": "edge", "operator": "Exists"}]
    assert b["ConfigMap/web/gw-gateway-controller"]["data"] == {"use-forwarded-headers": "true"}
    assert "--v=2" in container_a["args"] and "--v=2" not in container_b["args"]
    assert "--enable-ssl-passthrough" in container_b["args"]
    # exactly what helm renders with the same values files in the same order
    for name, layers, objects in (("a", [BASE, EVERYWHERE], a),
                                  ("b", [BASE, EVERYWHERE, ONLY_B], b)):
        expected = helm_template(root / "charts" / "gateway", release="gw", namespace="web",
                                 values=layers, kube_version=caps.kube_version,
                                 api_versions=caps.api_versions, work=tmp_path / name)
        assert objects == expected, name
