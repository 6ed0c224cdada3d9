"""Rollouts across clusters in waves (`RolloutPolicy`): pure decisions, no Git, no clock.

- `waves`: which wave each cluster belongs to;
- `progress`: a rollout's progress as data and as `rollouts.yaml`;
- `machine`: one step of the state machine, (policy, previous progress, reports, now) ->
  (new progress, what to release to each cluster, why);
- `governed`: which Description folders a policy governs.

The hub (`gitfleet.hub.rollouts`) feeds it and `gitfleet.state.release` builds the cluster
branches it decides.
"""
