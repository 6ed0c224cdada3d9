"""Change-to-applied at the defaults, before and after tip documents (issue 24 items 2 and 8).

    .venv/bin/python bench/bench_tips.py [--mode before|after|both] [--trials 5] [--idle 60]
    .venv/bin/python bench/bench_tips.py --publish 10000
    .venv/bin/python bench/bench_tips.py --serve 10

`--publish N`: the hub's side alone at N clusters: the TipPublisher reactor signing and writing
N documents (board and --tips-dir folder) on a first round, re-issuing one moved cluster, and a
restarted hub finding its folder current. `--serve S`: the hub's listener (uvicorn, in process)
answering conditional GETs of 1,000 documents (304) to 4 keep-alive clients for S seconds.

Everything real, on 127.0.0.1: the worked example fleet in a bare repository behind
`git daemon --verbose`, `gitfleet hub` (its defaults: fleet.yaml `intervals.fetch` 15s, signing
key), `gitfleet kubesim`, and `gitfleet agent --cluster prod-east` at its defaults (`--interval
10s`, trusting the hub's key). The agent reaches the same repository by another name
(`agent.git`, a symlink), so the daemon's log tells its fetches from the hub's.

- before: no webhook, no tips: the hub finds a push at its next fetch, the agent the new
  branch at its next fetch.
- after: the repository's post-receive hook sends a signed GitHub-style webhook to the hub
  (`--webhook-secret-file`), the hub publishes tips (`--serve-tips`), the agent long-polls them
  (`--tips-url`). No interval is changed.

Each trial waits a random time (so the push lands at a random phase of both intervals), then
edits the web ConfigMap (which prod-east runs), pushes, and times push-start to the new value in
prod-east's kubesim. Also counted: the agent's Git fetches while idle for --idle seconds. CPU
time of the hub and agent (with their reaped Git children) is printed next to wall time.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitfleet.kube.client import KubeClient, api_client  # noqa: E402
from gitfleet.state.signing import SigningKey  # noqa: E402
from tests.githosts.servers import _stop as stop  # noqa: E402
from tests.gitserver import free_port  # noqa: E402
from tests.harness import clone, example_repo, git  # noqa: E402
from tests.tips.servers import CountingGitDaemon  # noqa: E402

CONFIG = "templates/web/web.yaml"
HOOK = """#!{python}
import hashlib, hmac, json, sys, urllib.request, uuid
secret = open({secret!r}).read().strip().encode()
for line in sys.stdin:
    ref = line.split()[2]
    body = json.dumps({{"ref": ref}}).encode()
    sig = hmac.new(secret, body, hashlib.sha256).hexdigest()
    req = urllib.request.Request({url!r}, data=body, method="POST", headers={{
        "X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + sig,
        "X-GitHub-Delivery": str(uuid.uuid4()), "Content-Type": "application/json"}})
    try:
        urllib.request.urlopen(req, timeout=5).read()
    except Exception as exc:
        print("webhook failed:", exc, file=sys.stderr)
"""


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its reaped children (its Git commands)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    return ticks / os.sysconf("SC_CLK_TCK")


def start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "wb")  # noqa: SIM115
    return subprocess.Popen([sys.executable, "-m", "gitfleet", *argv], stdout=out,
                            stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)


def wait(check, timeout: float, what: str, every: float = 0.02):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise SystemExit(f"timed out after {timeout}s waiting for {what}")


def web_config(kube: KubeClient) -> str:
    try:
        obj = kube.get("v1", "ConfigMap", "web", "web-config")
    except Exception:      # the API server starting, the namespace not there yet
        return ""
    return "" if obj is None else str(obj.get("data", {}).get("server.json", ""))


def run_mode(mode: str, trials: int, idle: float, work_dir: Path, rng: random.Random) -> dict:
    tips = mode == "after"
    base = work_dir / "git"
    base.mkdir()
    source = example_repo(work_dir / "source")
    bare = base / "fleet.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(bare)], check=True)
    (base / "agent.git").symlink_to(bare)
    key = SigningKey.generate()
    key.save(work_dir / "hub.key")
    (work_dir / "hub.pub").write_text(key.public_line() + "\n")
    hub_port, secret = free_port(), work_dir / "webhook.secret"
    secret.write_text("bench-secret\n")
    if tips:
        hook = bare / "hooks" / "post-receive"
        hook.write_text(HOOK.format(python=sys.executable, secret=str(secret),
                                    url=f"http://127.0.0.1:{hub_port}/hooks/git"))
        hook.chmod(0o755)
    daemon = CountingGitDaemon(base, work_dir / "daemon.log")
    daemon.up()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        kubeconfig = work_dir / "kubeconfig"
        procs.append(start(["kubesim", "--kubeconfig-out", str(kubeconfig), "--nodes", "2"],
                           work_dir / "kubesim.log"))
        wait(kubeconfig.exists, 30, "kubesim")
        hub_args = ["hub", "--repo", daemon.url("fleet.git"), "--listen",
                    f"127.0.0.1:{hub_port}", "--signing-key", str(work_dir / "hub.key"),
                    "--cache-dir", str(work_dir / "cache")]
        if tips:
            hub_args += ["--webhook-secret-file", str(secret), "--serve-tips"]
        hub = start(hub_args, work_dir / "hub.log")
        procs.append(hub)
        agent_args = ["agent", "--repo", daemon.url("agent.git"), "--cluster", "prod-east",
                      "--kubeconfig", str(kubeconfig), "--trust-hub-key",
                      str(work_dir / "hub.pub"), "--workdir", str(work_dir / "agent"),
                      "--no-register"]
        if tips:
            agent_args += ["--tips-url", f"http://127.0.0.1:{hub_port}/tips"]
        agent = start(agent_args, work_dir / "agent.log")
        procs.append(agent)
        kube = KubeClient(api_client(kubeconfig))
        wait(lambda: web_config(kube), 120, "the first sync", every=0.2)
        time.sleep(3)                                  # the first round's status pushes
        def agent_fetches() -> int:
            return daemon.log.read_text().count("Request upload-pack for '/agent.git'")

        idle_before = agent_fetches()
        time.sleep(idle)
        idle_fetches = agent_fetches() - idle_before

        work = clone(bare, work_dir / "work")
        git(work, "config", "user.email", "bench@example.com")
        git(work, "config", "user.name", "bench")
        latencies = []
        for trial in range(trials):
            time.sleep(rng.uniform(0, 25))             # a random phase of both intervals
            text = (work / CONFIG).read_text()
            value = f'"cacheSeconds": {100 + trial}'
            (work / CONFIG).write_text(re.sub(r'"cacheSeconds": \d+', value, text))
            git(work, "commit", "-qam", f"trial {trial}")
            started = time.monotonic()
            git(work, "push", "-q", "origin", "HEAD:main")
            wait(lambda v=value: v in web_config(kube), 120, f"trial {trial} applied")
            latencies.append(time.monotonic() - started)
            print(f"  {mode} trial {trial}: {latencies[-1]:.2f}s", flush=True)
        cpu = {"hub": cpu_seconds(hub.pid), "agent": cpu_seconds(agent.pid)}
        return {"mode": mode, "latencies": latencies, "idle_fetches": idle_fetches,
                "idle": idle, "cpu": cpu}
    finally:
        for proc in reversed(procs):
            stop(proc)                         # its process group: SIGTERM, then SIGKILL
        daemon.down()


def publish_cost(clusters: int) -> None:
    from gitfleet.clock import SystemClock
    from gitfleet.hub.tips import TipBoard, TipFolder, TipPublisher
    from gitfleet.layout import Branches

    heads = {f"c{i:05d}": f"{i:040x}" for i in range(clusters)}
    moved = {**heads, "c00001": "f" * 40}
    key = SigningKey.generate()
    with tempfile.TemporaryDirectory(prefix="bench-tips-publish-") as folder:
        def publisher() -> TipPublisher:
            return TipPublisher(None, SystemClock(), key=key,  # type: ignore[arg-type]
                                board=TipBoard(), folder=TipFolder(Path(folder)))

        first = publisher()
        for label, run, what in (("first round", first, heads), ("one moved", first, moved),
                                 ("restarted hub", publisher(), moved)):
            wall, cpu, issued = time.monotonic(), time.process_time(), run.issued
            run.publish(what, state="a" * 40, ref=Branches().cluster)
            print(f"{clusters} clusters, {label}: wall {time.monotonic() - wall:.2f} s, "
                  f"CPU {time.process_time() - cpu:.2f} s, signed {run.issued - issued}")
    print(f"load average {os.getloadavg()[0]:.2f}")


def serve_rate(seconds: float) -> None:
    import http.client
    import threading

    from gitfleet.hub.metrics import Metrics
    from gitfleet.hub.tips import Published, TipBoard, etag_of
    from gitfleet.hub.tipserver import tips_app
    from gitfleet.hub.triggers import Wakeup
    from gitfleet.hub.webhook import HubServer

    board = TipBoard()
    for i in range(1000):
        body = b"x" * 600
        board.put(f"c{i:04d}", Published("a" * 40, body, etag_of(body + bytes([i % 256]))))
    server = HubServer("127.0.0.1", 0, wake=Wakeup(), metrics=Metrics(),
                       tips=tips_app(board, max_wait=25, slots=8))
    server.start()
    answered, end = [0] * 4, time.monotonic() + seconds

    def client(k: int) -> None:
        conn = http.client.HTTPConnection(*server.address, timeout=10)
        i = k
        while time.monotonic() < end:
            name = f"c{i % 1000:04d}"
            doc = board.get(name)
            assert doc is not None
            conn.request("GET", f"/tips/{name}.json", headers={"If-None-Match": doc.etag})
            response = conn.getresponse()
            response.read()
            assert response.status == 304, response.status
            answered[k] += 1
            i += 7

    cpu = time.process_time()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    server.stop()
    print(f"{sum(answered) / seconds:.0f} conditional GETs a second (304), CPU "
          f"{time.process_time() - cpu:.1f} s in {seconds:.0f} s for server and clients "
          f"together, load average {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=["before", "after", "both"], default="both")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--serve", type=float, metavar="SECONDS",
                        help="measure only the hub listener's rate of 304 answers")
    parser.add_argument("--publish", type=int, metavar="N",
                        help="measure only the hub's publishing at N clusters")
    args = parser.parse_args()
    if args.serve:
        serve_rate(args.serve)
        return
    if args.publish:
        publish_cost(args.publish)
        return
    rng = random.Random(args.seed)
    modes = ["before", "after"] if args.mode == "both" else [args.mode]
    wall0, cpu0 = time.monotonic(), time.process_time()
    results = []
    for mode in modes:
        folder = Path(tempfile.mkdtemp(prefix=f"bench-tips-{mode}-"))
        try:
            results.append(run_mode(mode, args.trials, args.idle, folder, rng))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\nload average {os.getloadavg()[0]:.2f}; wall {time.monotonic() - wall0:.0f}s, "
          f"bench CPU {time.process_time() - cpu0:.1f}s")
    print("| mode | change-to-applied p50 | max | trials | agent Git fetches idle | "
          "hub CPU | agent CPU |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        lat = r["latencies"]
        per_min = r["idle_fetches"] * 60 / r["idle"]
        print(f"| {r['mode']} | {statistics.median(lat):.1f} s | {max(lat):.1f} s | "
              f"{len(lat)} | {r['idle_fetches']} in {r['idle']:.0f} s ({per_min:.1f}/min) | "
              f"{r['cpu']['hub']:.1f} s | {r['cpu']['agent']:.1f} s |")


if __name__ == "__main__":
    main()
