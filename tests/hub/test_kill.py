"""A hub killed with SIGKILL at points taken from its own Git children never leaves a state
ahead of its cluster branches, and the next hub finishes the job with no manual step."""

from __future__ import annotations

import importlib.util
import random
import subprocess
from pathlib import Path

import pytest

from tests.hub.faults import run_and_kill, violations
from tests.hub.fleet import ROOT, commit, consistent, git, hub_cmd, refs, source_of


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


@pytest.mark.slow
def test_sigkill_at_git_children_never_wedges_nor_shows_state_ahead(tmp_path: Path) -> None:
    """Each round: a fleet-wide change, a hub killed (whole process group) when it runs
    `update-ref`, the second `update-ref` (the state), `index-pack`, or after a random delay;
    then the next hub must succeed on its own (stale locks of the dead one are removed)."""
    repo = synthetic_fleet(tmp_path / "fleet", clusters=200)
    once = hub_cmd("--repo", str(repo), "--once", "--no-fleet-status", "--stale-after", "1s")
    first = subprocess.run(once, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert first.returncode == 0, first.stderr
    sources = [source_of(repo)]
    rng = random.Random(7)
    template = repo / "templates" / "app000" / "objects.yaml"
    kills = []
    for n, point in enumerate(("update-ref", "update-ref#2", "index-pack", "delay")):
        text = template.read_text()
        template.write_text(text.replace(":1.0", f":1.0-{n}", 1) if n == 0
                            else text.replace(f":1.0-{n - 1}", f":1.0-{n}", 1))
        sources.append(commit(repo, f"image 1.0-{n} everywhere"))
        kill = run_and_kill(once, point=point, rng=rng, cwd=ROOT)
        kills.append(kill)
        assert violations(repo, sources) == [], f"after the kill at {kill}"
        done = subprocess.run(once, capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert done.returncode == 0, f"wedged after the kill at {kill}: {done.stderr}"
        assert source_of(repo) == sources[-1] and consistent(repo)
    assert any(k is not None for k in kills), "no kill landed: the hub finished every time"
    assert len(refs(repo, "refs/heads/gitfleet/clusters/")) == 200
    assert not list((repo / ".git").rglob("refs/heads/gitfleet/**/*.lock"))
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo, check=True,
                   capture_output=True)
