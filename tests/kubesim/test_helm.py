"""Helm 3.17, the real binary, against kubesim: install, upgrade, rollback and uninstall.

Helm stores each release in a Secret (or, with `HELM_DRIVER=configmap`, a ConfigMap) through
client-go's typed client, which sends protobuf, not JSON: kubesim must read it as a real
server does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from gitfleet.kubesim import KubeSim

_PINNED = Path(sys.executable).parent / "helm"
HELM = str(_PINNED) if _PINNED.exists() else (shutil.which("helm") or "")
pytestmark = pytest.mark.skipif(not HELM, reason="helm is not installed on this machine")

Helm = Callable[..., subprocess.CompletedProcess[str]]

TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  message: {{ .Values.message | quote }}
"""


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    folder = tmp_path / "shop"
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text("apiVersion: v2\nname: shop\nversion: 0.1.0\n")
    (folder / "values.yaml").write_text("message: hello\n")
    (folder / "templates" / "configmap.yaml").write_text(TEMPLATE)
    return folder


def _helm_for(sim: KubeSim, tmp_path: Path) -> Helm:
    config = sim.write_kubeconfig(tmp_path / "kubeconfig")
    home = tmp_path / "home"

    def run(*args: str, driver: str = "secret") -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
               "KUBECONFIG": str(config), "HELM_DRIVER": driver,
               "XDG_CACHE_HOME": str(home / "cache"), "XDG_CONFIG_HOME": str(home / "config"),
               "XDG_DATA_HOME": str(home / "data")}
        proc = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=60,
                              env=env)
        assert proc.returncode == 0, f"helm {' '.join(args)}: {proc.stderr}"
        return proc

    return run


@pytest.fixture
def helm(sim: KubeSim, tmp_path: Path) -> Helm:
    return _helm_for(sim, tmp_path)


def _message(core: client.CoreV1Api, ns: str) -> str:
    return str(core.read_namespaced_config_map("shop-settings", ns).data["message"])


def _releases(core: client.CoreV1Api, ns: str) -> dict[str, str]:
    found = core.list_namespaced_secret(ns, label_selector="owner=helm").items
    return {s.metadata.name: s.metadata.labels["status"] for s in found}


def test_install_upgrade_rollback_uninstall(helm: Helm, chart: Path, core: client.CoreV1Api,
                                            ns: str) -> None:
    helm("install", "shop", str(chart), "-n", ns, "--set", "message=one")
    assert _message(core, ns) == "one"
    assert _releases(core, ns) == {"sh.helm.release.v1.shop.v1": "deployed"}

    helm("upgrade", "shop", str(chart), "-n", ns, "--set", "message=two")
    assert _message(core, ns) == "two"
    helm("rollback", "shop", "1", "-n", ns)
    assert _message(core, ns) == "one"
    history = json.loads(helm("history", "shop", "-n", ns, "-o", "json").stdout)
    assert [(h["revision"], h["status"]) for h in history] == [
        (1, "superseded"), (2, "superseded"), (3, "deployed")]

    helm("uninstall", "shop", "-n", ns)
    with pytest.raises(client.ApiException) as gone:
        core.read_namespaced_config_map("shop-settings", ns)
    assert gone.value.status == 404
    assert _releases(core, ns) == {}
    assert json.loads(helm("list", "-n", ns, "-o", "json").stdout) == []


def test_the_configmap_driver_stores_releases_too(helm: Helm, chart: Path,
                                                  core: client.CoreV1Api, ns: str) -> None:
    helm("install", "shop", str(chart), "-n", ns, driver="configmap")
    stored = core.list_namespaced_config_map(ns, label_selector="owner=helm").items
    assert [c.metadata.name for c in stored] == ["sh.helm.release.v1.shop.v1"]
    assert _message(core, ns) == "hello"
    helm("uninstall", "shop", "-n", ns, driver="configmap")
    assert core.list_namespaced_config_map(ns, label_selector="owner=helm").items == []


def test_a_protobuf_body_kubesim_cannot_read_is_refused_by_media_type(sim: KubeSim,
                                                                      ns: str) -> None:
    # runtime.Unknown{typeMeta: {apiVersion: v1, kind: Pod}, raw: ""} after the magic bytes
    type_meta = b"\x0a\x02v1\x12\x03Pod"
    body = b"k8s\x00" + b"\x0a" + bytes([len(type_meta)]) + type_meta + b"\x12\x00"
    request = urllib.request.Request(
        f"{sim.url}/api/v1/namespaces/{ns}/pods", data=body, method="POST",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 415
    assert "application/json" in json.loads(refused.value.read())["message"]
    refused.value.close()


WORKLOAD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:{{ .Values.tag }}"}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-delete-policy: hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox}]
"""


def test_wait_and_hooks_with_running_pods(chart: Path, tmp_path: Path) -> None:
    """`--wait` reads a Deployment's newest ReplicaSet and a hook Job's completion: kubesim
    runs them with `pods=True`."""
    (chart / "templates" / "workload.yaml").write_text(WORKLOAD)
    (chart / "values.yaml").write_text("message: hello\ntag: '1.25'\n")
    with KubeSim(pods=True, controller_delay=0.05) as sim:
        helm = _helm_for(sim, tmp_path)
        helm("install", "shop", str(chart), "--wait", "--timeout", "60s")
        helm("upgrade", "shop", str(chart), "--wait", "--atomic", "--timeout", "60s",
             "--set", "tag=1.27")
        api = sim.api_client()
        try:
            image = client.AppsV1Api(api).read_namespaced_deployment(
                "shop-web", "default").spec.template.spec.containers[0].image
        finally:
            api.close()
        assert image == "nginx:1.27"
        statuses = [h["status"] for h in json.loads(helm("history", "shop", "-o",
                                                         "json").stdout)]
        assert statuses == ["superseded", "deployed"]
