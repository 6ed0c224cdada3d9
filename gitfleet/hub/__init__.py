"""The hub daemon: triggers, render loop, registrations, heartbeats, failover, status."""
