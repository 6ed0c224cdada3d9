"""A hold is shown where people look (SEMANTICS, "Guards"): the fleet status's cluster row,
`/metrics`, `gitfleet get clusters` and the dashboard say "held: would delete 13 of 13 objects
in c1" while the hub holds the cluster, and nothing once the approval let the deletion through.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitfleet.layout import Branches
from gitfleet.wire.fleetstatus import read_cluster_summary
from tests.guards.test_mass_deletion import _deployed
from tests.harness import Remote, gitfleet_here, push

pytestmark = pytest.mark.slow
HELD = "held: would delete 13 of 13 objects in c1"


def _row(remote: Remote) -> Any:
    data = remote.git.read_blob(Branches().fleet_status, "clusters/c1.yaml")
    return read_cluster_summary(data, "clusters/c1.yaml")


def _get(remote: Remote, *args: str) -> str:
    done = gitfleet_here("get", "clusters", "--repo", str(remote.git.path), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _table(text: str) -> dict[str, str]:
    head, row = text.splitlines()[:2]
    return dict(zip(head.split(), row.split(), strict=False))


def _dashboard(remote: Remote, site: Path, page: Any) -> tuple[str, str, str]:  # noqa: F811
    """The fleet page's held banner, the grid row's badges and c1's page banner, from a
    static export opened in Chromium."""
    done = gitfleet_here("dashboard", "--repo", str(remote.git.path), "--out", str(site))
    assert done.returncode == 0, done.stderr
    page.goto((site / "index.html").as_uri() + "#/fleet")
    page.wait_for_selector("#grid tbody tr")
    banner = page.locator("#held").inner_text() if page.locator("#held").count() else ""
    badges = page.locator('#grid tr[data-cluster="c1"] td:nth-child(2) .b').all_inner_texts()
    page.goto((site / "index.html").as_uri() + "#/cluster/c1")
    page.wait_for_selector("h1 >> text=Cluster c1")
    own = page.locator("#held").inner_text() if page.locator("#held").count() else ""
    return banner, " ".join(badges), own


def test_a_hold_shows_in_fleet_status_metrics_get_and_the_dashboard(
        remote: Remote, tmp_path: Path, kubesim, make_agent, page: Any) -> None:  # noqa: F811
    work, hub, sim, agent = _deployed(remote, tmp_path, kubesim, make_agent)
    push(work, "fleet: drop the app", {"policies/app.yaml": None})
    hub.run_once()

    assert _row(remote).held == HELD
    metrics = hub.metrics.text()
    assert "gitfleet_hub_clusters_held 1.0" in metrics
    assert 'gitfleet_cluster_held{cluster="c1"} 1.0' in metrics
    assert 'gitfleet_cluster_held_deletions{cluster="c1"} 13.0' in metrics
    assert 'gitfleet_cluster_held_objects{cluster="c1"} 13.0' in metrics

    assert _table(_get(remote))["SYNC"] == "Held"
    assert HELD in _get(remote, "-o", "wide")
    (row,) = json.loads(_get(remote, "-o", "json"))
    assert row["sync"] == "Held" and row["held"] == HELD

    banner, badges, own = _dashboard(remote, tmp_path / "held", page)
    assert HELD in banner and "Gitfleet-Approve-Deletions: c1" in banner
    assert "Held" in badges.split()
    assert HELD in own and "Gitfleet-Approve-Deletions: c1" in own

    push(work, "fleet: yes, drop the app\n\nGitfleet-Approve-Deletions: c1")
    hub.run_once()
    agent.step()
    hub.run_once()
    assert _row(remote).held == ""
    metrics = hub.metrics.text()
    assert "gitfleet_hub_clusters_held 0.0" in metrics
    assert 'gitfleet_cluster_held{cluster="c1"} 0.0' in metrics
    assert "gitfleet_cluster_held_deletions{" not in metrics
    (row,) = json.loads(_get(remote, "-o", "json"))
    assert row["sync"] == "Synced" and row["held"] == ""
    banner, badges, own = _dashboard(remote, tmp_path / "approved", page)
    assert (banner, own) == ("", "") and "Held" not in badges.split()
