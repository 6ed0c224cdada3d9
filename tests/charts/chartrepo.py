"""A real chart repository on 127.0.0.1 for the tests: charts written here, packaged with
`helm package`, indexed with `helm repo index`, served by a Python HTTP server."""

from __future__ import annotations

import functools
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.gitserver import free_port

HELM = shutil.which("helm")

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
data:
  message: {{ .Values.message | quote }}
  chartVersion: {{ .Chart.Version | quote }}
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  {{- if .Capabilities.APIVersions.Has "example.io/v1" }}
  exampleApi: "served"
  {{- end }}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}-web}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}-web}
    spec:
      containers:
        - name: web
          image: "nginx:{{ .Values.tag }}"
"""

HOOK_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade
    "helm.sh/hook-weight": "-1"
    "helm.sh/hook-delete-policy": before-hook-creation
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox:1
"""

TEST_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    "helm.sh/hook": test
spec:
  restartPolicy: Never
  containers:
    - name: test
      image: busybox:1
"""

EXTRA = """\
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-extra
spec:
  selector: {app: {{ .Release.Name }}-web}
  ports: [{port: 80}]
"""

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""


def write_chart(folder: Path, name: str, version: str, *, extra: bool = False,
                values: dict[str, Any] | None = None) -> Path:
    """A small chart: a ConfigMap showing values and capabilities, a Deployment, a pre-install
    hook Job, a test hook Pod, a CRD under crds/ and (with `extra`) a Service."""
    top = folder / name
    if top.exists():
        shutil.rmtree(top)
    (top / "templates").mkdir(parents=True)
    (top / "crds").mkdir()
    (top / "Chart.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v2", "name": name, "version": version, "appVersion": "1"}))
    (top / "values.yaml").write_text(yaml.safe_dump(
        values or {"message": "hello", "replicas": 1, "tag": "1.25"}))
    (top / "templates" / "configmap.yaml").write_text(CONFIGMAP)
    (top / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    (top / "templates" / "hook-job.yaml").write_text(HOOK_JOB)
    (top / "templates" / "test-pod.yaml").write_text(TEST_POD)
    (top / "crds" / "widgets.yaml").write_text(CRD)
    if extra:
        (top / "templates" / "extra.yaml").write_text(EXTRA)
    return top


def helm(*args: str, cwd: Path | None = None) -> str:
    assert HELM, "helm is not on the PATH (bash tools/setup installs it)"
    done = subprocess.run([HELM, *args], cwd=cwd, capture_output=True, check=True, text=True)
    return done.stdout


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class ChartRepo:
    """`publish()` packages a chart into the served folder and re-indexes it."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.url = f"http://127.0.0.1:{port}"
        self.work = root.parent / "chart-sources"

    def publish(self, name: str, version: str, **kwargs: Any) -> None:
        folder = write_chart(self.work / version, name, version, **kwargs)
        helm("package", str(folder), "--destination", str(self.root))
        helm("repo", "index", str(self.root), "--url", self.url)


class _Guarded(_Quiet):
    """Serves only requests with the expected Authorization header (basic auth)."""

    expected = ""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.headers.get("Authorization") != self.expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="charts"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()


@contextmanager
def serve_folder(root: Path, *, authorization: str = "") -> Iterator[int]:
    root.mkdir(parents=True, exist_ok=True)
    handler: Any = _Quiet
    if authorization:
        handler = type("Guarded", (_Guarded,), {"expected": authorization})
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def chart_repo(tmp: Path, *, authorization: str = "") -> Iterator[ChartRepo]:
    with serve_folder(tmp / "repo", authorization=authorization) as port:
        yield ChartRepo(tmp / "repo", port)


@contextmanager
def oci_registry(tmp: Path) -> Iterator[str]:
    """Debian's `docker-registry` on 127.0.0.1 (plain HTTP, no auth); yields `host:port`."""
    import os
    import time
    import urllib.request

    binary = shutil.which("docker-registry")
    assert binary, "docker-registry is not installed (tools/apt-packages.txt, tools/setup --test)"
    port = free_port()
    config = tmp / "registry.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "error"},
        "storage": {"filesystem": {"rootdirectory": str(tmp / "registry-data")}},
        "http": {"addr": f"127.0.0.1:{port}"}}))
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "OTEL_TRACES_EXPORTER":
                                                            "none"})
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError("docker-registry did not start") from None
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def push_oci(tmp: Path, registry: str, name: str, version: str, **kwargs: Any) -> None:
    folder = write_chart(tmp / f"oci-src-{version}", name, version, **kwargs)
    out = tmp / f"oci-pkg-{version}"
    helm("package", str(folder), "--destination", str(out))
    helm("push", str(out / f"{name}-{version}.tgz"), f"oci://{registry}/charts", "--plain-http",
         "--registry-config", str(tmp / "registry-config.json"))
