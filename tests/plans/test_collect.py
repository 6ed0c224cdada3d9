"""`gitfleet plan --wait` collects answers without making a busy Git server list every answer
again at each look: once few clusters are missing it asks for theirs only (a plan over 1,000
clusters is answered by 1,000 pushes; the collector's looks share that server).

What the server sent is read from its own packet trace (GIT_TRACE_PACKET of the `git daemon`
and the upload-packs it starts): counted, never timed.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from gitfleet.clock import FakeClock
from gitfleet.layout import Branches
from gitfleet.model.loader import load_fleet
from gitfleet.planning import answers
from gitfleet.state.git import Git, RefUpdate, init_repo
from gitfleet.wire.plans import ANSWER_FILE, PlanAnswer
from tests.gitserver import git_daemon

PLAN = "20991231T000000Z-0123456789ab-a1b2c3"
BRANCHES = Branches()
_LISTED = re.compile(rb"upload-pack> [0-9a-f]{40} refs/heads/gitfleet/plan-answers/(\S+)/"
                     + PLAN.encode() + rb"\n")


def _answer(bare: Git, clusters: list[str]) -> None:
    updates = []
    for cluster in clusters:
        body = PlanAnswer(PLAN, cluster, "0" * 40, time.time()).to_yaml()
        commit = bare.commit(bare.write_tree({ANSWER_FILE: body}), [], f"{cluster}: plan")
        updates.append(RefUpdate(BRANCHES.plan_answer(cluster, PLAN), commit, None))
    bare.update_refs(updates)


def test_the_collector_asks_only_for_the_answers_it_still_lacks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "srv"
    bare = init_repo(base / "fleet.git", bare=True)
    asked = [f"c{i:03d}" for i in range(250)]
    _answer(bare, asked[:140])        # 110 missing, more than answers.EXACT (100): a glob
    later = asked[140:160]
    trace = tmp_path / "packets"
    monkeypatch.setenv("GIT_TRACE_PACKET", str(trace))
    with git_daemon(base) as url:
        monkeypatch.delenv("GIT_TRACE_PACKET")

        def answered(outcome: answers.Outcome) -> None:
            if outcome.cluster == asked[0]:     # 20 more answer while the collector waits
                _answer(bare, later)

        found = answers.collect(init_repo(tmp_path / "collector", bare=True),
                                f"{url}/fleet.git", plan=PLAN, asked=asked,
                                fleet=load_fleet({}), wait=5, clock=FakeClock(),
                                on_answer=answered)
    assert sorted(c for c, o in found.items() if o.planned) == asked[:160]
    assert all("no answer within 5 s" in found[c].reason for c in asked[160:])
    listed = _LISTED.findall(trace.read_bytes())
    # the first look lists the 140 there, the second (110 still missing: the glob again) all
    # 160; then 90 are missing and each look names them: nothing is listed again until the
    # wait ends, where every look listed all 160 before
    assert sorted(c.decode() for c in listed) == sorted(asked[:140] * 2 + asked[140:160])
