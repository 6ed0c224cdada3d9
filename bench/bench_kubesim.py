"""Server-side applies per second against kubesim from one official-client thread.

Run: python bench/bench_kubesim.py [--count N]

Prints three figures:
- null:       the official client against a loopback HTTP server that answers every request
              with a fixed small JSON body (the ceiling: client and HTTP cost only);
- in-process: kubesim started in this process (client and server share the GIL);
- subprocess: kubesim started as `gitfleet kubesim` in another process.
The applies are small ConfigMaps with field manager "gitfleet", each a new object, then the
same N again as no-op re-applies.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
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


class NullHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "x", "namespace": "bench"}}).encode()

    def do_PATCH(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(self.body), self.body))

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
def kubesim_subprocess() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitfleet", "kubesim", "--kubeconfig-out",
             f"{tmp}/kubeconfig"], stdout=subprocess.PIPE, text=True, cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)))
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            url = line.strip().rsplit(" ", 1)[-1]
            yield url
        finally:
            proc.terminate()
            proc.wait(10)


def run_applies(url: str, count: int, *, namespace: str = "bench") -> tuple[float, float]:
    config = client.Configuration()
    config.host = url
    api = client.ApiClient(config)
    core = client.CoreV1Api(api)
    with contextlib.suppress(client.ApiException):
        core.create_namespace({"metadata": {"name": namespace}})
    rates = []
    for _ in range(2):  # first pass creates, second pass is no-op re-applies
        start = time.perf_counter()
        for i in range(count):
            core.patch_namespaced_config_map(
                f"cm-{i}", namespace,
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": f"cm-{i}", "namespace": namespace,
                              "labels": {"app": "bench"}},
                 "data": {"key": f"value-{i}", "other": "x"}},
                field_manager="gitfleet", force=True,
                _content_type="application/apply-patch+yaml")
        rates.append(count / (time.perf_counter() - start))
    api.close()
    return rates[0], rates[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    n = args.count
    with null_server() as url:
        null_rate, _ = run_applies(url, n)
    print(f"null loopback server:   {null_rate:8.0f} requests/s  (client ceiling)")
    with KubeSim() as sim:
        created, noop = run_applies(sim.url, n)
        writes = sim.request_count("patch")
    print(f"kubesim in-process:     {created:8.0f} applies/s (create), "
          f"{noop:8.0f} applies/s (no-op re-apply); {writes} patches served")
    with kubesim_subprocess() as url:
        created, noop = run_applies(url, n)
    print(f"kubesim subprocess:     {created:8.0f} applies/s (create), "
          f"{noop:8.0f} applies/s (no-op re-apply)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
