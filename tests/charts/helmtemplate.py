"""The reference: the real `helm template` run on a chart of tests/charts/library with values
files in the order Helm is given them, a Kubernetes version and API versions; and the charts
copied into a fleet repo (`repo: file://charts`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.charts.chartrepo import HELM

LIBRARY = Path(__file__).parent / "library"


def copy_chart(name: str, fleet_root: Path) -> Path:
    """The library chart `name` as the fleet repo's chart folder `charts/<name>`."""
    target = fleet_root / "charts" / name
    shutil.copytree(LIBRARY / name, target)
    return target


def helm_template(chart: Path, *, release: str, namespace: str, values: Sequence[Any],
                  kube_version: str, api_versions: Sequence[str], work: Path
                  ) -> dict[str, dict[str, Any]]:
    """`Kind/namespace/name` -> object, as `helm template` prints them with `-f` per entry of
    `values` (in order), `--kube-version` and one `--api-versions` per entry."""
    assert HELM, "helm is not on the PATH (bash tools/setup installs it)"
    work.mkdir(parents=True, exist_ok=True)
    argv = [HELM, "template", release, str(chart), "--namespace", namespace]
    for i, layer in enumerate(values):
        path = work / f"values-{i}.json"
        path.write_text(json.dumps(layer))
        argv += ["-f", str(path)]
    if kube_version:
        argv += ["--kube-version", kube_version]
    for api in api_versions:
        argv += ["--api-versions", api]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    out = {}
    for body in yaml.safe_load_all(done.stdout):
        if body:
            meta = body["metadata"]
            out[f"{body['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = body
    return out
