"""`gitfleet demo` end to end, as a user runs it: bounded in time, and nothing left behind."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitfleet.demo.example import worked_example
from gitfleet.source import read_worktree

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DEMO_TIMEOUT = 120  # the demo itself aims at well under 60 s


def leftovers(marker: str) -> list[str]:
    """Command lines of live processes that mention `marker` (the demo's own folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split(") ", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue
        cmdline = raw.replace(b"\0", b" ").decode(errors="replace")
        if marker in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def ports_of(output: str) -> set[int]:
    return {int(p) for p in re.findall(r"//127\.0\.0\.1:(\d+)", output)}


def test_demo_runs_the_whole_loop_and_leaves_nothing_behind(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "gitfleet", "demo", "--workdir", str(workdir)],
                          capture_output=True, text=True, timeout=DEMO_TIMEOUT)
    out = proc.stdout
    logs = "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}"
                     for f in sorted((workdir / "logs").glob("*.log")))
    assert proc.returncode == 0, f"{out}\n{proc.stderr}\n{logs}"
    assert "the fleet converged" in out
    assert re.search(r"prod-east\s+True\s+Synced", out) and re.search(r"prod-west\s+True\s+Synced",
                                                                       out)
    assert re.search(r"staging\s+True\s+Synced", out)      # Push mode: the hub's worker
    assert "staging: applied by the hub's push worker (heartbeat from hub-push-worker/" in out
    assert "gitfleet diff" in out and "Deployment web/web 4→6" in out
    assert "the change is live: web replicas prod-east=6, prod-west=3" in out
    assert "Recovery put web/web back to 6 replicas" in out
    # a Helm chart kept in the fleet repo, rendered by the hub with each cluster's values
    assert "the chart runs with each cluster's values: prod-east: 'hello' x1, prod-west: " \
           "'hello from the west' x2" in out, out
    chart_diff = out.split("== a Helm chart:", 1)[1].split("pushed", 1)[0]
    assert "ConfigMap hello/hello-greeting" in chart_diff, chart_diff
    # autoscaling: a load rise in prod-east scales the cart out in both prod clusters
    step = out.split("== autoscaling:", 1)[1].split("== where everything ended ==", 1)[0]
    before = re.search(r"cart replicas before: prod-east=(\d+) \(\1 ready\), "
                       r"prod-west=(\d+) \(\2 ready\)", step)
    after = re.search(r"cart replicas after: prod-east=(\d+) \(\1 ready\), "
                      r"prod-west=(\d+) \(\2 ready\)", step)
    assert before and after, step
    assert int(after[1]) > int(before[1]) and int(after[2]) > int(before[2]), step
    decision = "Autoscale FederatedHPA shop/cart: 2 -> 4 replicas (memory 100%/50%"
    assert f"state commit: {decision}" in step
    state_log = subprocess.run(["git", "--git-dir", str(workdir / "served" / "fleet.git"),
                                "log", "--format=%s", "gitfleet/state"], capture_output=True,
                               text=True, timeout=30).stdout
    assert [s for s in state_log.splitlines() if s.startswith("Autoscale")] == [
        s for s in state_log.splitlines() if s.startswith(decision)], state_log  # one decision
    assert re.search(r"shop\s+cart\s+Deployment/cart\s+memory 50%/50%\s+2\s+10\s+4\s+4", step)
    assert re.search(r"shop\s+cart-office-hours\s+morning\s+FederatedHPA/cart\s+0 8 \* \* 1-5"
                     r"\s+\d{4}-\d\d-\d\dT\d\d:00:00Z", step)
    assert "rule morning at '0 8 * * 1-5' (Europe/Berlin): minReplicas 6" in step
    end = out.split("== where everything ended ==", 1)[1]
    assert re.search(r"web\s+web\s+Subscription\s+2\s+2/2\s+Success\s+9", end)
    # failover: prod-west's agent stops, its Divided share moves to prod-east
    assert "the hub marks prod-west Unknown" in out
    assert "prod-east now runs metrics/collector with 4 replicas (was 3)" in out
    assert "old copy of apps/Deployment/metrics/collector in prod-west purged" in out
    assert re.search(r"prod-west\s+apps/Deployment/web/web\s+Gracefully\s+Done\s+3", out)
    assert "stopped the hub, the agents, the clusters and git daemon" in out
    assert "killed" not in out.rsplit("stopped", 1)[1]  # everything stopped on SIGTERM
    assert leftovers(str(workdir)) == []
    ports = ports_of(out)
    assert len(ports) >= 3  # git daemon and two kubesims
    assert not any(listening(p) for p in ports)


def test_ctrl_c_stops_everything(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    proc = subprocess.Popen([sys.executable, "-m", "gitfleet", "demo", "--workdir",
                             str(workdir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        seen = []
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("["):  # the daemons are up and the demo is watching
                break
        assert any(line.startswith("[") for line in seen), "".join(seen)
        assert leftovers(str(workdir)), "the demo should have children running by now"
        proc.send_signal(signal.SIGINT)
        # a bound, not a speed: stopping the hub, the agents and the push worker took over
        # 30 s at load 8-13
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        # whatever failed, nothing the demo started outlives the test: killed at a 30-s bound,
        # the demo left its hub, two agents and git daemon (own sessions) polling for an hour
        left = leftovers(str(workdir))
        for entry in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.split(":", 1)[0]), signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "stopped the hub, the agents, the clusters and git daemon" in rest
    assert left == []
    assert not any(listening(p) for p in ports_of("".join(seen)))


def test_embedded_example_is_the_worked_example() -> None:
    """The demo ships a copy of the repository's worked example; they must not drift apart."""
    assert worked_example() == read_worktree(ROOT)
