"""The hub re-resolves chart versions at its interval: a newly published match renders again,
and the state commit names it; a failing chart keeps the clusters' last good Descriptions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitfleet.charts.renderer import Charts
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.state.store import open_store
from tests.charts.chartrepo import HELM, ChartRepo
from tests.charts.fleet import chart_fleet
from tests.harness import git

pytestmark = pytest.mark.skipif(HELM is None, reason="helm is not installed (tools/setup)")
STATE = "refs/heads/gitfleet/state"


def _fleet_repo(path: Path, files: dict[str, bytes]) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for rel, data in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "fleet")
    return path


def _chart_version(repo: Path, cluster: str) -> str:
    desc = yaml.safe_load(git(repo, "show",
                               f"{STATE}:clusters/{cluster}/apps/web@helm/description.yaml"))
    return str(desc["spec"]["charts"][0]["version"])


def test_a_newly_published_match_is_one_state_commit_naming_it(repo: ChartRepo,
                                                               tmp_path: Path) -> None:
    fleet = _fleet_repo(tmp_path / "fleet", chart_fleet(repo.url, ">=1.0.0 <2"))
    now = [0.0]
    hub = Hub(open_store(str(fleet)), settings=HubSettings(),
              charts=Charts(tmp_path / "charts", interval=60, clock=lambda: now[0]))
    first = hub.run_once()
    assert first is not None and first.wrote and first.result.errors == []
    assert _chart_version(fleet, "a") == _chart_version(fleet, "b") == "1.0.0"
    assert hub.run_once() is None                      # nothing new: no round

    repo.publish("web", "1.4.0")
    repo.publish("web", "2.0.0")                       # outside the range
    assert hub.run_once() is None                      # not re-resolved before the interval
    now[0] = 61.0
    report = hub.run_once()
    assert report is not None and report.wrote
    assert _chart_version(fleet, "a") == _chart_version(fleet, "b") == "1.4.0"
    message = git(fleet, "log", "-1", "--format=%B", STATE)
    assert "HelmChart apps/web: chart web 1.4.0" in message and "(was web 1.0.0" in message
    assert git(fleet, "rev-list", "--count", f"{first.state}..{STATE}").strip() == "1"


def test_a_repository_that_goes_down_keeps_the_last_good_descriptions(repo: ChartRepo,
                                                                      tmp_path: Path) -> None:
    fleet = _fleet_repo(tmp_path / "fleet", chart_fleet(repo.url, ""))
    now = [0.0]
    hub = Hub(open_store(str(fleet)), settings=HubSettings(),
              charts=Charts(tmp_path / "charts", interval=60, clock=lambda: now[0]))
    assert hub.run_once() is not None
    before = git(fleet, "ls-tree", "-r", "--name-only", STATE, "clusters/a/apps/web@helm")
    (repo.root / "index.yaml").unlink()                # the repository answers 404 now
    now[0] = 61.0
    report = hub.run_once()
    assert report is not None
    assert report.result.errors and all("HelmChart apps/web (templates/web.yaml)" in p.message
                                        and "not found" in p.message
                                        for p in report.result.errors)
    after = git(fleet, "ls-tree", "-r", "--name-only", STATE, "clusters/a/apps/web@helm")
    assert after == before
    desc = yaml.safe_load(git(fleet, "show",
                               f"{STATE}:clusters/a/apps/web@helm/description.yaml"))
    assert desc["spec"]["renderErrors"]                # agents prune nothing on its account
