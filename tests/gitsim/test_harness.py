"""The Git budget harness (bench/gitsim) at a tiny fleet: its counts agree with each other.

What a user of the harness checks: every request it says it made reached the server (nginx's
log counts the same requests), a change reached every changed cluster's agent, the stopped
clusters and only they were judged lost by the hub's rule, and the real agent's schedule shows
the settings it ran with. Figures (speed) are the benchmark's business, not asserted here.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from bench.gitsim.run import main

pytestmark = pytest.mark.skipif(not all(shutil.which(p) for p in ("nginx", "fcgiwrap")),
                                reason="needs nginx and fcgiwrap")


def test_tiny_fleet_counts_agree(tmp_path: Path) -> None:
    out = tmp_path / "gitsim.json"
    # 10 s per run, the change at a third of it; a changed cluster the lagging workers had not
    # come to by the end fetches within the drain (a 10-s window alone missed one in an idle CI
    # run: the harness's lag p99 was 4.2 s there)
    assert main(["--clusters", "20", "--servers", "http,daemon", "--seconds", "10",
                 "--drain", "60",
                 "--workers", "3", "--probe-count", "6", "--changes", "4",
                 "--stopped-share", "0.1", "--before-interval", "2", "--before-heartbeat", "4",
                 "--after-heartbeat", "6", "--after-safety", "20", "--after-tip-poll", "1",
                 "--after-shards", "2", "--virtual-hours", "0.05", "--change-every", "61",
                 "--json", str(out)]) == 0
    # the harness silences warnings for its run only: later tests in this worker see theirs
    assert not logging.root.manager.disable
    report = json.loads(out.read_text())

    before, after = report["schedule"]
    # 180 virtual seconds: a fetch every 2 s (plus the first), a beat every 4 s
    assert 85 <= before["fetches"] <= 95
    assert before["pushes"] >= 45
    # with tips: no periodic fetch, only the changes and the safety fetches (every 20 s)
    assert after["fetches"] <= after["changes"] + 180 / 20 + 2 < before["fetches"] / 4
    assert after["change_to_fetch_max_s"] <= 1.5

    (size,) = report["sizes"]
    runs = {(r["scenario"], r["server"]): r for r in size["runs"]}
    assert set(runs) == {(s, k) for s in ("before", "after") for k in ("http", "git-daemon")}
    for (_, server), r in runs.items():
        assert r["errors"] == 0, r
        assert r["changed"] == 4 and r["change_not_fetched"] == 0, r
        assert r["stopped"] == 2
        assert r["judged_live_as_lost"] == 0 and r["judged_stopped_as_alive"] == 0, r
        assert r["fetches_per_s"] > 0 and r["pushes_per_s"] > 0
        if server == "http":
            fetches = round(r["fetches_per_s"] * r["seconds"])
            pushes = round(r["pushes_per_s"] * r["seconds"])
            http = round(r["http_requests_per_s"] * r["seconds"])
            # a fetch is 2 HTTP requests (3 when it moves objects), a push 2
            assert 2 * (fetches + pushes) - 2 <= http <= 3 * fetches + 2 * pushes + 2, r
    assert runs[("after", "http")]["tip_gets"] == 4

    costs = {(c["kind"], c["server"]): c for c in size["costs"]}
    for server in ("http", "git-daemon"):
        for kind in ("fetch-noop@before", "fetch-change@before", "push-heartbeat@before",
                     "push-heartbeat@after"):
            assert costs[(kind, server)]["errors"] == 0
            assert costs[(kind, server)]["server_cpu_ms_per_request"] > 0
    # a push downloads the ref advertisement: 40 refs before, ~10 per status shard after
    assert costs[("push-heartbeat@before", "http")]["bytes_out_per_request"] > \
        costs[("push-heartbeat@after", "http")]["bytes_out_per_request"]
    assert costs[("fetch-change@before", "http")]["http_requests_per_request"] == 3
