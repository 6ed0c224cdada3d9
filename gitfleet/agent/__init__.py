"""The agent daemon: fetch, apply, inventory and prune, health, drift, recovery, heartbeat."""
