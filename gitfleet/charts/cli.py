"""The chart flags of the commands that render (`hub`, `render`, `validate`, `diff`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from gitfleet.charts import credentials
from gitfleet.charts.renderer import Charts


def add_flags(parser: Any) -> None:
    parser.add_argument("--chart-credentials", metavar="FILE",
                        help="Secrets (username, password) that HelmCharts name with "
                        "chartPullSecret, for private chart repositories and registries")
    parser.add_argument("--chart-cache", metavar="DIR",
                        help="where chart archives are kept by digest (default: "
                        "$XDG_CACHE_HOME/gitfleet/charts)")


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gitfleet" / "charts"


def charts_from(args: argparse.Namespace, *, work: Path | None = None,
                interval: float = 300.0) -> Charts:
    store = credentials.load(args.chart_credentials) if getattr(
        args, "chart_credentials", None) else credentials.CredentialStore()
    cache = getattr(args, "chart_cache", None)
    return Charts(Path(cache) if cache else (work or default_cache()), credentials=store,
                  interval=interval)
