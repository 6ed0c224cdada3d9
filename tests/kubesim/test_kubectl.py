"""The same server against a real client nobody here wrote: kubectl 1.30, the one tools/setup
installs next to the interpreter (.venv/bin/kubectl; another kubectl on PATH is a fallback)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from gitfleet.kubesim import KubeSim
from tests.kubesim.conftest import KUBECTL

pytestmark = pytest.mark.skipif(not KUBECTL, reason="kubectl is not installed on this machine")

MANIFEST = """\
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
"""


def test_apply_server_side_then_get_yaml(kubectl, sim: KubeSim) -> None:  # noqa: ANN001
    out = kubectl("apply", "--server-side", "-f", "-", stdin=MANIFEST)
    assert "namespace/shop serverside-applied" in out.stdout
    assert "deployment.apps/web serverside-applied" in out.stdout
    got = yaml.safe_load(kubectl("get", "deployment", "web", "-n", "shop", "-o", "yaml",
                                 "--show-managed-fields").stdout)
    assert got["spec"]["replicas"] == 2
    assert got["spec"]["revisionHistoryLimit"] == 10
    managers = {(m["manager"], m["operation"]) for m in got["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers
    again = kubectl("apply", "--server-side", "-f", "-", stdin=MANIFEST)
    assert "serverside-applied" in again.stdout


def test_scale_then_apply_conflicts(kubectl, sim: KubeSim) -> None:  # noqa: ANN001
    kubectl("apply", "--server-side", "-f", "-", stdin=MANIFEST)
    kubectl("scale", "deployment", "web", "-n", "shop", "--replicas=4")
    replicas = kubectl("get", "deployment", "web", "-n", "shop", "-o",
                       "jsonpath={.spec.replicas}").stdout
    assert replicas == "4"
    conflict = kubectl("apply", "--server-side", "--field-manager=gitfleet", "-f", "-",
                       stdin=MANIFEST, check=False)
    assert conflict.returncode != 0
    assert "conflict" in conflict.stderr.lower() and ".spec.replicas" in conflict.stderr


def test_get_table_and_delete(kubectl, sim: KubeSim) -> None:  # noqa: ANN001
    kubectl("apply", "--server-side", "-f", "-", stdin=MANIFEST)
    assert sim.settle()
    table = kubectl("get", "deployments", "-n", "shop").stdout
    assert table.splitlines()[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table.splitlines()[1].split()[:4] == ["web", "2/2", "2", "2"]
    kubectl("delete", "deployment", "web", "-n", "shop")
    missing = kubectl("get", "deployment", "web", "-n", "shop", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_get_watch_with_timeout_sees_changes(sim: KubeSim, tmp_path: Path) -> None:
    config = sim.write_kubeconfig(tmp_path / "kubeconfig")
    binary = KUBECTL
    api = sim.api_client()
    try:
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "shop"}})
        core.create_namespaced_config_map("shop", {"metadata": {"name": "before"}})
        sim.reset_request_count()
        proc = subprocess.Popen(
            [binary, "--kubeconfig", str(config), "get", "configmaps", "-n", "shop",
             "--watch", "-o", "name", "--request-timeout=3s"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
        try:
            deadline = time.monotonic() + 60
            while sim.request_count("watch") == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            core.create_namespaced_config_map("shop", {"metadata": {"name": "during"}})
            core.delete_namespaced_config_map("before", "shop")
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    finally:
        api.close()
    lines = out.split()
    assert lines[0] == "configmap/before"
    assert "configmap/during" in lines
    assert lines.count("configmap/before") == 2  # listed, then its deletion


def test_namespace_must_exist(kubectl) -> None:  # noqa: ANN001
    out = kubectl("create", "configmap", "x", "-n", "nowhere", "--from-literal=a=1",
                  check=False)
    assert out.returncode != 0 and 'namespaces "nowhere" not found' in out.stderr


def test_rollout_status_and_wait_follow_the_controller(kubectl, sim: KubeSim) -> None:  # noqa: ANN001
    kubectl("apply", "--server-side", "-f", "-", stdin=MANIFEST)
    out = kubectl("rollout", "status", "deployment/web", "-n", "shop", "--timeout=20s")
    assert 'deployment "web" successfully rolled out' in out.stdout
    kubectl("wait", "--for=condition=Available", "deployment/web", "-n", "shop",
            "--timeout=20s")
    kubectl("delete", "namespace", "shop", "--timeout=20s")
    gone = kubectl("get", "namespace", "shop", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
