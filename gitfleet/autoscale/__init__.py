"""Autoscaling decisions (pure): the Kubernetes HPA algorithm over a fleet's pods."""
