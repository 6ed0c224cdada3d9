"""Whose branch a pushed ref is: the rules the pre-receive hook applies, by ref name alone.

Under `refs/heads/<prefix>/` every branch has one writer. `status/<c>` is cluster c's agent's;
`registrations/<c>` is c's agent's request with the hub's answers on top; `state`,
`clusters/<c>`, `fleet-status` and `approvals/<c>` are the hub's; `plans/<c>/<id>` are plan
requests (`gitfleet plan`: the hub's key or a plan key) and `plan-answers/<c>/<id>` cluster
c's agent's answers. Any other branch under the
prefix is refused: nobody needs it, and an unknown branch there is where a forgery would hide.
gitfleet never deletes these branches (a cluster that leaves gets an empty commit), so a
deletion is refused, except of an approval branch, which `gitfleet approve` removes once merged,
and of plans, which expire.
Refs outside the prefix (the source branch, tags) are not this hook's business.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from gitfleet.layout import Branches

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")   # a DNS label, as cluster names are
_PLAN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class Owner(enum.StrEnum):
    OUTSIDE = "outside"          # not under the prefix: not checked
    STATUS = "status"            # the cluster's agent
    REGISTRATION = "registration"  # the cluster's agent, and the hub's answers
    HUB = "hub"
    APPROVAL = "approval"        # the hub's; may be deleted
    PLAN = "plan"                # `gitfleet plan`: the hub's key or a plan key; may be deleted
    PLAN_ANSWER = "plan-answer"  # the cluster's agent; may be deleted
    UNKNOWN = "unknown"          # under the prefix, but nothing gitfleet writes


@dataclass(frozen=True)
class Target:
    ref: str
    owner: Owner
    cluster: str = ""


def classify(ref: str, branches: Branches) -> Target:
    """Who may write `ref` (a full ref name)."""
    base = f"refs/heads/{branches.prefix}/"
    if not ref.startswith(base):
        return Target(ref, Owner.OUTSIDE)
    if ref in (branches.state, branches.fleet_status):
        return Target(ref, Owner.HUB)
    for owner, folder in ((Owner.PLAN, "plans/"), (Owner.PLAN_ANSWER, "plan-answers/")):
        if ref.startswith(base + folder):
            name, _, plan = ref[len(base + folder):].partition("/")
            if _NAME.match(name) and len(name) <= 63 and _PLAN_ID.match(plan):
                return Target(ref, owner, name)
            return Target(ref, Owner.UNKNOWN)
    for owner, folder in ((Owner.STATUS, "status/"), (Owner.REGISTRATION, "registrations/"),
                          (Owner.HUB, "clusters/"), (Owner.APPROVAL, "approvals/")):
        if ref.startswith(base + folder):
            name = ref[len(base + folder):]
            if _NAME.match(name) and len(name) <= 63:
                return Target(ref, owner, name)
            return Target(ref, Owner.UNKNOWN)
    return Target(ref, Owner.UNKNOWN)
