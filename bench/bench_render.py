"""Render benchmark: wall time, objects per second and peak memory of `render` on synthetic fleets.

    python bench/bench_render.py [--clusters 1000 10000] [--templates 100]

Each size runs in a fresh subprocess so that peak RSS belongs to that size alone. It reports
load time, first render, a re-render with the previous state (the hub's normal case) and the
number of distinct variants built (the work actually done).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def one(clusters: int, templates: int) -> dict[str, float]:
    from fleetgen import generate

    from gitfleet.model.loader import load_fleet
    from gitfleet.render.core import render

    files = generate(clusters=clusters, templates=templates)
    t0 = time.perf_counter()
    fleet = load_fleet(files)
    t1 = time.perf_counter()
    result = render(fleet, source_commit="a" * 40)
    t2 = time.perf_counter()
    again = render(fleet, source_commit="b" * 40, previous_files=result.files)
    t3 = time.perf_counter()
    assert again.files == result.files, "re-render with no change must be byte-identical"
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"clusters": clusters, "templates": templates, "objects": result.objects,
            "descriptions": result.descriptions, "files": len(result.files),
            "variants": result.variants_built, "errors": len(result.errors),
            "load_s": t1 - t0, "render_s": t2 - t1, "rerender_s": t3 - t2,
            "objects_per_s": result.objects / (t2 - t1), "peak_mib": peak_mib}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--clusters", type=int, nargs="+", default=[1000, 10000])
    p.add_argument("--templates", type=int, default=100)
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(one(a.clusters[0], a.templates)))
        return 0
    print(f"{'clusters':>8} {'objects':>9} {'variants':>8} {'load s':>7} {'render s':>8} "
          f"{'re-render s':>11} {'objects/s':>10} {'peak MiB':>8}")
    for n in a.clusters:
        out = subprocess.run([sys.executable, __file__, "--one", "--clusters", str(n),
                              "--templates", str(a.templates)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['clusters']:>8} {r['objects']:>9} {r['variants']:>8} {r['load_s']:>7.2f} "
              f"{r['render_s']:>8.2f} {r['rerender_s']:>11.2f} {r['objects_per_s']:>10.0f} "
              f"{r['peak_mib']:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
