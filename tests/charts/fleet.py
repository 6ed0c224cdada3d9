"""A small fleet with one HelmChart feed: two clusters, one Subscription, a Localization that
gives cluster `b` other values."""

from __future__ import annotations

from typing import Any

import yaml

from tests.render.conftest import cluster, doc, override_set, subscription

UIDS = {"a": "11111111-1111-4111-8111-111111111111",
        "b": "22222222-2222-4222-8222-222222222222"}


def helm_chart(repo: str, version: str = "1.0.0", *, name: str = "web", chart: str = "web",
               **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"repo": repo, "chart": chart, "version": version,
                     "targetNamespace": "web", **spec}}


def helm_values(name: str, values: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "type": "Helm", "value": yaml.safe_dump(values)}


def chart_fleet(repo: str, version: str = "1.0.0", **spec: Any) -> dict[str, bytes]:
    files = dict([cluster("a", {"env": "prod"}, clusterId=UIDS["a"]),
                  cluster("b", {"env": "prod"}, clusterId=UIDS["b"])])
    files["templates/web.yaml"] = doc(helm_chart(repo, version, **spec))
    files["policies/sub.yaml"] = doc(subscription(
        "web", [{"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "HelmChart",
                 "name": "web"}],
        [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}]))
    files["policies/loc-b.yaml"] = doc(override_set(
        "Localization", "web-b", {"apiVersion": "apps.clusternet.io/v1alpha1",
                                  "kind": "HelmChart", "name": "web", "namespace": "apps"},
        [helm_values("b-values", {"message": "from-b", "replicas": 3})],
        namespace="gitfleet-b", priority=500))
    return files
