"""`gitfleet kubesim` standalone: prints where it listens, writes a kubeconfig, stops on TERM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubernetes import client, config


def test_standalone_server_with_kubeconfig(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc" / "config"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitfleet", "kubesim", "--port", "0", "--kubeconfig-out",
         str(kubeconfig), "--nodes", "3", "--cpu", "2", "--memory", "4Gi"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        listening = proc.stdout.readline()
        assert listening.startswith("kubesim listening on http://127.0.0.1:")
        assert "kubeconfig written to" in proc.stdout.readline()
        api = config.new_client_from_config(str(kubeconfig))
        try:
            nodes = client.CoreV1Api(api).list_node().items
        finally:
            api.close()
        assert len(nodes) == 3
        assert {n.status.allocatable["memory"] for n in nodes} == {"4Gi"}
        assert api.configuration.host == listening.split()[-1]
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert proc.returncode == 0
