from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.charts.chartrepo import ChartRepo, chart_repo


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[ChartRepo]:
    with chart_repo(tmp_path) as r:
        r.publish("web", "1.0.0", extra=True)
        yield r


# the agents' fixtures: a fleet repo served by `git daemon`, kubesim clusters, agents
from tests.agent.conftest import kubesim, make_agent, remote  # noqa: E402, F401
