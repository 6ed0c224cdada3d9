"""Server-side applies per second against kubesim from one official-client thread.

Run: python bench/bench_kubesim.py [--count N] [--rounds R]

Each round measures, over loopback with keep-alive, N small ConfigMap applies
(field manager "gitfleet", force) sent by the official `kubernetes` client from one thread:
- null:    a stdlib HTTP server that answers every request with a fixed small JSON body
           (the ceiling: the client and HTTP alone);
- kubesim: creating N new objects, then N no-op re-applies of the same objects;
each with the server in this process (sharing the GIL with the client) and in a subprocess
(`gitfleet kubesim`). The median over the rounds is printed; the machine is shared, so
single runs are noisy. Finally the server-side CPU cost of one apply without HTTP (process
time, so other load on the machine barely shows), new and no-op, for a small ConfigMap and a
Deployment.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kubernetes import client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitfleet.kubesim import KubeSim  # noqa: E402
from gitfleet.kubesim.apiserver import Request  # noqa: E402


class NullHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "x", "namespace": "bench"}}).encode()

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(self.body), self.body))

    do_PATCH = do_POST = do_GET = _answer  # noqa: N815

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class NullServer(ThreadingHTTPServer):
    daemon_threads = True

    def get_request(self):  # type: ignore[no-untyped-def]
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, addr


@contextlib.contextmanager
def null_server() -> Iterator[str]:
    server = NullServer(("127.0.0.1", 0), NullHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def subprocess_server(args: list[str]) -> Iterator[str]:
    """Start a server process that prints '... <url>' as its first line."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    finally:
        proc.terminate()
        proc.wait(10)


def _body(i: int, namespace: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i}", "namespace": namespace, "labels": {"app": "bench"}},
            "data": {"key": f"value-{i}", "other": "x"}}


def applies_per_second(url: str, count: int, *, namespace: str) -> tuple[float, float]:
    """(new objects/s, no-op re-applies/s) for `count` applies from one client thread."""
    config = client.Configuration()
    config.host = url
    api = client.ApiClient(config)
    core = client.CoreV1Api(api)
    with contextlib.suppress(client.ApiException):
        core.create_namespace({"metadata": {"name": namespace}})
    rates = []
    for _ in range(2):
        start = time.perf_counter()
        for i in range(count):
            core.patch_namespaced_config_map(
                f"cm-{i}", namespace, _body(i, namespace), field_manager="gitfleet",
                force=True, _content_type="application/apply-patch+yaml")
        rates.append(count / (time.perf_counter() - start))
    api.close()
    return rates[0], rates[1]


def _deployment(i: int, namespace: str) -> dict[str, object]:
    labels = {"app": f"web-{i}"}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"web-{i}", "namespace": namespace, "labels": labels},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels}, "spec": {"containers": [{
                    "name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                    "env": [{"name": "MODE", "value": "blue"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}}


def server_side_cost(count: int, kind: str = "ConfigMap") -> tuple[float, float]:
    """CPU microseconds kubesim spends on one apply without HTTP: (new object, no-op
    re-apply), for small ConfigMaps or Deployments (its controller idle)."""
    sim = KubeSim(controller_delay=3600)
    make, api_version = (_body, "v1") if kind == "ConfigMap" else (_deployment, "apps/v1")
    rt = sim.catalog.by_kind(api_version, kind)
    assert rt is not None
    bodies = [json.dumps(make(i, "default")).encode() for i in range(count)]
    sim.api.patch(Request("patch", rt, namespace="default", name=f"{rt.plural}-warm",
                          body=json.dumps(dict(make(-1, "default"), metadata={
                              "name": f"{rt.plural}-warm", "namespace": "default"})).encode(),
                          query={"fieldManager": "gitfleet"},
                          content_type="application/apply-patch+yaml"))
    costs = []
    for _ in range(2):
        start = time.process_time()
        for body in bodies:
            name = json.loads(body)["metadata"]["name"]
            req = Request("patch", rt, namespace="default", name=name, body=body,
                          query={"fieldManager": "gitfleet", "force": "true"},
                          content_type="application/apply-patch+yaml")
            with sim.store.lock:
                sim.api.patch(req)
        costs.append((time.process_time() - start) / count * 1e6)
    return costs[0], costs[1]


def serve_null() -> int:
    with null_server() as url:
        print(f"null listening on {url}", flush=True)
        threading.Event().wait()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve-null", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_null:
        return serve_null()
    n = args.count
    results: dict[str, list[float]] = {}

    def record(name: str, value: float) -> None:
        results.setdefault(name, []).append(value)

    with subprocess_server([__file__, "--serve-null"]) as null_url, \
            tempfile.TemporaryDirectory() as tmp, \
            subprocess_server(["-m", "gitfleet", "kubesim", "--kubeconfig-out",
                               f"{tmp}/kubeconfig"]) as sim_url:
        for r in range(args.rounds):
            with null_server() as url:
                record("null, in-process", applies_per_second(url, n, namespace="b")[0])
            record("null, subprocess", applies_per_second(null_url, n, namespace="b")[0])
            with KubeSim() as sim:
                created, noop = applies_per_second(sim.url, n, namespace="bench")
            record("kubesim in-process, create", created)
            record("kubesim in-process, no-op re-apply", noop)
            created, noop = applies_per_second(sim_url, n, namespace=f"bench-{r}")
            record("kubesim subprocess, create", created)
            record("kubesim subprocess, no-op re-apply", noop)
    print(f"{n} small ConfigMap applies from one official-client thread, "
          f"{args.rounds} rounds (median, min-max), requests/s:")
    for name, values in results.items():
        print(f"  {name:38s} {statistics.median(values):7.0f}  "
              f"({min(values):.0f}-{max(values):.0f})")
    for kind in ("ConfigMap", "Deployment"):
        created, noop = server_side_cost(n, kind)
        print(f"kubesim server-side CPU cost of one {kind} apply (no HTTP): "
              f"{created:.0f} us new, {noop:.0f} us no-op")
    return 0


if __name__ == "__main__":
    sys.exit(main())
