"""Merge the JSON of several `python -m bench.gitsim --json` runs (e.g. one per fleet size)
into the before/after table of bench/README.md: costs fitted over every size, the model's
offered load at each size and at 100,000 clusters, and its check against the real-time runs.

    python -m bench.gitsim.report final-1000.json final-3000.json final-10000.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.gitsim import model
from bench.gitsim.run import _args, _settings, _table

KINDS = ("fetch-noop", "fetch-change", "push-heartbeat")


def fit(costs: list[dict[str, Any]], server: str) -> model.Costs:
    def line(kind: str, field: str, scale: float) -> model.Line:
        pts = [(c["refs"], c[field] / scale) for c in costs
               if c["server"] == server and c["kind"].split("@")[0] == kind
               and c[field] is not None]
        return model.Line.fit(pts) if pts else model.Line(0.0, 0.0)
    return model.Costs(cpu={k: line(k, "server_cpu_ms_per_request", 1000) for k in KINDS},
                       bytes_out={k: line(k, "bytes_out_per_request", 1) for k in KINDS})


def main(paths: list[str]) -> int:
    reports = [json.loads(Path(p).read_text()) for p in paths]
    args = _args([a for a in _argv(reports[0]["args"])])
    costs = [c for r in reports for s in r["sizes"] for c in s["costs"]]
    runs = [run | {"refs_fleet": 2 * s["clusters"]} for r in reports for s in r["sizes"]
            for run in s["runs"]]
    sizes = sorted({s["clusters"] for r in reports for s in r["sizes"]})
    servers = sorted({c["server"] for c in costs})
    fits = {srv: fit(costs, srv) for srv in servers}
    print("### Per-request server cost, fitted over every size as a + b x refs (measured)\n")
    rows = []
    for srv, f in fits.items():
        for k in KINDS:
            rows.append({"server": srv, "request": k,
                         "cpu_ms_a": round(1000 * f.cpu[k].a, 2),
                         "cpu_us_per_ref": round(1e6 * f.cpu[k].b, 2),
                         "bytes_a": round(f.bytes_out[k].a),
                         "bytes_per_ref": round(f.bytes_out[k].b, 1)})
    print(_table(rows, ["server", "request", "cpu_ms_a", "cpu_us_per_ref", "bytes_a",
                        "bytes_per_ref"]))
    print("\n### Budget table: offered load per repository (computed from the measured costs"
          " and the measured agent schedule)\n")
    rows = []
    for n in [*sizes, 100_000]:
        for label, s in _settings(args, n).items():
            for srv in servers:
                load = model.offered(s, fits[srv])
                rows.append({"clusters": n, "scenario": label, "server": srv,
                             "heartbeat_s": s.heartbeat, "status_repos": s.shards,
                             "fetch_period_s": s.fetch_period,
                             "fleet_repo_requests_per_s": round(load.fleet_repo_requests, 1),
                             "pushes_per_s_per_repo": round(load.pushes, 1),
                             "MB_out_per_s": round(load.bytes_out / 1e6, 2),
                             "server_cores": round(load.server_cpu, 2),
                             "tip_requests_per_s": round(load.tip_requests),
                             "change_to_fetch_p99_s": f"{load.p99:g} + fetch"})
    print(_table(rows, list(rows[0])))
    print("\n### Real-time runs (measured) and the cost model's check: server CPU predicted "
          "from the requests the run made x the fitted per-request cost\n")
    rows = []
    for r in runs:
        f = fits[r["server"]]
        n = r["clusters"]
        refs_push = (2 * n if r["scenario"] == "before"
                     else (n // args.after_shards if args.after_shards else 2 * n))
        d = r["seconds"]
        fetches, pushes = r["fetches_per_s"] * d, r["pushes_per_s"] * d
        changed = r["changed"] - r["change_not_fetched"]
        predicted = ((fetches - changed) * f.cpu["fetch-noop"](2 * n)
                     + changed * f.cpu["fetch-change"](2 * n)
                     + pushes * f.cpu["push-heartbeat"](refs_push))
        rows.append(r | {"predicted_cpu_s": round(predicted, 1),
                         "measured_cpu_s": r["server_cpu_s"],
                         "ratio": round(r["server_cpu_s"] / predicted, 2) if predicted else None})
    print(_table(rows, ["clusters", "scenario", "server", "seconds", "git_requests_per_s",
                        "fetches_per_s", "pushes_per_s", "http_requests_per_s",
                        "bytes_out_per_s", "lag_p99_s", "change_to_fetch_p50_s",
                        "change_to_fetch_p99_s", "change_not_fetched", "errors",
                        "judged_live_as_lost", "judged_stopped_as_alive", "predicted_cpu_s",
                        "measured_cpu_s", "ratio"]))
    for r in reports:
        print(f"\nrun {r['args']['clusters']}: wall {r['wall_s']} s, CPU {r['cpu_s']} s, load "
              f"average {r['load_before'][0]:.1f} -> {r['load_after'][0]:.1f}")
    return 0


def _argv(saved: dict[str, Any]) -> list[str]:
    """The command line of a saved run's settings (for _settings)."""
    out = []
    for key, value in saved.items():
        if value is None or key == "json":
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            out += [flag] if value else []
        else:
            out += [flag, str(value)]
    return out


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
