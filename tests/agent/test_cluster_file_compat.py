"""An agent older than its hub keeps the cluster.yaml fields it knows (review2). A field it
does not know INSIDE a taint (the agent does not even use taints) used to make the whole file
unreadable: syncMode fell back to Pull (a Push cluster's agent would apply beside the hub),
statusRepository to "" (its status would move to the fleet repo) and ignoreDifferences to none
(the agent would fight the HPA). The agent before wire/cluster.py kept all three."""

from __future__ import annotations

from gitfleet.agent.desired import parse_cluster_tree

CLUSTER = b"""name: c1
namespace: gitfleet-c1
syncMode: Push
taints:
- key: gitfleet.io/unreachable
  value: ""
  effect: NoSchedule
  timeAdded: "2026-01-01T00:00:00Z"
  reason: heartbeat
statusRepository: https://git.example/status.git
ignoreDifferences:
- kind: Deployment
  jsonPointers: [/spec/replicas]
"""


def test_a_taint_field_from_a_newer_hub_keeps_what_the_agent_knows() -> None:
    state = parse_cluster_tree({"cluster.yaml": CLUSTER}, cluster_commit="c" * 40)
    assert any("reason" in e for e in state.errors), state.errors     # said, as it should be
    assert state.sync_mode == "Push"
    assert state.status_repository == "https://git.example/status.git"
    assert state.ignore_differences
