"""Synthetic fleets for benchmarks: N clusters, M templates, K Subscriptions, overrides at a
chosen density, in both dialects.

    python bench/fleetgen.py --clusters 1000 --templates 100 --out /tmp/fleet [--git]

Every cluster receives every template (so clusters x templates objects are rendered): half the
units are Clusternet Subscriptions (static dividing over two weighted label groups), half
Karmada PropagationPolicies (Divided/Weighted). `--override-share` of the clusters get a
Localization on one Deployment, and the same share a Karmada OverridePolicy rule by label.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml


def _dump(*docs: dict) -> bytes:
    return yaml.safe_dump_all(list(docs), sort_keys=False).encode()


def cluster_name(i: int) -> str:
    return f"c{i:05d}"


def generate(*, clusters: int = 1000, templates: int = 100, units: int = 10,
             override_share: float = 0.1, karmada_share: float = 0.5) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    n_over = max(1, int(clusters * override_share)) if override_share > 0 else 0
    for i in range(clusters):
        name = cluster_name(i)
        labels = {"env": "prod", "group": "a" if i % 2 == 0 else "b", "shard": str(i % 10)}
        if i < n_over:
            labels["tuned"] = "true"
        files[f"clusters/{name}.yaml"] = _dump({
            "apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
            "metadata": {"name": name, "namespace": f"gitfleet-{name}", "labels": labels},
            "spec": {"syncMode": "Pull", "region": f"r{i % 5}", "provider": "sim"}})
    per_unit = max(1, templates // units)
    n_karmada = int(units * karmada_share)
    for u in range(units):
        ns = f"app{u:03d}"
        docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
        for j in range(per_unit - 1):
            if j % 3 == 0:
                docs.append({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": f"d{j}", "namespace": ns, "labels": {"app": f"d{j}"}},
                    "spec": {"replicas": 3 * clusters,
                             "selector": {"matchLabels": {"app": f"d{j}"}},
                             "template": {"metadata": {"labels": {"app": f"d{j}"}}, "spec": {
                                 "containers": [{"name": "main",
                                                 "image": f"registry.example.com/{ns}/d{j}:1.0",
                                                 "ports": [{"containerPort": 8080}],
                                                 "resources": {"requests": {
                                                     "cpu": "100m", "memory": "64Mi"}}}]}}}})
            elif j % 3 == 1:
                docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": f"cm{j}", "namespace": ns,
                                          "labels": {"app": ns}},
                             "data": {"config.json": f'{{"level": "info", "n": {j}}}'}})
            else:
                docs.append({"apiVersion": "v1", "kind": "Service",
                             "metadata": {"name": f"svc{j}", "namespace": ns},
                             "spec": {"selector": {"app": f"d{j - 2}"},
                                      "ports": [{"port": 80, "targetPort": 8080}]}})
        files[f"templates/{ns}/objects.yaml"] = _dump(*docs)
        if u < n_karmada:
            files[f"policies/{ns}/propagation.yaml"] = _dump({
                "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                "metadata": {"name": ns, "namespace": ns},
                "spec": {"resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment"},
                    {"apiVersion": "v1", "kind": "ConfigMap"},
                    {"apiVersion": "v1", "kind": "Service"}],
                    "placement": {"clusterAffinity": {"labelSelector": {
                        "matchLabels": {"env": "prod"}}},
                        "replicaScheduling": {
                            "replicaSchedulingType": "Divided",
                            "replicaDivisionPreference": "Weighted",
                            "weightPreference": {"staticWeightList": [
                                {"targetCluster": {"labelSelector": {
                                    "matchLabels": {"group": "a"}}}, "weight": 2},
                                {"targetCluster": {"labelSelector": {
                                    "matchLabels": {"group": "b"}}}, "weight": 1}]}}}}},
                {"apiVersion": "policy.karmada.io/v1alpha1",
                 "kind": "ClusterPropagationPolicy", "metadata": {"name": f"{ns}-namespace"},
                 "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace",
                                                 "name": ns}]}})
            if n_over:
                files[f"policies/{ns}/override.yaml"] = _dump({
                    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
                    "metadata": {"name": f"{ns}-tuned", "namespace": ns},
                    "spec": {"resourceSelectors": [{"apiVersion": "apps/v1",
                                                    "kind": "Deployment", "name": "d0"}],
                             "overrideRules": [{"targetCluster": {"labelSelector": {
                                 "matchLabels": {"tuned": "true"}}},
                                 "overriders": {"imageOverrider": [
                                     {"component": "Tag", "operator": "replace",
                                      "value": "1.1"}]}}]}})
        else:
            feeds = [{"apiVersion": d["apiVersion"], "kind": d["kind"],
                      "name": d["metadata"]["name"]} for d in docs]
            files[f"policies/{ns}/subscription.yaml"] = _dump({
                "apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Subscription",
                "metadata": {"name": ns, "namespace": ns},
                "spec": {"subscribers": [
                    {"clusterAffinity": {"matchLabels": {"group": "a"}}, "weight": 2},
                    {"clusterAffinity": {"matchLabels": {"group": "b"}}, "weight": 1}],
                    "schedulingStrategy": "Dividing", "dividingScheduling": {"type": "Static"},
                    "feeds": feeds}})
    # Localizations: one per tuned cluster, on the first Clusternet unit's first Deployment.
    first_cn = f"app{n_karmada:03d}" if n_karmada < units else None
    if first_cn is not None:
        for i in range(n_over):
            name = cluster_name(i)
            files[f"policies/localizations/{name}.yaml"] = _dump({
                "apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Localization",
                "metadata": {"name": "tune-d0", "namespace": f"gitfleet-{name}"},
                "spec": {"priority": 600, "overridePolicy": "ApplyNow",
                         "feed": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d0",
                                  "namespace": first_cn},
                         "overrides": [{"name": "env", "type": "MergePatch",
                                        "value": '{"metadata": {"annotations": '
                                                 f'{{"tuned": "{name}"}}}}}}'}]}})
        files["policies/globalization.yaml"] = _dump({
            "apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Globalization",
            "metadata": {"name": "shard-0-debug"},
            "spec": {"priority": 400, "overridePolicy": "ApplyNow",
                     "clusterAffinity": {"matchLabels": {"shard": "0"}},
                     "feed": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm1",
                              "namespace": first_cn},
                     "overrides": [{"name": "debug", "type": "FieldMergePatch",
                                    "fieldPath": "/data/config.json",
                                    "value": '{"level": "debug"}'}]}})
    return files


def write(files: dict[str, bytes], out: Path, *, git: bool = False) -> None:
    for path, data in files.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if git:
        env_cmd = ["git", "-C", str(out), "-c", "user.name=bench", "-c",
                   "user.email=bench@example.test"]
        subprocess.run(["git", "init", "-q", "-b", "main", str(out)], check=True)
        subprocess.run([*env_cmd, "add", "-A"], check=True)
        subprocess.run([*env_cmd, "commit", "-qm", "synthetic fleet"], check=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--templates", type=int, default=100)
    p.add_argument("--units", type=int, default=10)
    p.add_argument("--override-share", type=float, default=0.1)
    p.add_argument("--karmada-share", type=float, default=0.5)
    p.add_argument("--out", required=True)
    p.add_argument("--git", action="store_true", help="git init and commit the fleet")
    a = p.parse_args(argv)
    files = generate(clusters=a.clusters, templates=a.templates, units=a.units,
                     override_share=a.override_share, karmada_share=a.karmada_share)
    write(files, Path(a.out), git=a.git)
    print(f"wrote {len(files)} files to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
