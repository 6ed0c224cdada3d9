"""The real `helm template`, run as a child process with its own empty Helm home.

Values go in a file (never argv); the child's HELM_*_HOME point into the work folder, so the
hub's user configuration, repositories and registry logins are neither read nor written.
Output is parsed here: test hooks are left out always, every hook with `disableHooks`, and the
CRDs of `crds/` come first unless `skipCRDs`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gitfleet.charts.errors import ChartError

TIMEOUT = 120.0
HOOK = "helm.sh/hook"
TEST_HOOKS = frozenset({"test", "test-success", "test-failure"})


def find_helm(explicit: str | None = None) -> str | None:
    return explicit if explicit else shutil.which("helm")


def template(helm: str, chart: Path, *, release: str, namespace: str,
             values: Mapping[str, Any], kube_version: str, api_versions: Sequence[str],
             include_crds: bool, hooks: bool, work: Path) -> list[dict[str, Any]]:
    work.mkdir(parents=True, exist_ok=True)
    home = work / "helm-home"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
           "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_DATA_HOME": str(home / "data")}
    with tempfile.NamedTemporaryFile("w", dir=work, prefix=".values-", suffix=".json") as f:
        json.dump(values, f)
        f.flush()
        argv = [helm, "template", release, str(chart), "--namespace", namespace,
                "--values", f.name, "--skip-tests"]
        if kube_version:
            argv += ["--kube-version", kube_version]
        for api in api_versions:
            argv += ["--api-versions", api]
        if include_crds:
            argv.append("--include-crds")
        if not hooks:
            argv.append("--no-hooks")
        try:
            done = subprocess.run(argv, capture_output=True, env=env, timeout=TIMEOUT,
                                  check=False)
        except FileNotFoundError:
            raise ChartError(f"helm not found at {helm}: install Helm 3 where the hub runs"
                             ) from None
        except subprocess.TimeoutExpired:
            raise ChartError(f"helm template did not finish in {TIMEOUT:.0f}s") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().replace(f.name, "<values>")
        raise ChartError(f"helm template failed: {message[-2000:]}")
    return parse(done.stdout, hooks=hooks)


def parse(output: bytes, *, hooks: bool) -> list[dict[str, Any]]:
    try:
        docs = list(yaml.load_all(output, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError as exc:
        raise ChartError(f"helm template printed YAML that does not parse: {exc}") from None
    out = []
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ChartError("helm template printed a document that is not an object")
        annotations = (doc.get("metadata") or {}).get("annotations") or {}
        hook = str(annotations.get(HOOK) or "")
        if hook:
            kinds = {h.strip() for h in hook.split(",")}
            if not hooks or kinds & TEST_HOOKS:
                continue
        out.append(doc)
    return out
