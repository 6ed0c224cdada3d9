"""The fleet at a glance: the state and status branches of a fleet repo, read into rows."""
