"""`cluster.yaml` beside the Descriptions carries the cluster's sync mode, ignore rules and
health rules: one the agent cannot read is said, and nothing is pruned on its account."""

from __future__ import annotations

from gitfleet.agent.desired import parse_cluster_tree


def test_an_unreadable_cluster_file_is_said_and_stops_prune() -> None:
    state = parse_cluster_tree({"cluster.yaml": b"syncMode: [Pull\n"}, cluster_commit="c" * 40)
    assert any("cluster.yaml" in e for e in state.errors), state.errors
    assert not state.prunable


def test_a_readable_cluster_file_is_no_error() -> None:
    state = parse_cluster_tree({"cluster.yaml": b"syncMode: Pull\n"}, cluster_commit="c" * 40)
    assert state.errors == () and state.prunable and state.sync_mode == "Pull"
