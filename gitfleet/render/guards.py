"""The mass-deletion guard (SEMANTICS, "Guards"): which clusters a render may not empty yet.

A bad commit (a render that came out empty, a Subscription deleted by mistake) must not
delete a fleet. The hub compares, per cluster, the objects its state holds now with those the
new render holds; a cluster that would lose more than `guards.maxDeletions` allows keeps its
previous state until a source commit carries the approval trailer naming it:

    Gitfleet-Approve-Deletions: prod-*, staging-east

(cluster-name globs, comma-separated). The approval reaches the agent as a trailer of the
cluster commit that deletes, so the agent's own --max-prune-share needs no flag for it.
Pure: counts paths, never reads a blob.

Every place that asks "would this render be held?" asks `would_hold` (the hub through
`judge`, the pre-receive hook, `gitfleet diff`, `gitfleet plan`); every place that shows a
hold reads it back from the state's `errors.yaml` with `holds_in` (fleet status, /metrics,
`gitfleet get`, the dashboard), so a restarted hub or any clone shows the same holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Protocol

from gitfleet.errors import InputError
from gitfleet.layout import DESCRIPTION_FILE
from gitfleet.model.problems import Problem
from gitfleet.model.settings import MaxDeletions
from gitfleet.wire.errors import read_errors

APPROVAL_TRAILER = "Gitfleet-Approve-Deletions"
GUARD_UNIT = "guards.maxDeletions"     # the `unit` of a hold's problem in errors.yaml
CLUSTERS = "clusters/"
_MESSAGE = re.compile(r"held: would delete (\d+) of (\d+) objects in (\S+)")


@dataclass(frozen=True)
class Hold:
    """A cluster whose render would delete `deleted` of its `owned` objects: held."""

    cluster: str
    deleted: int
    owned: int

    @property
    def message(self) -> str:
        return f"held: would delete {self.deleted} of {self.owned} objects in {self.cluster}"

    def problem(self) -> Problem:
        """The error `errors.yaml` carries while the cluster is held (`get`, fleet status)."""
        return Problem("fleet.yaml", None, f"Cluster/{self.cluster}", (
            f"{self.message} (more than guards.maxDeletions allows); the cluster keeps its "
            f"previous state until a source commit carries the trailer "
            f"`{APPROVAL_TRAILER}: {self.cluster}`"), unit=GUARD_UNIT)


@dataclass(frozen=True)
class Verdict:
    """The guard's decision for one render: the clusters held, and the clusters whose
    deletions an approval let through (their cluster commits carry the approval)."""

    held: tuple[Hold, ...] = ()
    approved: tuple[str, ...] = ()


def approvals(trailer_values: Iterable[str]) -> tuple[str, ...]:
    """The cluster-name globs of `Gitfleet-Approve-Deletions` trailer values."""
    return tuple(sorted({g.strip() for value in trailer_values for g in value.split(",")
                         if g.strip()}))


def approves(globs: Iterable[str], cluster: str) -> bool:
    return any(fnmatchcase(cluster, glob) for glob in globs)


def objects_by_cluster(paths: Iterable[str]) -> dict[str, set[str]]:
    """cluster -> the paths of its object files (`clusters/<c>/<ns>/<desc>/<file>`)."""
    out: dict[str, set[str]] = {}
    for path in paths:
        if not path.startswith(CLUSTERS):
            continue
        parts = path.split("/")
        if len(parts) == 5 and parts[-1] != DESCRIPTION_FILE:
            out.setdefault(parts[1], set()).add(path)
    return out


def judge(limit: MaxDeletions, *, before: Iterable[str], globs: Iterable[str],
          after: Iterable[str] | None = None, gone: Iterable[str] | None = None) -> Verdict:
    """Hold every cluster that would lose more than `limit.count` objects AND more than
    `limit.share` of the objects it holds (`before`: the state's paths, `after`: the
    render's), unless a glob of `globs` approves it. A caller that knows the paths the render
    drops without listing both (an incremental render: `gone`) passes them instead of
    `after`; `before` is then listed only when a cluster loses more than `limit.count`."""
    globs = tuple(globs)
    if gone is None:
        kept = set(after or ())
        before = list(before)
        gone = [p for p in before if p not in kept]
    lost = objects_by_cluster(gone)
    owned_by: dict[str, set[str]] | None = None
    held: list[Hold] = []
    approved: list[str] = []
    for cluster in sorted(lost):
        deleted = len(lost[cluster])
        if approves(globs, cluster):
            approved.append(cluster)
            continue
        if deleted <= limit.count:
            continue
        if owned_by is None:
            owned_by = objects_by_cluster(before)
        owned = len(owned_by.get(cluster, ()))
        if deleted > limit.share * owned:
            held.append(Hold(cluster, deleted, owned))
    return Verdict(tuple(held), tuple(approved))


def would_hold(limit: MaxDeletions, *, before: Iterable[str], after: Iterable[str],
               approvals_text: Iterable[str] = ()) -> tuple[Hold, ...]:
    """The holds a render would meet: `before` the paths of the state it replaces, `after`
    the paths it renders, `approvals_text` the `Gitfleet-Approve-Deletions` trailer values of
    the source commits it renders (since the state's). The one question `gitfleet diff`,
    `gitfleet plan` and the pre-receive hook ask; the hub asks `judge` (it needs the
    approved clusters too)."""
    return judge(limit, before=before, after=after, globs=approvals(approvals_text)).held


class _Recorded(Protocol):
    @property
    def unit(self) -> str: ...

    @property
    def message(self) -> str: ...


def holds_in(errors: Iterable[_Recorded]) -> dict[str, Hold]:
    """cluster -> its hold, from the errors of a state's `errors.yaml` (those of the unit
    `guards.maxDeletions`: the state stands on a hold for them)."""
    out: dict[str, Hold] = {}
    for problem in errors:
        found = _MESSAGE.match(problem.message) if problem.unit == GUARD_UNIT else None
        if found is not None:
            out[found[3]] = Hold(found[3], int(found[1]), int(found[2]))
    return out



def holds_of(errors_file: bytes | None) -> dict[str, Hold]:
    """cluster -> its hold, from a state's `errors.yaml` (cheap when it names none). A file
    that does not read names no hold here; its readers say it is unreadable."""
    if not errors_file or GUARD_UNIT.encode() not in errors_file:
        return {}
    try:
        return holds_in(read_errors(errors_file).errors)
    except InputError:
        return {}
