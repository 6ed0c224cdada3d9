"""Fixtures for the kubesim conformance suite: a started server and official clients."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client, dynamic

from gitfleet.kubesim import KubeSim
from tests.harness import wait_for

# kubectl 1.30 as tools/setup installs it next to the interpreter; another on PATH otherwise
_PINNED = Path(sys.executable).parent / "kubectl"
KUBECTL = str(_PINNED) if _PINNED.exists() else (shutil.which("kubectl") or "")


@pytest.fixture
def sim() -> Iterator[KubeSim]:
    server = KubeSim(nodes=2, cpu="4", memory="8Gi", controller_delay=0.05, root_ca=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def api(sim: KubeSim) -> Iterator[client.ApiClient]:
    api_client = sim.api_client()
    try:
        yield api_client
    finally:
        api_client.close()
        api_client.rest_client.pool_manager.clear()


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def apps(api: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api)


@pytest.fixture
def dyn(api: client.ApiClient, tmp_path: Path) -> dynamic.DynamicClient:
    return dynamic.DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))


CA_BUNDLE = "kube-root-ca.crt"  # every namespace gets it (the controller manager's publisher)


@pytest.fixture
def ns(core: client.CoreV1Api) -> str:
    """A new namespace, once the controller manager has published the CA bundle in it (so
    tests that list or watch ConfigMaps see a settled namespace)."""
    core.create_namespace({"metadata": {"name": "team-a"}})
    wait_for(lambda: core.list_namespaced_config_map(
        "team-a", field_selector=f"metadata.name={CA_BUNDLE}").items,
        what="the CA bundle in the new namespace")
    return "team-a"


def ours(items: list) -> list:
    """`items` without the CA bundle every namespace holds."""
    return [i for i in items if i.metadata.name != CA_BUNDLE]


def deployment(name: str = "web", namespace: str = "team-a", *, replicas: int | None = 2,
               image: str = "nginx:1.25", labels: dict[str, str] | None = None) -> dict:
    spec: dict = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "app", "image": image,
                                              "ports": [{"containerPort": 8080}]}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    meta: dict = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def configmap(name: str = "settings", namespace: str = "team-a", **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": dict(data)}


def watch_until_closed(core: client.CoreV1Api, namespace: str) -> threading.Event:
    """Watch ConfigMaps of `namespace` in a thread; the event is set when the stream ends."""
    from kubernetes import watch

    ended = threading.Event()

    def consume() -> None:
        try:
            for _ in watch.Watch().stream(core.list_namespaced_config_map, namespace,
                                          timeout_seconds=60):
                pass
        except Exception:  # noqa: BLE001 - the server going away is the point
            pass
        ended.set()

    threading.Thread(target=consume, daemon=True).start()
    return ended


@pytest.fixture
def kubectl(sim: KubeSim, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the real kubectl against `sim` (skips the test where none is installed)."""
    if not KUBECTL:
        pytest.skip("kubectl is not installed on this machine")
    config = sim.write_kubeconfig(tmp_path / "kubeconfig")
    binary = KUBECTL

    def run(*args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 30) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([binary, "--kubeconfig", str(config), *args], input=stdin,
                              capture_output=True, text=True, timeout=timeout,
                              env={"PATH": os.environ.get("PATH", ""),
                                   "HOME": str(tmp_path)})
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    return run
