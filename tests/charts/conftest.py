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
