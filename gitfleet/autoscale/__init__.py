"""Autoscaling: the HPA algorithm and CronFederatedHPA schedules, pure (the hub acts)."""
