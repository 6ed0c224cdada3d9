"""A cold `gitfleet hub --once` pays for what a render needs, not for the daemon's parts.

Most of a cold one-change round's CPU is the process start and its imports (bench/README.md,
"The cold one-change round against the running hub"): the Kubernetes client (only push workers
and shards use it) and the listener's HTTP stack (uvicorn, starlette's application, the
webhook and tip routes: only the daemon serves them) are not imported for `--once`. Counted
from the process's own `sys.modules`, never timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.harness import ROOT, example_repo

PROBE = """
import json, sys
from gitfleet.cli import main
code = main()
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""
DAEMON_ONLY = ("kubernetes", "uvicorn", "starlette.applications", "gitfleet.hub.loop",
               "gitfleet.hub.webhook", "gitfleet.hub.tipserver", "gitfleet.httpthread")


def test_a_cold_once_round_imports_neither_the_kubernetes_client_nor_the_http_stack(
        tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "hub", "--repo", str(repo), "--once", "--no-fleet-status",
         "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["code"] == 0, done.stderr
    loaded = [m for m in answer["modules"]
              if any(m == name or m.startswith(name + ".") for name in DAEMON_ONLY)]
    assert loaded == [], loaded
