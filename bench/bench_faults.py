"""Hub fault soak: SIGKILL at its own Git children, and a Git remote outage.

    .venv/bin/python bench/bench_faults.py [--clusters 200] [--kills 50] [--outage 60]

Soak: on a synthetic fleet (bench/fleetgen.py) in a local repository, each round commits a
fleet-wide change, runs `gitfleet hub --once` in its own process group and SIGKILLs the group
when a child `git update-ref` (the cluster branches), the second `update-ref` (the state),
`index-pack` or `cat-file` appears, or after a random delay. After each kill it checks what a
reader sees (the state claims a known source; no cluster branch behind it), then runs the next
`hub --once`, which must succeed on its own (no wedge) and leave every ref at the new render.
Counts kills that landed, by point, violations, wedges, stale files removed, and pack growth.

Outage: a bare repository behind `git daemon` on 127.0.0.1; `gitfleet hub` (daemon, default
backoff cap) renders it, the daemon goes away for --outage seconds while a push lands, and
comes back: time from its return to the state carrying the push; then the same with a webhook
sent when the remote returns.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_hub import git, make_repo  # noqa: E402
from fleetgen import generate  # noqa: E402

from tests.gitserver import free_port  # noqa: E402
from tests.hub.faults import POINTS, Remote, run_and_kill, violations  # noqa: E402

STATE = "refs/heads/gitfleet/state"


def source(repo: Path) -> str:
    try:
        return git(repo, "log", "-1", "--format=%(trailers:key=Source-Commit,valueonly)",
                   STATE).strip()
    except subprocess.CalledProcessError:
        return ""


def consistent(repo: Path) -> bool:
    return violations(repo, [source(repo)]) == []


def pack_bytes(repo: Path) -> int:
    return sum(p.stat().st_size for p in (repo / ".git" / "objects").rglob("*") if p.is_file())


def fleet_wide_change(repo: Path, n: int) -> str:
    template = repo / "templates" / "app000" / "objects.yaml"
    text = template.read_text()
    old = ":1.0" if n == 0 else f":1.0-{n - 1}"
    template.write_text(text.replace(old, f":1.0-{n}", 1))
    git(repo, "commit", "-q", "-am", f"image 1.0-{n} everywhere")
    return git(repo, "rev-parse", "HEAD").strip()


def soak(tmp: Path, clusters: int, kills: int, stale_after: str, seed: int) -> dict[str, object]:
    repo = tmp / "fleet"
    make_repo(repo, generate(clusters=clusters, templates=30, units=10))
    once = [sys.executable, "-m", "gitfleet", "hub", "--repo", str(repo), "--once",
            "--no-fleet-status", "--stale-after", stale_after]
    first = subprocess.run(once, cwd=ROOT, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    sources = [source(repo)]
    start_bytes = pack_bytes(repo)
    rng = random.Random(seed)
    landed: collections.Counter[str] = collections.Counter()
    bad: list[str] = []
    wedges = removed_locks = removed_tmp = rounds = 0
    recover_s: list[float] = []
    while sum(landed.values()) < kills and rounds < 4 * kills:
        point = POINTS[rounds % len(POINTS)]
        sources.append(fleet_wide_change(repo, rounds))
        rounds += 1
        kill = run_and_kill(once, point=point, rng=rng, cwd=ROOT)
        if kill is not None:
            landed[f"{point}->{kill.hit or 'delay'}"] += 1
        bad += [f"round {rounds} ({point}): {v}" for v in violations(repo, sources)]
        t = time.perf_counter()
        done = subprocess.run(once, cwd=ROOT, capture_output=True, text=True, timeout=600)
        recover_s.append(time.perf_counter() - t)
        removed_locks += done.stderr.count("removed a stale lock")
        removed_tmp += done.stderr.count("removed a temporary file")
        if done.returncode != 0:
            wedges += 1
            bad.append(f"round {rounds}: next hub failed: {done.stderr.strip()[-300:]}")
            continue
        if source(repo) != sources[-1] or not consistent(repo):
            bad.append(f"round {rounds}: after recovery, refs not all at the new render")
    fsck = subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo,
                          capture_output=True, text=True)
    return {"clusters": clusters, "rounds": rounds, "kills": sum(landed.values()),
            "kill_points": dict(sorted(landed.items())), "violations": len(bad),
            "violation_examples": bad[:5], "wedges": wedges,
            "stale_locks_removed": removed_locks, "temporary_files_removed": removed_tmp,
            "recovery_round_median_s": round(sorted(recover_s)[len(recover_s) // 2], 2),
            "objects_mb_start": round(start_bytes / 2**20, 1),
            "objects_mb_end": round(pack_bytes(repo) / 2**20, 1),
            "fsck_ok": fsck.returncode == 0}


def outage(tmp: Path, seconds: float, *, webhook: bool) -> dict[str, object]:
    work = tmp / f"work-{webhook}"
    make_repo(work, generate(clusters=100, templates=20, units=10))
    base = tmp / f"served-{webhook}"
    base.mkdir()
    bare = base / "fleet.git"
    git(tmp, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))
    remote = Remote(base, free_port())
    listen = free_port()
    log = open(tmp / f"hub-{webhook}.log", "wb")  # noqa: SIM115
    remote.up()
    cmd = [sys.executable, "-m", "gitfleet", "hub", "--repo", f"{remote.url}/fleet.git",
           "--interval", "2s", "--no-fleet-status", "--cache-dir", str(tmp / f"cache-{webhook}"),
           "--listen", f"127.0.0.1:{listen}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log)
    try:
        head = git(work, "rev-parse", "HEAD").strip()
        deadline = time.monotonic() + 300
        while source(bare) != head:
            assert time.monotonic() < deadline and proc.poll() is None, "no first render"
            time.sleep(0.05)
        remote.down()
        time.sleep(1)
        loc = work / "templates" / "app000" / "objects.yaml"
        loc.write_text(loc.read_text().replace(":1.0", ":1.1", 1))
        git(work, "commit", "-q", "-am", "pushed during the outage")
        git(work, "push", "-q", "origin", "main")
        pushed = git(work, "rev-parse", "HEAD").strip()
        time.sleep(max(0.0, seconds - 1))
        remote.up()
        back = time.perf_counter()
        if webhook:
            body = json.dumps({"ref": "refs/heads/main", "after": pushed}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{listen}/hooks/git", data=body,
                                         headers={"X-Gitea-Event": "push"}, method="POST")
            urllib.request.urlopen(req, timeout=5).close()
        while source(bare) != pushed:
            assert time.perf_counter() - back < 300 and proc.poll() is None, "no recovery"
            time.sleep(0.02)
        took = time.perf_counter() - back
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        remote.close()
        log.close()
    failures = (tmp / f"hub-{webhook}.log").read_text().count("step failed")
    return {"outage_s": seconds, "webhook": webhook, "failed_rounds": failures,
            "remote_back_to_render_s": round(took, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--stale-after", default="1s",
                        help="the hub's --stale-after during the soak (default 1s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--outage", type=float, default=60.0)
    parser.add_argument("--skip-soak", action="store_true")
    parser.add_argument("--skip-outage", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    try:
        if not args.skip_soak:
            print(json.dumps(soak(tmp, args.clusters, args.kills, args.stale_after, args.seed)),
                  flush=True)
        if not args.skip_outage:
            for webhook in (False, True):
                print(json.dumps(outage(tmp, args.outage, webhook=webhook)), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
