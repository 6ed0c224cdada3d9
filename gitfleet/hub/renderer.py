"""The hub's one renderer: a full render, an incremental one from the source this hub last
rendered, or a restart (incremental from the state a previous hub wrote).

An incremental render is taken when the state is still the one written from the last render
and the status input is the same; a hub that has not rendered yet starts from the state in Git,
whose Source-Commit, Status-Input and Renderer trailers say what it was rendered from. Anything
else renders in full. Extra inputs of the render (a chart renderer, ...) are given once, at
the round by the planners (`Contribution.render_inputs`) and passed by keyword to the render.

Every render then passes the mass-deletion guard (`gitfleet.render.guards`, docs/guards.md): a
cluster that would lose too many objects keeps its previous files in the new state (so its
branch does not move), an error in `errors.yaml` and a log line say so, and the next render
is a full one (an incremental render would keep the held files as they are). Approvals are
read by `gitfleet.hub.approvals` (signed ones only under `--require-signed-source`); a cluster
whose agent refused a prune that an approval covers is approved too, so its branch gets a
commit carrying the approval even when its tree does not change.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gitfleet
from gitfleet.collector import collector_paused
from gitfleet.filemap import LazyFiles, Overlay, touched, with_changes
from gitfleet.hub.approvals import Approvals
from gitfleet.hub.assembly import Share
from gitfleet.hub.round import RoundInputs
from gitfleet.layout import ERRORS_FILE
from gitfleet.logs import log
from gitfleet.model.loader import relevant
from gitfleet.render.core import RenderResult, errors_file, render
from gitfleet.render.guards import APPROVAL_TRAILER, GUARD_UNIT, Verdict, judge
from gitfleet.render.incremental import render_incremental
from gitfleet.render.status import StatusSnapshot
from gitfleet.state.git import Git
from gitfleet.state.signing import TrustedKeys
from gitfleet.state.snapshot import SOURCE_PATHS
from gitfleet.state.writer import RENDERER, STATUS_INPUT, state_trailers, summary_totals
from gitfleet.wire.errors import read_errors

LOG = logging.getLogger("gitfleet.hub")


@dataclass(frozen=True)
class RenderReport:
    """What one render did, for the log, the metrics and `--once`."""

    source: str
    state: str | None
    wrote: bool
    moved: tuple[str, ...]
    result: RenderResult
    render_seconds: float
    write_seconds: float
    mode: str = "full"          # full, incremental (from this hub's last render), restart
                                # (incremental from the state a previous hub wrote) or rollout
    changed_paths: int = 0      # source files changed since the render it started from
    objects_written: int = 0    # Git objects the write added
    state_read: int = 0         # distinct blobs of the previous state read back from Git

    def log(self) -> None:
        result = self.result
        log(LOG, logging.INFO, "render", source=self.source[:12], state=(self.state or "")[:12],
            mode=self.mode, changed_files=self.changed_paths, wrote=self.wrote,
            moved=len(self.moved), clusters=len(result.clusters),
            descriptions=result.descriptions, objects=result.objects,
            errors=len(result.errors), warnings=len(result.warnings),
            render_s=round(self.render_seconds, 3), write_s=round(self.write_seconds, 3),
            objects_written=self.objects_written, state_blobs_read=self.state_read)
        for problem in result.errors:
            log(LOG, logging.WARNING, "render error", problem=problem.format())


@dataclass(frozen=True)
class Rendering:
    """A render's result and how it was made."""

    result: RenderResult
    mode: str = "full"
    changed_paths: int = 0
    guard: Verdict = Verdict()    # clusters held by the mass-deletion guard, or approved


@dataclass(frozen=True)
class Basis:
    """What a state was rendered from: source commit, state commit, status input and its
    (Descriptions, objects) totals when known."""

    source: str
    state: str | None
    status_input: str
    totals: tuple[int, int] | None = None


@dataclass
class Renderer:
    """Renders a round's inputs."""

    git: Git
    last: Basis | None = None          # what this hub last wrote from
    result: RenderResult | None = None    # its result
    # --require-signed-source: an approval counts only from a commit signed by one of these
    approval_keys: TrustedKeys | None = None
    approvals: Approvals = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.approvals = Approvals(self.git, self.approval_keys)

    def render(self, inputs: RoundInputs, snapshot: StatusSnapshot, status_input: str,
               extra: Mapping[str, Any], *, share: Share | None = None) -> Rendering:
        """The render of `inputs` with `snapshot`; `extra`: more keyword inputs (run with
        the cycle collector paused: gitfleet.hub.collector). `share`: a hub shard's round
        that renders only the clusters it owns (gitfleet.hub.assembly; `inputs.previous` is
        then the whole fleet's, assembled)."""
        only = share.owned if share is not None else None
        with collector_paused():
            found = self._incremental(inputs, snapshot, status_input, extra, only)
            if found is None:
                found = Rendering(render(inputs.fleet, source_commit=inputs.source,
                                         previous_files=inputs.previous, status=snapshot,
                                         fleet_at=inputs.fleet_at, only_clusters=only,
                                         **extra))
            elif share is not None:
                found = dataclasses.replace(found, result=dataclasses.replace(
                    found.result, files=share.rebased(found.result.files)))
            return self._guarded(inputs, found, share)

    def _guarded(self, inputs: RoundInputs, rendering: Rendering,
                 share: Share | None = None) -> Rendering:
        """`rendering` with every cluster the mass-deletion guard holds kept as the previous
        state has it, and an error naming each hold (gitfleet.render.guards). Only a new
        source commit is judged: a render for status alone (failover, replica division)
        deletes what the hub decided, not what a commit asked for (a hold stays judged).
        A shard judges its own clusters, and the ones it took over always: their previous
        owner may have held them (that hold is in the branch, not in this shard's state)."""
        previous, result = inputs.previous, rendering.result
        refused = self.approvals.for_refused_prunes(inputs)   # approvals owed to agents
        base = state_trailers(self.git, inputs.heads.state).get("Source-Commit", "") \
            if inputs.heads.state else ""
        judged = previous is not None and (base != inputs.source or _held(previous))
        if share is not None and previous is not None:
            previous, judged = share.judged(previous, judged)
        if previous is None or not judged:
            return dataclasses.replace(rendering, guard=Verdict(approved=refused)) \
                if refused else rendering
        # an incremental render knows what it dropped: the state is listed only for a cluster
        # that may be held (a cold round reads the folders it renders, not the fleet's)
        moved = touched(previous, result.files)
        gone = None if moved is None else \
            [p for p in moved if p not in result.files and p in previous]
        verdict = judge(inputs.fleet.settings.max_deletions, before=previous.keys(),
                        after=result.files.keys(), gone=gone,
                        globs=self.approvals.since(base, inputs.source))
        if refused:
            verdict = dataclasses.replace(verdict, approved=tuple(sorted(
                {*verdict.approved, *refused})))
        if not verdict.held:
            return dataclasses.replace(rendering, guard=verdict)
        changes: dict[str, bytes | None] = {}
        for hold in verdict.held:
            log(LOG, logging.WARNING, hold.message, cluster=hold.cluster,
                deleted=hold.deleted, objects=hold.owned, approve_with=APPROVAL_TRAILER)
            folder = f"clusters/{hold.cluster}/"
            changes.update({p: None for p in result.files if p.startswith(folder)})
            changes.update({p: previous[p] for p in previous if p.startswith(folder)})
        errors = sorted([*result.errors, *(h.problem() for h in verdict.held)])
        changes[ERRORS_FILE] = errors_file(errors, result.warnings)
        result = dataclasses.replace(result, files=with_changes(result.files, changes),
                                     errors=errors)
        return dataclasses.replace(rendering, result=result, guard=verdict)

    def wrote(self, basis: Basis, result: RenderResult) -> None:
        """The state `basis.state` was written from `result`."""
        self.last, self.result = basis, result

    def _incremental(self, inputs: RoundInputs, snapshot: StatusSnapshot,
                     status_input: str, extra: Mapping[str, Any],
                     only: frozenset[str] | None = None) -> Rendering | None:
        if inputs.previous is None or _held(inputs.previous):
            return None      # a held cluster's files are the old ones: render them afresh
        mode, basis = "incremental", self.last
        if basis is None:
            mode, basis = "restart", self._basis_in_git(inputs.heads.state)
            if basis is None:
                return None
        if basis.state != inputs.heads.state or basis.status_input != status_input or \
                (basis.source == inputs.source and mode != "restart"):
            return None
        listed = self.git.run("diff-tree", "-r", "--name-only", "--no-renames", basis.source,
                              inputs.source, "--", *SOURCE_PATHS).decode().splitlines()
        paths = frozenset(p for p in listed if relevant(p))
        result = render_incremental(
            inputs.fleet_at(basis.source), inputs.fleet, paths=paths,
            previous_files=inputs.previous, source_commit=inputs.source, status=snapshot,
            fleet_at=inputs.fleet_at, previous_totals=basis.totals, only_clusters=only,
            **extra)
        return None if result is None else Rendering(result, mode, len(paths))

    def _basis_in_git(self, state: str | None) -> Basis | None:
        """What the state in Git was rendered from, when its trailers say so, this very code
        rendered it, and the source commit is still in the repository."""
        if state is None:
            return None
        trailers = state_trailers(self.git, state)
        base = trailers.get("Source-Commit", "")
        if STATUS_INPUT not in trailers or trailers.get(RENDERER) != renderer_id() or \
                not base or self.git.resolve(f"{base}^{{commit}}") != base:
            return None
        return Basis(base, state, trailers[STATUS_INPUT], summary_totals(trailers))


@functools.cache
def renderer_id() -> str:
    """The code that renders: gitfleet's version and a digest of its package files. A state
    written by another build (an upgrade) is not trusted for an incremental restart: what the
    change does not touch might render differently now."""
    root = Path(gitfleet.__file__).parent
    h = hashlib.sha1()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".json") and path.is_file():
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return f"gitfleet {gitfleet.__version__} {h.hexdigest()[:12]}"


def _held(files: Mapping[str, bytes]) -> bool:
    """Whether the state holds a cluster back (its errors.yaml names a guard's hold)."""
    data = files.get(ERRORS_FILE)
    return data is not None and GUARD_UNIT.encode() in data and any(
        p.unit == GUARD_UNIT for p in read_errors(data).errors)


def state_read(files: Mapping[str, bytes] | None) -> int:
    """How many distinct blobs of a lazily read state have been read from Git so far."""
    while isinstance(files, Overlay):
        files = files.base
    return files.loaded if isinstance(files, LazyFiles) else 0
