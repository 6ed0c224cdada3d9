"""The plan part of the agent's round: what it does with the cluster commit it verified.

Pure: the round's verdict and desired state and who this loop is (an agent, or the hub's push
worker; AppPusher on or off) decide, as SEMANTICS "Sync modes" says. The per-object plan of a
sync is the engine's (`gitfleet.agent.plan`); this decides whether there is a sync at all.
"""

from __future__ import annotations

from gitfleet.agent.round import Course, Round
from gitfleet.layout import PUSHED_MODES


def course_of(round_: Round, *, push_worker: bool, app_pusher: bool) -> Course:
    if round_.refused:
        return Course.REFUSE
    if round_.unjudged:
        return Course.HOLD
    desired = round_.desired
    if desired is None:
        return Course.WAIT
    if push_worker and desired.sync_mode not in PUSHED_MODES:
        return Course.ELSEWHERE
    if not push_worker and desired.sync_mode in PUSHED_MODES and (
            app_pusher or desired.sync_mode == "Push"):
        return Course.DELEGATE
    return Course.SYNC
