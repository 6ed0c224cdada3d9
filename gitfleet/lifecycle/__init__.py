"""Cluster lifecycle as pure decisions: heartbeat judgement, the taints it gives, failover.

No Git, no Kubernetes client, no clock: the hub (gitfleet.hub.evictions) reads the agents'
status and the previous state, passes "now" in, and writes what these functions decide.
"""
