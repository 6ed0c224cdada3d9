"""End-to-end hub benchmark: the real render and state writer on a synthetic fleet repo.

    .venv/bin/python bench/bench_hub.py [--clusters 1000] [--templates 100] [--pushes 20]

On a fleet from `bench/fleetgen.py` committed to a fresh local repository it measures, with an
in-process `Hub` (what `gitfleet hub` runs each round):
  - the first round: render + first full state write (+ fleet status fold);
  - a no-op round (nothing changed);
  - a one-line change of one cluster's Localization: render + write, and which refs moved;
  - the same with a freshly started hub (it reads the previous state back from Git);
then, with `gitfleet hub` running as a daemon on a bare copy (watch trigger), the push-to-state
latency: time from `git push` returning to the state carrying the pushed commit, over N pushes.

A first write creates a file per cluster branch (Git's lock file, renamed into the ref), and
on ext4 creating a file costs from 0.02 to 0.6 ms of system time depending on how recently
files near it were deleted (the kernel skips recently freed inodes one by one): in a folder
everyone's tests churn (the temporary folder) that is up to 0.6 s per 1,000 clusters. So the
run prints what creating 1,000 files costs beside the repository (`create_1000_files_cpu_s`)
and the load average; `--dir` puts the repository elsewhere.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleetgen import cluster_name, generate  # noqa: E402

from gitfleet.hub.hub import Hub  # noqa: E402
from gitfleet.hub.settings import HubSettings  # noqa: E402
from gitfleet.state.store import open_store  # noqa: E402

STATE = "refs/heads/gitfleet/state"
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
       "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.test",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.test",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env=ENV).stdout


def make_repo(path: Path, files: dict[str, bytes]) -> None:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for rel, data in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "synthetic fleet")


def change_one(repo: Path, n: int) -> str:
    """Edit cluster 0's Localization (one line) and commit; returns the commit."""
    loc = repo / "policies" / "localizations" / f"{cluster_name(0)}.yaml"
    text = loc.read_text()
    marker = '{"tuned": "'
    start = text.index(marker) + len(marker)
    end = text.index('"', start)
    loc.write_text(text[:start] + f"{cluster_name(0)}-v{n}" + text[end:])
    git(repo, "commit", "-q", "-am", f"tune {cluster_name(0)} v{n}")
    return git(repo, "rev-parse", "HEAD").strip()


def refs(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/gitfleet/")
    return dict(line.split() for line in out.splitlines())


def cpu() -> float:
    """CPU seconds used so far by this process and its finished children (Git): a figure that
    holds on a machine shared with other work, where wall-clock times do not."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def file_creation_cpu(where: Path, n: int = 1000) -> float:
    """CPU seconds (nearly all system time) to create `n` empty files in a new folder under
    `where`: what the filesystem charges there for the hub's per-branch lock files."""
    folder = Path(tempfile.mkdtemp(prefix="creates-", dir=where))
    try:
        c = cpu()
        for i in range(n):
            os.close(os.open(folder / f"f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        return cpu() - c
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def stored_objects(repo: Path) -> int:
    """Objects in the repository (loose and packed, duplicates across packs counted)."""
    out = dict(line.split(": ") for line in git(repo, "count-objects", "-v").splitlines())
    return int(out["count"]) + int(out["in-pack"])


def in_process(work: Path, repeats: int) -> dict[str, object]:
    hub = Hub(open_store(str(work)), settings=HubSettings())
    t, c = time.perf_counter(), cpu()
    first = hub.run_once()
    first_s, first_cpu = time.perf_counter() - t, cpu() - c
    first_rss = peak_rss_mib()
    assert first is not None and first.wrote
    noops = []
    for _ in range(repeats):
        t = time.perf_counter()
        assert hub.run_once() is None
        noops.append(time.perf_counter() - t)
    ones, renders, writes, moved, written, ones_cpu = [], [], [], [], [], []
    for n in range(repeats):
        before = refs(work)
        change_one(work, n)
        t, c, o = time.perf_counter(), cpu(), stored_objects(work)
        report = hub.run_once()
        ones.append(time.perf_counter() - t)
        ones_cpu.append(cpu() - c)
        written.append(stored_objects(work) - o)
        assert report is not None and report.wrote
        renders.append(report.render_seconds)
        writes.append(report.write_seconds)
        after = refs(work)
        moved.append(sorted(r.rsplit("/", 1)[1] for r in after if after[r] != before.get(r)
                            and "/clusters/" in r))
    assert all(m == [cluster_name(0)] for m in moved), moved
    restarted = Hub(open_store(str(work)), settings=HubSettings())   # cold: reads the state back
    change_one(work, repeats)
    t, c, o = time.perf_counter(), cpu(), stored_objects(work)
    report = restarted.run_once()
    restart_s = time.perf_counter() - t
    restart_cpu = cpu() - c
    restart_written = stored_objects(work) - o
    assert report is not None and report.wrote and len(report.moved) == 1
    restart_mode = getattr(report, "mode", "full")
    change_one(work, repeats + 1)
    t, c = time.perf_counter(), cpu()
    once = subprocess.run([sys.executable, "-m", "gitfleet", "hub", "--repo", str(work),
                           "--once", "--no-fleet-status"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    once_s = time.perf_counter() - t
    once_cpu = cpu() - c
    assert once.returncode == 0 and "1 cluster branches moved" in once.stdout, once.stderr
    # a fleet-wide change (one image in a template every cluster receives): objects added by
    # the warm hub, then by a freshly started one for the same kind of change
    wide = []
    for n, hub_ in enumerate((restarted, Hub(open_store(str(work)), settings=HubSettings()))):
        objects = work / "templates" / "app000" / "objects.yaml"
        text = objects.read_text()
        objects.write_text(text.replace("/d0:1.0" if n == 0 else "/d0:1.0-wide0",
                                        f"/d0:1.0-wide{n}", 1))
        git(work, "commit", "-q", "-am", f"fleet-wide image {n}")
        o = stored_objects(work)
        report = hub_.run_once()
        assert report is not None and report.wrote
        wide.append(stored_objects(work) - o)
    return {"first_round_s": first_s, "first_round_cpu_s": first_cpu,
            "first_round_peak_rss_mib": first_rss, "first_render_s": first.render_seconds,
            "first_write_s": first.write_seconds, "objects": first.result.objects,
            "noop_round_median_s": statistics.median(noops),
            "one_change_round_median_s": statistics.median(ones),
            "one_change_render_median_s": statistics.median(renders),
            "one_change_write_median_s": statistics.median(writes),
            "moved_per_change": "1 cluster branch + state",
            "one_change_round_cpu_median_s": statistics.median(ones_cpu),
            "one_change_objects_written_median": statistics.median(written),
            "restarted_hub_change_round_s": restart_s,
            "restarted_hub_change_round_cpu_s": restart_cpu,
            "restarted_hub_mode": restart_mode,
            "restarted_hub_objects_written": restart_written,
            "fleet_wide_change_objects_running_hub": wide[0],
            "fleet_wide_change_objects_restarted_hub": wide[1],
            "cold_cli_hub_once_one_change_s": once_s,
            "cold_cli_hub_once_one_change_cpu_s": once_cpu}


def latency(work: Path, tmp: Path, pushes: int) -> dict[str, object]:
    bare = tmp / "fleet.git"
    git(tmp, "clone", "-q", "--bare", str(work), str(bare))
    clone = tmp / "clone"
    git(tmp, "clone", "-q", str(bare), str(clone))
    log = open(tmp / "hub.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "gitfleet", "hub", "--repo", str(bare),
                             "--interval", "60s"], stdout=log, stderr=log, cwd=ROOT)
    try:
        head = git(bare, "rev-parse", "main").strip()
        deadline = time.monotonic() + 600
        while source(bare) != head:
            assert time.monotonic() < deadline and proc.poll() is None, "no first render"
            time.sleep(0.05)
        samples = []
        for n in range(pushes):
            sha = change_one(clone, 1000 + n)
            git(clone, "push", "-q", "origin", "main")
            t = time.perf_counter()
            while source(bare) != sha:
                assert time.perf_counter() - t < 120 and proc.poll() is None, "push not rendered"
                time.sleep(0.01)
            samples.append(time.perf_counter() - t)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    return {"pushes": pushes, "latency_median_s": statistics.median(samples),
            "latency_max_s": max(samples), "latency_min_s": min(samples)}


def source(repo: Path) -> str:
    try:
        return git(repo, "log", "-1", "--format=%(trailers:key=Source-Commit,valueonly)",
                   STATE).strip()
    except subprocess.CalledProcessError:
        return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--templates", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pushes", type=int, default=20)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the repository is made (default: the temporary folder)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-hub-", dir=args.dir))
    try:
        work = tmp / "work"
        make_repo(work, generate(clusters=args.clusters, templates=args.templates))
        creates = file_creation_cpu(tmp)
        figures = in_process(work, args.repeats)
        figures["create_1000_files_cpu_s"] = creates
        figures["load_avg"] = os.getloadavg()[0]
        print(f"clusters={args.clusters} templates={args.templates} "
              + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in figures.items()), flush=True)
        if not args.skip_latency:
            lat = latency(work, tmp, args.pushes)
            print(f"clusters={args.clusters} watch-trigger "
                  + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in lat.items()), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
