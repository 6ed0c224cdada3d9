"""The safety fetch interval: the hub chooses it from the fleet's size and the fleet repository's
budget and signs it into the tip documents; agents follow it (floor 10 min) unless their
operator overrides it; documents of fleets that need no more than 10 min read as before.

Real parts: tip documents signed with a real key, written by the hub's TipFolder and served by
nginx; the agent's TipWatcher polls them over HTTP. Time is a hand-moved clock."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitfleet.agent.tips import TipSettings, TipWatcher
from gitfleet.clock import FakeClock
from gitfleet.hub.tips import TipBoard, TipFolder, TipPublisher, older_agents
from gitfleet.hub.tipsafety import BUDGET, CHANGES, LADDER, SafetyChoice, safety_arg
from gitfleet.layout import Branches
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.status import ClusterStatus, Heartbeat
from gitfleet.wire.tips import SAFETY_CEILING, Tip, TipError, decode, encode, reads_announced
from tests.tips.servers import tip_site

REF = Branches().cluster("c1")
KEY = SigningKey.generate()


def _tip(safety: int = 0, commit: str = "a" * 40) -> Tip:
    return Tip(cluster="c1", ref=REF, commit=commit, state="", issued_at=1e9,
               safety_seconds=safety)


# -- the document ----------------------------------------------------------------------------

def test_a_document_without_a_safety_interval_is_the_format_older_agents_read() -> None:
    assert set(json.loads(_tip().payload())) == {"cluster", "ref", "commit", "state",
                                                  "issuedAt"}
    reading = decode(encode(_tip(7200), KEY), cluster="c1", ref=REF,
                     trusted=TrustedKeys.of(KEY))
    assert reading.tip.safety_seconds == 7200
    assert decode(encode(_tip(), KEY), cluster="c1", ref=REF,
                  trusted=TrustedKeys.of(KEY)).tip.safety_seconds == 0


@pytest.mark.parametrize("value", [10, 599, 6 * 3600 + 1, 600.5, "600", True, None])
def test_a_safety_interval_out_of_bounds_or_not_whole_seconds_is_refused(value: object) -> None:
    doc = json.loads(encode(_tip(), None))
    payload = json.loads(doc["tip"])
    payload["safetySeconds"] = value
    doc["tip"] = json.dumps(payload)
    with pytest.raises(TipError, match="safetySeconds"):
        decode(json.dumps(doc).encode(), cluster="c1", ref=REF, trusted=None)


def test_a_misspelt_safety_field_is_named() -> None:
    doc = json.loads(encode(_tip(), None))
    doc["tip"] = doc["tip"].replace('"state"', '"safetySecond":600,"state"')
    with pytest.raises(TipError, match="did you mean `safetySeconds`"):
        decode(json.dumps(doc).encode(), cluster="c1", ref=REF, trusted=None)


# -- the hub's choice ------------------------------------------------------------------------

def test_the_chosen_interval_keeps_the_fleet_repository_within_its_budget() -> None:
    for clusters in (1, 1_000, 10_000, 20_000, 30_000, 50_000, 100_000, 150_000):
        safety = SafetyChoice(fixed=None).for_fleet(clusters)
        fetches = clusters / safety + clusters * CHANGES
        smaller = [t for t in LADDER if t < safety]
        if safety < SAFETY_CEILING:
            assert fetches <= BUDGET, (clusters, safety, fetches)
        if smaller:      # and it is the shortest step that does
            assert clusters / smaller[-1] + clusters * CHANGES > BUDGET, (clusters, safety)
    auto = SafetyChoice(fixed=None)
    assert auto.for_fleet(10_000) == 600       # the agents' default holds at 10k ...
    assert auto.written(10_000) == 0           # ... so documents do not say it
    assert auto.for_fleet(100_000) == 7200     # 100k: 41.7 fetches/s
    assert auto.written(100_000) == 7200


def test_the_choice_steps_up_at_once_and_down_only_with_headroom() -> None:
    choice = SafetyChoice(fixed=None)
    assert choice.for_fleet(100_000) == 7200
    assert choice.for_fleet(92_000) == 7200     # 5400 would hold, but not for 10 % more
    assert choice.for_fleet(85_000) == 5400
    assert choice.for_fleet(70_000) == 3600
    assert choice.for_fleet(100_000) == 7200
    assert SafetyChoice(fixed=1800).for_fleet(100_000) == 1800


def test_the_hub_flag_takes_auto_or_a_bounded_duration() -> None:
    assert safety_arg("auto") is None
    assert safety_arg("2h") == 7200
    for bad in ("5m", "7h", "soon"):
        with pytest.raises(Exception, match="auto|duration|invalid"):
            safety_arg(bad)


def _heads(n: int, commit: str = "c" * 40) -> dict[str, str]:
    return {f"c{i}": commit for i in range(n)}


def test_a_fleet_growing_past_a_step_gets_every_document_re_issued_once(
        tmp_path: Path) -> None:
    # a budget of 0.5 fetches/s makes the steps of a 100,000-cluster fleet come at hundreds
    board = TipBoard()
    publisher = TipPublisher(None, FakeClock(), key=None, board=board,  # type: ignore[arg-type]
                             folder=TipFolder(tmp_path / "tips"),
                             safety=SafetyChoice(fixed=None, budget=0.5))
    publisher.publish(_heads(200), state="d" * 40, ref=Branches().cluster)
    assert publisher.issued == 200

    def safety(cluster: str) -> int:
        doc = board.get(cluster)
        assert doc is not None
        return decode(doc.body, cluster=cluster, ref=Branches().cluster(cluster),
                      trusted=None).tip.safety_seconds

    assert safety("c0") == 0                       # 200/600 + 200/3600 <= 0.5: not said
    publisher.publish(_heads(201), state="d" * 40, ref=Branches().cluster)
    assert publisher.issued == 201                 # one new cluster, one new document
    publisher.publish(_heads(400), state="d" * 40, ref=Branches().cluster)
    assert publisher.issued == 201 + 400           # past a step: all re-issued
    assert {safety(f"c{i}") for i in range(400)} == {1200}
    publisher.publish(_heads(400), state="d" * 40, ref=Branches().cluster)
    assert publisher.issued == 601                 # nothing moved, nothing issued
    on_disk = decode((tmp_path / "tips" / "c7.json").read_bytes(), cluster="c7",
                     ref=Branches().cluster("c7"), trusted=None)
    assert on_disk.tip.safety_seconds == 1200
    # a restarted hub reuses the documents that already say the right thing
    again = TipPublisher(None, FakeClock(), key=None,  # type: ignore[arg-type]
                         folder=TipFolder(tmp_path / "tips"),
                         safety=SafetyChoice(fixed=None, budget=0.5))
    again.publish(_heads(400), state="d" * 40, ref=Branches().cluster)
    assert again.issued == 0


# -- the agent -------------------------------------------------------------------------------

class Ticks:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[TipFolder, str]]:
    with tip_site(tmp_path) as served:
        yield served


def _watcher(url: str, ticks: Ticks, *, safety: float | None = None, jitter: float = 0.0,
             rng: random.Random | None = None) -> TipWatcher:
    return TipWatcher(TipSettings(url=url, cluster="c1", ref=REF, interval=10.0, wait=0,
                                  safety=safety, safety_jitter=jitter),
                      trusted=TrustedKeys.of(KEY), last_fetched=lambda: "a" * 40,
                      wake=lambda: None, clock=ticks, rng=rng)


def _fetch_due_after(watcher: TipWatcher, ticks: Ticks, seconds: float) -> bool:
    ticks.now += seconds
    return watcher.hint() is None


@pytest.mark.parametrize("asked, flag, expected", [
    (7200, None, 7200),     # the hub's choice
    (0, None, 600),         # a document that says nothing: the floor
    (7200, 900.0, 900),     # the operator's override, shorter ...
    (0, 3600.0, 3600),      # ... or longer
])
def test_the_agent_fetches_git_at_the_interval_the_hub_signed_unless_overridden(
        site: tuple[TipFolder, str], asked: int, flag: float | None, expected: int) -> None:
    folder, url = site
    folder.write("c1", encode(_tip(asked), KEY))
    ticks = Ticks()
    watcher = _watcher(url, ticks, safety=flag)
    watcher.poll()
    assert watcher.safety() == expected
    assert not _fetch_due_after(watcher, ticks, expected - 1)
    assert _fetch_due_after(watcher, ticks, 2)
    assert not _fetch_due_after(watcher, ticks, expected - 1)     # and every interval after
    assert _fetch_due_after(watcher, ticks, 2)


def test_agents_started_together_spread_their_safety_fetches(
        site: tuple[TipFolder, str]) -> None:
    folder, url = site
    folder.write("c1", encode(_tip(), KEY))
    ticks = Ticks()
    start = ticks.now
    watchers = [_watcher(url, ticks, jitter=0.1, rng=random.Random(i)) for i in range(60)]
    for w in watchers:
        w.poll()
    fetches: list[list[float]] = [[] for _ in watchers]
    while ticks.now < start + 3 * 600:
        ticks.now += 5
        for w, times in zip(watchers, fetches, strict=True):
            if w.hint() is None:
                times.append(ticks.now - start)
    first = [times[0] for times in fetches]
    buckets = [sum(1 for t in first if 60 * b < t <= 60 * (b + 1)) for b in range(10)]
    assert max(buckets) <= 3 * len(watchers) / 10 and sum(1 for b in buckets if b) >= 8
    for times in fetches:
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert gaps and all(540 - 5 <= g <= 660 + 5 for g in gaps), gaps


def test_by_default_the_hub_waits_for_every_agent_to_read_the_field_then_signs_it(
        caplog: pytest.LogCaptureFixture) -> None:
    """Hubs are upgraded before their agents: an agent older than `safetySeconds` refuses a
    document that carries it (and polls Git every interval). So the default, auto, leaves the
    field out while any agent's heartbeat reports an older release (or none), saying in the
    log what the fleet costs meanwhile, and signs it once the last one is upgraded."""
    from gitfleet.hub.settings import HubSettings

    caplog.set_level(logging.INFO, "gitfleet.hub.tips")
    settings = HubSettings(interval=15, tips=True)
    board = TipBoard()
    publisher = TipPublisher(None, FakeClock(), key=None, board=board,  # type: ignore[arg-type]
                             safety=SafetyChoice(fixed=settings.tips_safety, budget=0.5))

    def said() -> int:
        doc = board.get("c1")
        assert doc is not None
        return int(json.loads(json.loads(doc.body)["tip"]).get("safetySeconds", 0))

    beats = {f"c{i}": "0.2.0" for i in range(400)} | {"c3": "0.1.0", "c4": "",
                                                       "c5": "hub-push-worker/0.1.0"}
    publisher.publish(_heads(400), state="d" * 40, ref=Branches().cluster,
                      older=older_agents(_statuses(beats), [*beats, "silent", "new"]))
    assert said() == 0
    assert "until every agent reads safetySeconds" in caplog.text
    fields = [getattr(r, "fields", {}) for r in caplog.records]
    assert any(f.get("agents_before") == "4 report a release before 0.2.0 (or none)"
               for f in fields), fields      # c3, c4, and two without a heartbeat; no worker
    beats |= {"c3": "0.2.0", "c4": "0.3.1"}                     # the last two upgraded...
    assert older_agents(_statuses(beats), [*beats, "silent", "new"]) == 2
    publisher.publish(_heads(400), state="d" * 40, ref=Branches().cluster,
                      older=older_agents(_statuses(beats), beats))   # ...and the others beat
    assert said() == 1200 and publisher.issued == 800          # every document re-signed
    assert "is now chosen from the fleet's size" in caplog.text


@pytest.mark.parametrize("version, reads", [
    ("0.2.0", True), ("0.10.0", True), ("1.0.0", True), ("0.1.0", False), ("", False),
    ("0.2.0rc1", False), ("0.2.0.dev3", False), ("hub-push-worker/0.2.0", False),
    ("banana", False)])
def test_a_release_reads_announced_tips_from_0_2_0_and_anything_unclear_counts_as_older(
        version: str, reads: bool) -> None:
    assert reads_announced(version) is reads


def _statuses(versions: dict[str, str]) -> dict[str, ClusterStatus]:
    return {c: ClusterStatus(cluster=c, heartbeat=Heartbeat(
        time="2026-12-07T12:00:00Z", interval_seconds=60, agent_version=v))
        for c, v in versions.items()} | {"silent": ClusterStatus(cluster="silent")}


def test_a_fixed_interval_the_fleet_outgrows_is_said(caplog: pytest.LogCaptureFixture) -> None:
    board = TipBoard()
    publisher = TipPublisher(None, FakeClock(), key=None, board=board,  # type: ignore[arg-type]
                             safety=SafetyChoice(fixed=600, budget=0.5))
    publisher.publish(_heads(400), state="d" * 40, ref=Branches().cluster)
    doc = board.get("c1")
    assert doc is not None
    assert "safetySeconds" not in json.loads(json.loads(doc.body)["tip"])
    assert "--tips-safety auto" in caplog.text


def test_status_pushes_over_the_budget_in_the_fleet_repository_are_said_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """100,000 clusters with status in the fleet repository: 27.8 status pushes/s from changes
    alone (one per change, one change per cluster an hour) and 4.6 heartbeats at 6 h; no
    safety interval offsets them, so the hub says what to do."""
    choice = SafetyChoice()
    choice.check_status_pushes(10_000, heartbeat=2400, own_repos=False)     # 6.9/s: fine
    choice.check_status_pushes(100_000, heartbeat=21600, own_repos=True)    # their own repos
    assert "status.repositories" not in caplog.text
    for _ in range(2):
        choice.check_status_pushes(100_000, heartbeat=21600, own_repos=False)
    said = [getattr(r, "fields", {}) for r in caplog.records
            if "status.repositories" in r.getMessage()]
    assert [f.get("pushes_per_second") for f in said] == [32.4]
