"""Waves through the hub on virtual time: real Git, the agents' reports as real status commits,
the hub's clock injected (nothing sleeps)."""

from __future__ import annotations

from pathlib import Path

from gitfleet.wire.status import Phase
from tests.hub.fleet import commit
from tests.rollout.fleet import RolloutFleet, git_log

OLD = {"staging": "2.4.0", "prod-east": "2.4.0", "prod-west": "2.4.0"}


def released_to_canary(f: RolloutFleet) -> None:
    f.report_all()
    f.image("2.5.0")
    f.run()
    assert f.images() == OLD | {"staging": "2.5.0"}


def test_a_policy_added_to_a_deployed_fleet_releases_nothing(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    rollout = f.rollout()
    assert rollout["phase"] == "Complete"
    assert set(f.states().values()) == {"Current"}
    assert f.images() == OLD


def test_waves_advance_only_on_healthy_reports_and_bake(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    released_to_canary(f)
    # the state is the target: every cluster's Description there has the new image
    state = f.git.read_blob("refs/heads/gitfleet/state",
                            "clusters/prod-west/api/api/apps_Deployment_api_api.yaml")
    assert state is not None and b"api:2.5.0" in state
    assert f.rollout()["wave"] == "canary" and f.states()["staging"] == "Released"

    f.run()                                       # no report of the new commit yet
    assert f.images()["prod-east"] == "2.4.0"
    f.report("staging", Phase.PROGRESSING)
    f.run()
    assert f.images()["prod-east"] == "2.4.0"
    f.report("staging")                           # Success: the bake starts now
    f.run()
    assert f.states()["staging"] == "Healthy"
    f.clock.advance(599)
    f.report_all()
    f.run()
    assert f.images()["prod-east"] == "2.4.0"     # 10m bake not over
    f.clock.advance(2)
    f.report_all()
    f.run()
    assert f.images() == OLD | {"staging": "2.5.0", "prod-east": "2.5.0"}
    assert f.rollout()["wave"] == "early"

    f.report("prod-east")
    f.run()
    f.clock.advance(601)
    f.report_all()
    f.run()
    assert f.images() == {c: "2.5.0" for c in OLD}
    f.report_all()
    f.run()
    rollout = f.rollout()
    assert rollout["phase"] == "Complete", rollout
    metrics = f.hub.metrics.text()
    assert 'gitfleet_rollout_wave{policy="api"} 4.0' in metrics
    assert 'gitfleet_rollout_phase{phase="Complete",policy="api"} 1.0' in metrics
    log = "\n".join(git_log(f.repo, "refs/heads/gitfleet/state"))
    assert "Rollout api: wave canary done" in log and "Rollout api: wave early done" in log


def test_failure_in_the_first_wave_pauses_and_no_later_branch_moves(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    released_to_canary(f)
    later = {c: f.head(c) for c in ("prod-east", "prod-west")}
    f.report("staging", Phase.FAILURE)
    f.run()
    rollout = f.rollout()
    assert rollout["phase"] == "Paused"
    assert "staging" in rollout["reason"] and "Failure" in rollout["reason"]
    metrics = f.hub.metrics.text()
    assert 'gitfleet_rollout_paused{policy="api"} 1.0' in metrics
    assert 'gitfleet_rollout_wave{policy="api"} 1.0' in metrics
    assert 'gitfleet_rollout_clusters{policy="api",state="Failed"} 1.0' in metrics
    for _ in range(3):                            # time passes, reports turn good: still paused
        f.clock.advance(3600)
        f.report_all()
        f.run()
    assert {c: f.head(c) for c in later} == later
    assert f.images() == OLD | {"staging": "2.5.0"}   # Pause keeps the canary where it is
    assert f.rollout()["phase"] == "Paused"

    # resume through the source branch: the failed canary is judged again, then the waves go on
    revision = f.rollout()["revision"]
    commit(f.repo, "resume api", {"rollouts/api.yaml":
                                  f"kind: RolloutControl\nresume: {revision}\n"})
    f.run()
    f.report("staging")
    f.run()
    f.clock.advance(601)
    f.report_all()
    f.run()
    assert f.images()["prod-east"] == "2.5.0"


def test_failure_with_rollback_returns_the_canary(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path, on_failure="Rollback")
    released_to_canary(f)
    before = {c: f.head(c) for c in ("prod-east", "prod-west")}
    f.report("staging", Phase.DEGRADED)
    f.run()
    assert f.rollout()["phase"] == "RolledBack"
    assert f.images() == OLD
    assert f.states()["staging"] == "RolledBack"
    assert {c: f.head(c) for c in before} == before


def test_no_success_within_the_health_timeout_is_a_failure(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path, timeout="5m")
    released_to_canary(f)
    f.report("staging", Phase.PROGRESSING)
    f.run()
    assert f.rollout()["phase"] == "Progressing"
    f.clock.advance(301)
    f.report("staging", Phase.PROGRESSING)
    f.run()
    rollout = f.rollout()
    assert rollout["phase"] == "Paused" and "healthTimeout" in rollout["reason"]
    assert f.images()["prod-east"] == "2.4.0"


def test_a_newer_revision_supersedes_and_restarts_at_the_first_wave(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    released_to_canary(f)
    f.report("staging")
    f.run()
    f.clock.advance(601)
    f.report_all()
    f.run()
    assert f.images() == OLD | {"staging": "2.5.0", "prod-east": "2.5.0"}
    f.image("2.6.0")
    f.run()
    # only the canary has 2.6.0; the early wave keeps 2.5.0, the rest 2.4.0
    assert f.images() == {"staging": "2.6.0", "prod-east": "2.5.0", "prod-west": "2.4.0"}
    assert f.rollout()["wave"] == "canary"
    log = "\n".join(git_log(f.repo, "refs/heads/gitfleet/state"))
    assert "superseding" in log


def test_an_unknown_cluster_is_skipped_and_released_when_it_is_back(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path, bake="0s")
    f.report_all()
    f.image("2.5.0")
    f.clock.advance(600)           # every heartbeat is old now: refresh all but prod-east
    f.report("staging")
    f.report("prod-west")
    f.run()
    f.report("staging")
    f.run()
    states = f.states()
    assert states["prod-east"] == "Skipped"       # early wave: Unknown, not a failure
    assert f.rollout()["phase"] != "Paused"
    assert f.images() == {"staging": "2.5.0", "prod-east": "2.4.0", "prod-west": "2.5.0"}
    f.report("prod-west")
    f.run()
    assert f.rollout()["phase"] == "Complete"
    f.report("prod-east")                          # back: released now
    f.run()
    assert f.images()["prod-east"] == "2.5.0"


def test_max_unavailable_limits_the_clusters_released_at_once(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path, bake="0s", max_unavailable="1")
    # one wave of two clusters: make the canary wave take both prod clusters
    text = (f.repo / "policies/rollout.yaml").read_text()
    text = text.replace("{env: staging}", "{env: prod}").replace(
        "clusterAffinity: {matchLabels: {region: us-east}}",
        "clusterAffinity: {matchLabels: {env: staging}}")
    commit(f.repo, "prod first", {"policies/rollout.yaml": text})
    f.run()
    f.report_all()
    f.image("2.5.0")
    f.run()
    images = f.images()
    assert sorted(images[c] for c in ("prod-east", "prod-west")) == ["2.4.0", "2.5.0"]
    first = next(c for c in ("prod-east", "prod-west") if images[c] == "2.5.0")
    f.report(first)
    f.run()
    assert f.images()["prod-east"] == f.images()["prod-west"] == "2.5.0"


def test_a_restarted_hub_continues_the_rollout(tmp_path: Path) -> None:
    f = RolloutFleet(tmp_path)
    released_to_canary(f)
    f.report("staging")
    f.run()
    revision = f.rollout()["revision"]
    f.hub = f.new_hub()                             # the old hub is gone mid-bake
    f.clock.advance(300)
    f.report_all()
    f.run()
    assert f.images() == OLD | {"staging": "2.5.0"}     # bake not over, canary kept
    assert f.rollout()["revision"] == revision
    f.clock.advance(301)
    f.report_all()
    f.run()
    assert f.images()["prod-east"] == "2.5.0"
