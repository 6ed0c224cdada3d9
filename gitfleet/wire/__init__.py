"""Wire formats: the files one part of gitfleet writes and another reads, as typed values.

Below the hub and the agent (both read and write them), above the utilities. One module per
format: `status` (ClusterStatus and its heartbeat, the Health, Phase and Change enums),
`preservation` (the state-preservation annotation the render writes and agents read),
`metrics` (metrics.yaml for the FederatedHPA), `description` (each Description folder's
description.yaml: the render's text builder and the strict reader), the state's memory files
`evictions`, `autoscaling` and `rollouts` (evictions.yaml, autoscaling.yaml, rollouts.yaml),
`rolloutcontrol` (the source branch's rollouts/<policy>.yaml),
`fields` (the strict field checks the readers share), `tips` (the signed tip
documents agents poll instead of Git),
`inventory` (the agent's in-cluster inventory record), `registration` (a cluster's
registration request), `workload` (the replicas of a
rendered workload file), `objectref` (a Kubernetes object's identity) and `emit` (the YAML
emitter they are written with).
"""
