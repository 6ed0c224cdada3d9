"""The hub's /metrics: prometheus_client exposition that Prometheus' own parser reads, the
series the hub always had, and per-cluster series from the folded fleet status."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from gitfleet.clock import FakeClock, isoformat
from gitfleet.hub.hub import Hub
from gitfleet.hub.metrics import Metrics
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.store import open_store
from gitfleet.wire.status import (
    ClusterStatus,
    Drift,
    FieldDrift,
    Heartbeat,
    SyncResult,
    SyncStatus,
)
from tests.hub.fleet import example_repo


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample, parsed by prometheus_client's own parser (so the format is valid)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def of_cluster(values: dict, name: str, cluster: str) -> float | None:
    return values.get((name, (("cluster", cluster),)))


def agent_reports(git: Git, cluster: str, clock: FakeClock, *, synced_commit: str,
                  drifted: int = 0) -> None:
    status = ClusterStatus(
        cluster=cluster,
        heartbeat=Heartbeat(time=isoformat(clock.now()), interval_seconds=60,
                            kubernetes_version="v1.29.0", agent_version="0.1.0",
                            livez=True, readyz=True, nodes_ready=1),
        sync=SyncStatus(cluster_commit=synced_commit, result=SyncResult.SYNCED,
                        time=isoformat(clock.now())),
        drift=tuple(Drift(api_version="apps/v1", kind="Deployment", namespace="web",
                          name=f"d{i}", description="web/web", first_seen=isoformat(clock.now()),
                          fields=(FieldDrift("spec.replicas", 3, 1),))
                    for i in range(drifted)))
    ref = Branches().status(cluster)
    old = git.resolve(ref)
    tree = git.write_tree({"status.yaml": status.to_yaml().encode()})
    git.update_refs([RefUpdate(ref, git.commit(tree, [old] if old else [], "status",
                                               when=clock.now()), old)])


def test_the_hub_series_stay_and_parse() -> None:
    metrics = Metrics()
    metrics.triggered("watch")
    metrics.rendered(seconds=0.5, errors=2, warnings=1, source="a" * 40, state="b" * 40,
                     wrote=True, clusters=3, now=100.0)
    values = samples(metrics.text())
    assert values[("gitfleet_hub_renders_total", ())] == 1
    assert values[("gitfleet_hub_render_seconds_sum", ())] == 0.5
    assert values[("gitfleet_hub_render_seconds_count", ())] == 1
    assert values[("gitfleet_hub_render_errors", ())] == 2
    assert values[("gitfleet_hub_state_writes_total", ())] == 1
    assert values[("gitfleet_hub_clusters", ())] == 3
    assert values[("gitfleet_hub_triggers_total", (("trigger", "watch"),))] == 1
    assert values[("gitfleet_hub_last_source_commit_info",
                   (("commit", "a" * 40), ("state", "b" * 40)))] == 1


def test_per_cluster_series_follow_the_fleet_status(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    clock = FakeClock()
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15), clock=clock)
    hub.run_once()
    values = samples(hub.metrics.text())
    for cluster in ("prod-east", "prod-west"):   # no agent yet: not ready, behind
        assert of_cluster(values, "gitfleet_cluster_ready", cluster) == 0
        assert of_cluster(values, "gitfleet_cluster_state_behind", cluster) == 1
        assert of_cluster(values, "gitfleet_cluster_heartbeat_age_seconds", cluster) is None

    git = Git(repo)
    heads = {c: git.resolve(Branches().cluster(c)) for c in ("prod-east", "prod-west")}
    clock.advance(30)
    agent_reports(git, "prod-east", clock, synced_commit=heads["prod-east"], drifted=2)
    agent_reports(git, "prod-west", clock, synced_commit="0" * 40)
    clock.advance(12)
    hub.run_once()
    values = samples(hub.metrics.text())
    assert of_cluster(values, "gitfleet_cluster_ready", "prod-east") == 1
    assert of_cluster(values, "gitfleet_cluster_heartbeat_age_seconds", "prod-east") == 12
    assert of_cluster(values, "gitfleet_cluster_drift_objects", "prod-east") == 2
    assert of_cluster(values, "gitfleet_cluster_state_behind", "prod-east") == 0
    assert of_cluster(values, "gitfleet_cluster_state_lag_seconds", "prod-east") == 0
    assert of_cluster(values, "gitfleet_cluster_sync_ok", "prod-east") == 1
    # prod-west synced an older commit: behind since the hub first saw its head
    assert of_cluster(values, "gitfleet_cluster_state_behind", "prod-west") == 1
    assert of_cluster(values, "gitfleet_cluster_state_lag_seconds", "prod-west") == 42
    assert of_cluster(values, "gitfleet_cluster_drift_objects", "prod-west") == 0

    clock.advance(600)       # no heartbeat for 10 intervals: NotReady, and the age says so
    hub.run_once()
    values = samples(hub.metrics.text())
    assert of_cluster(values, "gitfleet_cluster_ready", "prod-east") == 0
    assert of_cluster(values, "gitfleet_cluster_heartbeat_age_seconds", "prod-east") == 612
