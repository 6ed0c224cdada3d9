"""The demo's chart step: a Helm chart kept in the fleet repo, other values per cluster.

A person adds a small chart (`charts/hello`), a HelmChart naming it (`file://charts`), a
Subscription for the prod clusters and a Localization of type Helm giving prod-west its own
greeting and replica count. The demo shows what `gitfleet diff` tells the reviewer (the objects
the hub's `helm template` renders, per cluster), pushes, and reads the result in each cluster.
The hub renders the chart (Helm on its PATH); without Helm the step says so and is skipped.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitfleet.kubesim import KubeSim

if TYPE_CHECKING:
    from gitfleet.demo.progress import Watcher

NAMESPACE = "hello"
FILES = {
    "charts/hello/Chart.yaml": """apiVersion: v2
name: hello
version: 0.1.0
description: the demo's chart, kept in the fleet repo
""",
    "charts/hello/values.yaml": """greeting: hello
replicas: 1
""",
    "charts/hello/templates/configmap.yaml": """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  greeting: {{ .Values.greeting | quote }}
  kubernetes: {{ .Capabilities.KubeVersion.Version | quote }}
""",
    "charts/hello/templates/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: hello
          image: nginx:1.27
""",
    "templates/hello/helmchart.yaml": """# A chart kept in this repository (file://charts):
# the hub renders it per cluster with `helm template`; the objects are what clusters receive.
apiVersion: apps.clusternet.io/v1alpha1
kind: HelmChart
metadata:
  name: hello
  namespace: hello
spec:
  repo: file://charts
  chart: hello
  version: 0.1.0
  targetNamespace: hello
""",
    "policies/hello/subscription.yaml": """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata:
  name: hello
  namespace: hello
spec:
  subscribers:
    - clusterAffinity:
        matchLabels: {env: prod}
  feeds:
    - {apiVersion: apps.clusternet.io/v1alpha1, kind: HelmChart, name: hello}
""",
    "policies/hello/localization-prod-west.yaml": """# prod-west's own values for the chart
apiVersion: apps.clusternet.io/v1alpha1
kind: Localization
metadata:
  name: hello-west
  namespace: gitfleet-prod-west
spec:
  overridePolicy: ApplyNow
  feed: {apiVersion: apps.clusternet.io/v1alpha1, kind: HelmChart, name: hello,
         namespace: hello}
  overrides:
    - name: west
      type: Helm
      value: |
        greeting: hello from the west
        replicas: 2
""",
}


def greeting(sim: KubeSim) -> tuple[str, Any]:
    """(greeting, Deployment replicas) of the chart in one cluster ('' before it arrives)."""
    cm = sim.get_object("v1", "ConfigMap", "hello-greeting", NAMESPACE) or {}
    dep = sim.get_object("apps/v1", "Deployment", "hello", NAMESPACE) or {}
    return (str((cm.get("data") or {}).get("greeting", "")),
            (dep.get("spec") or {}).get("replicas"))


def show_chart(*, work: Path, git: Callable[..., str], diff_text: Callable[[], str],
               clusters: Sequence[str], sims: Sequence[KubeSim], watcher: Watcher,
               timeout: float, print_: Callable[[str], None]) -> None:
    """`git(work, *args)` runs git in the person's clone; `diff_text()` is `gitfleet diff
    HEAD~1 HEAD` there, as text."""
    print_("== a Helm chart: charts/hello with a HelmChart, a Subscription and prod-west's "
           "own values ==")
    if shutil.which("helm") is None:
        print_("helm is not on the PATH: the hub renders charts with `helm template`, so this "
               "step is skipped (install Helm 3 and run the demo again)")
        return
    for rel, text in FILES.items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "hello: a chart with values per cluster")
    print_("what `gitfleet diff` shows the reviewer (the hub renders the chart the same way):")
    for line in diff_text().splitlines():
        print_(f"  {line}" if line else "")
    git(work, "push", "-q", "origin", "HEAD:main")
    head = git(work, "rev-parse", "HEAD")
    watcher.say(f"pushed {head[:10]}")

    def arrived() -> bool:
        return all(greeting(sim)[0] for sim in sims)

    watcher.until(lambda p: p.source_commit == head and p.converged and arrived(),
                  timeout=timeout, what="the chart")
    got = ", ".join(f"{c}: {g!r} x{r}" for c, (g, r) in
                    zip(clusters, (greeting(s) for s in sims), strict=True))
    watcher.say(f"the chart runs with each cluster's values: {got}")
