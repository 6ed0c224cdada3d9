"""`cluster.yaml` beside the Descriptions carries the cluster's sync mode, ignore rules and
health rules: one the agent cannot read is said, and nothing is pruned on its account."""

from __future__ import annotations

from gitfleet.agent.desired import parse_cluster_tree
from tests.agent.fleetstate import annotated, configmap, description_files


def test_an_unreadable_cluster_file_is_said_and_stops_prune() -> None:
    state = parse_cluster_tree({"cluster.yaml": b"syncMode: [Pull\n"}, cluster_commit="c" * 40)
    assert any("cluster.yaml" in e for e in state.errors), state.errors
    assert not state.prunable


def test_a_readable_cluster_file_is_no_error() -> None:
    state = parse_cluster_tree({"cluster.yaml": b"syncMode: Pull\n"}, cluster_commit="c" * 40)
    assert state.errors == () and state.prunable and state.sync_mode == "Pull"


def test_a_field_this_agent_does_not_know_is_said_and_the_rest_still_applies() -> None:
    # an agent older than its hub: its status place and sync mode still hold, the field is
    # named (and nothing is pruned on its account, as for any cluster.yaml it cannot read)
    state = parse_cluster_tree({"cluster.yaml": b"syncMode: Push\nstatusRepository: r.git\n"
                                                b"statusRepositry: x\n"},
                               cluster_commit="c" * 40)
    assert state.sync_mode == "Push" and state.status_repository == "r.git"
    assert len(state.errors) == 1 and "statusRepositry (did you mean statusRepository?)" \
        in state.errors[0] and state.errors[0].startswith("cluster.yaml: ")
    assert not state.prunable


def test_a_progress_timeout_that_is_no_duration_is_said_for_its_object() -> None:
    good = annotated(configmap("good", "app", {}), {"gitfleet.io/progress-timeout": "5m"})
    bad = annotated(configmap("bad", "app", {}), {"gitfleet.io/progress-timeout": "soon"})
    state = parse_cluster_tree(description_files("default", "app", [good, bad]),
                               cluster_commit="c" * 40)
    (desc,) = state.descriptions.values()
    assert [e for e in desc.read_errors if "gitfleet.io/progress-timeout 'soon'" in e]
    assert {o.ref.name for o in state.objects.values()} == {"good"}
