"""The mass-deletion guard at the door: a push to the source branch whose render would delete
more of a cluster's objects than `fleet.yaml: guards.maxDeletions` allows is refused with the
message the hub would log (docs/guards.md), unless a pushed commit approves it.

The new tip is rendered as the hub would render it (each cluster's status input from the
status branches, the current state as the previous state, so a unit that fails to render
keeps its last good content and deletes nothing) and compared with the state, per cluster,
by `gitfleet.render.guards` — the very rule the hub applies. Without a state (nothing rendered
yet) there is nothing to delete.
"""

from __future__ import annotations

from gitfleet.charts.hubrender import read_status_input, render_as_hub
from gitfleet.layout import Branches
from gitfleet.render.guards import APPROVAL_TRAILER, approvals, judge
from gitfleet.state.git import Git
from gitfleet.state.lastgood import load_keeping
from gitfleet.state.objects import trailers_of
from gitfleet.state.snapshot import SourceReader
from gitfleet.state.writer import StateWriter, state_trailers


def refusal(git: Git, branches: Branches, new: str) -> str:
    """Why the source branch may not move to `new` ("" when it may)."""
    state = git.resolve(branches.state)
    if state is None:
        return ""
    previous = StateWriter(git, branches=branches).load(state)
    files, sha = SourceReader(git).files_at(new), new    # `git`: reads the pushed objects
    fleet = load_keeping(files, str(git.path), sha)
    result = render_as_hub(fleet, source_commit=sha, status=read_status_input(git.path, fleet),
                           charts=None, previous_files=previous)
    base = state_trailers(git, state).get("Source-Commit", "")
    known = base and git.resolve(f"{base}^{{commit}}") == base
    shas = git.run("rev-list", "--max-count=1000", sha,
                   *([f"^{base}"] if known else [])).decode().split()
    globs = approvals(trailers_of(body).get(APPROVAL_TRAILER, "")
                      for body in git.read_objects(shas).values())
    verdict = judge(fleet.settings.max_deletions, before=previous.keys(),
                    after=result.files.keys(), globs=globs)
    if not verdict.held:
        return ""
    return "; ".join(h.message for h in verdict.held) + (
        f" (more than fleet.yaml guards.maxDeletions allows); approve with a commit trailer "
        f"`{APPROVAL_TRAILER}: {', '.join(h.cluster for h in verdict.held)}`")
