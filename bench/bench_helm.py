"""Helm charts: the hub's render against the peer way, and what charts cost a hub round.

    .venv/bin/python bench/bench_helm.py [--clusters 1000] [--peer-sample 50] [--repeats 5]

1. A chart (tests/charts/chartrepo.py's: 6 objects with hooks and a CRD) served by a chart
   repository on 127.0.0.1, subscribed by every cluster, with 3 distinct value sets
   (Globalizations by cluster group):
   - gitfleet: one render of the whole fleet with a cold chart renderer (index read, archive
     fetched, `helm template` per distinct (digest, values, capabilities)), and again warm;
   - the peer way (Argo CD's repo server: one `helm template` per cluster/Application): timed
     on `--peer-sample` clusters and extrapolated to all of them (said so in the output).
2. The hub's one-change round (a one-line Localization edit of one cluster, in-process `Hub`)
   on fleetgen's fleet with the chart subscribed by every cluster, against the same fleet
   without it; and a one-change round that changes one cluster's chart values.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
TOOLS = ROOT / ".tools" / "bin"
os.environ["PATH"] = f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}"

from bench_hub import change_one, git, make_repo  # noqa: E402
from fleetgen import cluster_name, generate  # noqa: E402

from gitfleet.charts.renderer import Charts  # noqa: E402
from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.model.loader import load_fleet  # noqa: E402
from gitfleet.render.core import render  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402
from tests.charts.chartrepo import chart_repo  # noqa: E402

GROUPS = ("a", "b", "c")
HELMCHART = "apps.clusternet.io/v1alpha1"


def _dump(*docs: dict[str, object]) -> bytes:
    return yaml.safe_dump_all(list(docs), sort_keys=False).encode()


def chart_files(repo_url: str, *, clusters_label: dict[str, str]) -> dict[str, bytes]:
    """The HelmChart, a Subscription for every cluster matching `clusters_label`, and one
    Globalization of values per cluster group (3 value sets)."""
    files = {"templates/charts/web.yaml": _dump({
        "apiVersion": HELMCHART, "kind": "HelmChart",
        "metadata": {"name": "web", "namespace": "charts"},
        "spec": {"repo": repo_url, "chart": "web", "version": "1.0.0",
                 "targetNamespace": "web"}}),
        "policies/charts/web.yaml": _dump({
            "apiVersion": HELMCHART, "kind": "Subscription",
            "metadata": {"name": "web", "namespace": "charts"},
            "spec": {"subscribers": [{"clusterAffinity": {"matchLabels": clusters_label}}],
                     "feeds": [{"apiVersion": HELMCHART, "kind": "HelmChart", "name": "web"}]}})}
    for i, group in enumerate(GROUPS):
        files[f"policies/charts/values-{group}.yaml"] = _dump({
            "apiVersion": HELMCHART, "kind": "Globalization",
            "metadata": {"name": f"web-{group}"},
            "spec": {"clusterAffinity": {"matchLabels": {"chartgroup": group}},
                     "feed": {"apiVersion": HELMCHART, "kind": "HelmChart", "name": "web",
                              "namespace": "charts"},
                     "overrides": [{"name": "values", "type": "Helm",
                                    "value": yaml.safe_dump({"message": f"group {group}",
                                                             "replicas": i + 1})}]}})
    return files


def clusters_only(n: int) -> dict[str, bytes]:
    return {f"clusters/{cluster_name(i)}.yaml": _dump({
        "apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
        "metadata": {"name": cluster_name(i), "namespace": f"gitfleet-{cluster_name(i)}",
                     "labels": {"env": "prod", "chartgroup": GROUPS[i % 3]}},
        "spec": {"syncMode": "Pull"}}) for i in range(n)}


def with_chart_groups(files: dict[str, bytes]) -> dict[str, bytes]:
    """fleetgen's clusters with a `chartgroup` label (a, b, c in turn)."""
    out = dict(files)
    for path, data in files.items():
        if path.startswith("clusters/"):
            doc = yaml.safe_load(data)
            i = int(doc["metadata"]["name"][1:])
            doc["metadata"]["labels"]["chartgroup"] = GROUPS[i % 3]
            out[path] = _dump(doc)
    return out


def fleet_render(repo_url: str, clusters: int, work: Path) -> dict[str, object]:
    fleet = load_fleet({**clusters_only(clusters),
                        **chart_files(repo_url, clusters_label={"env": "prod"})})
    charts = Charts(work / "charts")
    t = time.perf_counter()
    cold = render(fleet, source_commit="bench", charts=charts)
    cold_s = time.perf_counter() - t
    assert not cold.errors, cold.errors[:3]
    assert cold.objects == clusters * 6, cold.objects
    t = time.perf_counter()
    warm = render(fleet, source_commit="bench", charts=charts)
    warm_s = time.perf_counter() - t
    assert warm.files == cold.files
    return {"clusters": clusters, "objects": cold.objects, "helm_runs": charts.counters.templated,
            "archives_fetched": charts.counters.fetched,
            "gitfleet_cold_render_s": round(cold_s, 3), "gitfleet_warm_render_s": round(warm_s, 3)}


def peer_way(repo_root: Path, clusters: int, sample: int, work: Path) -> dict[str, object]:
    """One `helm template` per cluster, each with its cluster's values (as one Application per
    cluster renders in Argo CD's repo server), timed on `sample` clusters."""
    archive = next(repo_root.glob("web-1.0.0.tgz"))
    helm = shutil.which("helm")
    assert helm, "helm is not installed (bash tools/setup)"
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "HELM_CACHE_HOME": str(work / "c"),
           "HELM_CONFIG_HOME": str(work / "g"), "HELM_DATA_HOME": str(work / "d")}
    t = time.perf_counter()
    for i in range(sample):
        values = work / f"values-{i}.json"
        values.write_text(json.dumps({"message": f"group {GROUPS[i % 3]}", "replicas": i % 3 + 1}))
        subprocess.run([helm, "template", "web", str(archive), "--namespace", "web", "-f",
                        str(values), "--include-crds", "--skip-tests"], check=True,
                       capture_output=True, env=env)
    sample_s = time.perf_counter() - t
    per = sample_s / sample
    return {"peer_sample_clusters": sample, "peer_sample_s": round(sample_s, 3),
            "peer_per_cluster_s": round(per, 4),
            "peer_extrapolated_s": round(per * clusters, 1)}


def one_change_rounds(repo_url: str | None, clusters: int, repeats: int, work: Path
                      ) -> dict[str, object]:
    files = with_chart_groups(generate(clusters=clusters, templates=100))
    if repo_url is not None:
        files.update(chart_files(repo_url, clusters_label={"env": "prod"}))
    make_repo(work, files)
    charts = Charts(work.parent / f"{work.name}-charts") if repo_url else None
    hub = Hub(open_store(str(work)), settings=HubSettings(), charts=charts)
    t = time.perf_counter()
    first = hub.run_once()
    first_s = time.perf_counter() - t
    assert first is not None and first.wrote and not first.result.errors, \
        first and first.result.errors[:3]
    ones = []
    for n in range(repeats):
        change_one(work, n)
        t = time.perf_counter()
        report = hub.run_once()
        ones.append(time.perf_counter() - t)
        assert report is not None and report.wrote and len(report.moved) == 1, report
    out: dict[str, object] = {"first_round_s": round(first_s, 2),
                              "one_change_round_median_s": round(statistics.median(ones), 3),
                              "objects": first.result.objects}
    if repo_url is not None:
        assert charts is not None
        values = []
        for n in range(repeats):   # one cluster's chart values change (a Localization)
            loc = work / "policies" / "charts" / "values-c00000.yaml"
            loc.write_text(_dump({
                "apiVersion": HELMCHART, "kind": "Localization",
                "metadata": {"name": "web-c00000", "namespace": f"gitfleet-{cluster_name(0)}"},
                "spec": {"priority": 600, "overridePolicy": "ApplyNow",
                         "feed": {"apiVersion": HELMCHART, "kind": "HelmChart", "name": "web",
                                  "namespace": "charts"},
                         "overrides": [{"name": "v", "type": "Helm",
                                        "value": yaml.safe_dump({"message": f"own {n}"})}]}})
                .decode())
            git(work, "add", "-A")
            git(work, "commit", "-q", "-m", f"chart values of c00000 v{n}")
            t = time.perf_counter()
            report = hub.run_once()
            values.append(time.perf_counter() - t)
            assert report is not None and report.wrote, report
            assert not report.result.errors, report.result.errors[:3]
        out["chart_values_change_round_median_s"] = round(statistics.median(values), 3)
        out["helm_runs_total"] = charts.counters.templated
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--peer-sample", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-hub", action="store_true", help="part 1 only")
    args = parser.parse_args(argv)
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench-helm-") as tmp_name:
        tmp = Path(tmp_name)
        with chart_repo(tmp) as repo:
            repo.publish("web", "1.0.0", extra=True)
            results["fleet"] = fleet_render(repo.url, args.clusters, tmp / "render")
            (tmp / "peer").mkdir()
            results["peer"] = peer_way(repo.root, args.clusters, args.peer_sample, tmp / "peer")
            gitfleet_s = float(results["fleet"]["gitfleet_cold_render_s"])  # type: ignore[index]
            peer_s = float(results["peer"]["peer_extrapolated_s"])  # type: ignore[index]
            results["speedup_cold_vs_peer"] = round(peer_s / gitfleet_s, 1)
            if not args.skip_hub:
                results["hub_without_chart"] = one_change_rounds(None, args.clusters,
                                                                 args.repeats, tmp / "plain")
                results["hub_with_chart"] = one_change_rounds(repo.url, args.clusters,
                                                              args.repeats, tmp / "helm")
                plain = float(results["hub_without_chart"]["one_change_round_median_s"])  # type: ignore[index]  # noqa: E501
                helm = float(results["hub_with_chart"]["one_change_round_median_s"])  # type: ignore[index]  # noqa: E501
                results["one_change_with_charts_vs_without"] = f"{(helm / plain - 1) * 100:+.0f}%"
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
