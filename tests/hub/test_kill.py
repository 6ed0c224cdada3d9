"""A hub killed with SIGKILL at random points of a render leaves every ref at the old or the
new commit, never a mix, and a restarted hub finishes the job."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import time
from pathlib import Path

from tests.hub.fleet import ROOT, STATE, commit, consistent, git, hub_cmd, refs, source_of


def synthetic_fleet(path: Path, clusters: int) -> Path:
    spec = importlib.util.spec_from_file_location("fleetgen", ROOT / "bench" / "fleetgen.py")
    assert spec and spec.loader
    fleetgen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fleetgen)
    files = fleetgen.generate(clusters=clusters, templates=30, units=10)
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for rel, data in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    commit(path, "synthetic fleet")
    return path


def test_sigkill_at_random_points_leaves_old_or_new(tmp_path: Path) -> None:
    repo = synthetic_fleet(tmp_path / "fleet", clusters=200)
    rng = random.Random(7)
    template = repo / "templates" / "app000" / "objects.yaml"
    for n in range(6):
        before = refs(repo)
        old_source = source_of(repo) if STATE in before else ""
        text = template.read_text()
        template.write_text(text.replace(":1.0", f":1.0-{n}", 1) if n == 0
                            else text.replace(f":1.0-{n - 1}", f":1.0-{n}", 1))
        new_source = commit(repo, f"image 1.0-{n} everywhere")
        proc = subprocess.Popen([*hub_cmd("--repo", str(repo), "--once", "--no-fleet-status")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=ROOT)
        try:
            time.sleep(rng.uniform(0.4, 1.6))
        finally:
            proc.kill()
            proc.wait(timeout=10)
        after = refs(repo)
        assert consistent(repo), f"round {n}: cluster branches disagree with the state"
        if STATE in after:
            assert source_of(repo) in (old_source, new_source)
        moved = {r for r in after if after[r] != before.get(r)}
        if moved:
            # all of one render, or nothing: the state moved iff any cluster branch did
            assert STATE in moved
            assert len(moved) > 1 or not before
    done = subprocess.run(hub_cmd("--repo", str(repo), "--once", "--no-fleet-status"),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert source_of(repo) == git(repo, "rev-parse", "HEAD").strip()
    assert consistent(repo)
    assert len(refs(repo, "refs/heads/gitfleet/clusters/")) == 200
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo, check=True,
                   capture_output=True)
