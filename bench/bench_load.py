"""Loading benchmark: parsing and validating a fleet, and what a broken file costs.

    python bench/bench_load.py [--clusters 1000] [--templates 100] [--rounds 7]

Reports, best of the rounds (the machine is shared: the best is the least disturbed): parsing
every file of a fleetgen fleet with `yamlio.load_documents`, a cold `load_fleet` (empty parse
cache), and `load_fleet` of one file holding 500 HelmCharts that each use an unsupported field
(500 errors, each with the line of its field: the price of re-composing for line numbers).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CHART = """apiVersion: apps.clusternet.io/v1alpha1
kind: HelmChart
metadata:
  name: c{i}
  namespace: web
spec:
  repo: https://charts.example.com
  chart: c
  force: true
"""


def best(rounds: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--templates", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    from fleetgen import generate

    from gitfleet import yamlio
    from gitfleet.model import loader

    files = generate(clusters=args.clusters, templates=args.templates)
    yamls = {p: d for p, d in files.items() if loader.relevant(p)}

    def parse() -> None:
        for path, data in yamls.items():
            yamlio.load_documents(data, path)

    def cold() -> None:
        loader._CACHE = loader._ParseCache()
        fleet = loader.load_fleet(files)
        assert not fleet.errors

    charts = "---\n".join(CHART.format(i=i) for i in range(500)).encode()

    def broken() -> None:
        loader._CACHE = loader._ParseCache()
        fleet = loader.load_fleet({"templates/charts.yaml": charts})
        assert len(fleet.errors) == 500

    size = sum(map(len, yamls.values()))
    print(f"{len(yamls)} files, {size / 1024:.0f} KiB")
    print(f"parse (yamlio)        {best(args.rounds, parse):.3f} s")
    print(f"load_fleet, cold      {best(args.rounds, cold):.3f} s")
    print(f"500 errors, one file  {best(args.rounds, broken):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
