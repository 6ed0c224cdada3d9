"""`diff`: render two commits of a fleet repo and compare what every cluster would receive.

BASE is rendered first, with no history (what it would deploy from scratch), then HEAD with
BASE's state as its previous state and BASE itself readable as the ApplyLater basis, exactly as
the hub would render HEAD after BASE: an ApplyLater override changed by HEAD stays as it was and
is reported as deferred. Both sides render with the status input the hub would use now (each
cluster's capabilities and room from its status branch, gitfleet.charts.hubrender), so a
change that only matters on some Kubernetes versions shows in exactly those clusters. Only the
units the change can affect are rendered (see `scope`), and nothing at all when no fleet file
changed.

The mass-deletion guard is asked as the hub asks it (gitfleet.render.guards, docs/guards.md):
the objects HEAD drops per cluster are counted from the two renders; only a cluster that loses
more than `guards.maxDeletions.count` can be held, and only for such a cluster is BASE rendered
in full (when the scope left units out) to learn how many objects it holds, the share's
denominator. Approvals are the trailers of the commits from BASE to HEAD.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from gitfleet.charts import folders
from gitfleet.charts.hubrender import StatusInput, read_status_input, render_as_hub
from gitfleet.charts.renderer import Charts
from gitfleet.charts.sources import folder_path
from gitfleet.diff.compare import compare_trees
from gitfleet.diff.model import FleetDiff
from gitfleet.errors import InputError
from gitfleet.model.loader import FLEET_FILE, Fleet, KeptSettings, settings_problems
from gitfleet.model.problems import Problem
from gitfleet.render.charts import ChartRenderer
from gitfleet.render.guards import (
    APPROVAL_TRAILER,
    Hold,
    approvals,
    approves,
    judge,
    objects_by_cluster,
)
from gitfleet.render.plans import keeps_placement
from gitfleet.render.scope import (
    Scope,
    changed_paths,
    clusters_in_scope,
    fresh_plans,
    only_clusters_changed,
    scope_of,
)
from gitfleet.rollout.preview import preview
from gitfleet.source import load_snapshot
from gitfleet.state.git import Git
from gitfleet.state.lastgood import last_good_settings
from gitfleet.state.objects import trailers_of
from gitfleet.state.snapshot import read_revision

DEFERRED_MARK = "deferred (ApplyLater)"


@dataclass(frozen=True)
class Snapshot:
    """The fleet files of one commit."""

    sha: str
    files: Mapping[str, bytes]
    kept: KeptSettings | None = None    # the last good fleet.yaml, while this one has problems


def chart_folders_touched(base: Fleet, head: Fleet, changed: frozenset[str]) -> frozenset[str]:
    """The changed paths inside a chart folder that a HelmChart of either fleet reads
    (`repo: file://<folder>`)."""
    if not changed:
        return frozenset()
    folders = set()
    for fleet in (base, head):
        for t in fleet.templates.values():
            spec = t.body.get("spec") or {}
            if t.is_helm_chart and str(spec.get("repo", "")).startswith("file://"):
                try:
                    folders.add(folder_path(str(spec["repo"]), str(spec.get("chart", ""))) + "/")
                except InputError:
                    continue
    return frozenset(p for p in changed if p.startswith(tuple(folders)))


def _problem_key(p: Problem) -> tuple[str, str, str]:
    return (p.path, p.obj, p.message)  # a line shift alone is not a new problem


def _units(fleet: Fleet) -> int:
    return len(fleet.subscriptions) + len(fleet.propagations)


def diff_snapshots(base: Snapshot, head: Snapshot, *,
                   fleet_at: Callable[[str], Fleet] | None = None,
                   everything: bool = False,
                   charts: tuple[ChartRenderer, ChartRenderer] | None = None,
                   other_changes: frozenset[str] = frozenset(),
                   status: Callable[[Fleet], StatusInput] | None = None,
                   approved: tuple[str, ...] = ()) -> FleetDiff:
    """The effect of moving the fleet from `base` to `head`.

    `fleet_at` loads the fleet of another commit (for ApplyLater bases older than BASE);
    `everything` renders every unit instead of those the change can affect (for checks);
    `charts` renders the HelmChart feeds of BASE and HEAD (gitfleet.charts); `other_changes`
    are the changed paths of the repository outside the fleet files (chart folders);
    `status` reads the status input the hub would render HEAD's fleet with (both sides render
    with it; none: every cluster as fleet.yaml says); `approved`: the cluster globs the
    commits from BASE to HEAD approve deletions in (`Gitfleet-Approve-Deletions`)."""
    paths = changed_paths(base.files, head.files)
    base_fleet = load_snapshot(base.files, kept=base.kept)
    touched = chart_folders_touched(base_fleet, load_snapshot(head.files, kept=head.kept),
                                    other_changes) \
        if other_changes else frozenset()
    if touched:   # a chart folder in the fleet repo changed: render everything (rare, correct)
        paths, everything = paths | touched, True
    if not paths:   # nothing rendered, no status read
        n = len(base_fleet.clusters)
        return FleetDiff(base.sha, head.sha, n, (), (), units_total=_units(base_fleet))
    head_fleet = load_snapshot(head.files, kept=head.kept)
    read = status(head_fleet) if status is not None else \
        read_status_input(None, head_fleet)
    scope = Scope(True, frozenset(), frozenset()) if everything else \
        scope_of(base_fleet, head_fleet, paths)

    def at(sha: str) -> Fleet:
        if sha == base.sha:
            return base_fleet
        if fleet_at is None:
            raise LookupError(sha)
        return fleet_at(sha)

    only = base_plans = head_plans = None
    if not everything and only_clusters_changed(paths) and \
            not keeps_placement(scope.restrict(head_fleet)):
        # Cluster files only: schedule both sides once and render just the clusters whose
        # placements or own definition changed. Templates and policies are the same on both
        # sides, so HEAD's claims do not depend on BASE's state. Steady division does (it
        # keeps replicas where BASE put them, in every cluster): then everything is rendered.
        base_plans = fresh_plans(scope.restrict(base_fleet))
        head_plans = fresh_plans(scope.restrict(head_fleet))
        only = clusters_in_scope(base_fleet, head_fleet, base_plans[0], head_plans[0])
    base_charts, head_charts = charts or (None, None)
    base_result = render_as_hub(scope.restrict(base_fleet), source_commit=base.sha,
                                status=read, only_clusters=only, plans=base_plans,
                                charts=base_charts)
    head_result = render_as_hub(scope.restrict(head_fleet), source_commit=head.sha,
                                status=read, previous_files=base_result.files, fleet_at=at,
                                only_clusters=only, plans=head_plans, charts=head_charts)
    clusters = compare_trees(base_result.files, head_result.files, base_fleet.clusters,
                             head_fleet.clusters)
    complete = scope.everything and only is None

    def owned(names: frozenset[str]) -> Iterable[str]:
        """The object paths BASE gives `names` (BASE rendered in full for them)."""
        if complete:
            return base_result.files.keys()
        return render_as_hub(base_fleet, source_commit=base.sha, status=read,
                             only_clusters=names, charts=base_charts).files.keys()

    held = _held(head_fleet, base_result.files.keys(), head_result.files.keys(), owned,
                 approved)
    base_errors = {_problem_key(p) for p in base_result.errors}
    head_errors = {_problem_key(p) for p in head_result.errors}
    base_warnings = {_problem_key(p) for p in base_result.warnings}
    return FleetDiff(
        base=base.sha, head=head.sha,
        clusters_total=len(set(base_fleet.clusters) | set(head_fleet.clusters)),
        clusters=tuple(clusters), changed_files=tuple(sorted(paths)),
        errors_introduced=tuple(p for p in head_result.errors
                                if _problem_key(p) not in base_errors),
        errors_fixed=tuple(p for p in base_result.errors if _problem_key(p) not in head_errors),
        warnings_introduced=tuple(p for p in head_result.warnings
                                  if _problem_key(p) not in base_warnings
                                  and DEFERRED_MARK not in p.message),
        units_rendered=_units(scope.restrict(head_fleet)),
        units_total=_units(head_fleet),
        rollouts=preview(head_fleet, {c.name: {o.unit for o in c.objects}
                                      | {d.unit for d in c.descriptions} for c in clusters}),
        capabilities=read.to_dict(), held=held)


def _held(fleet: Fleet, before: Iterable[str], after: Iterable[str],
          owned: Callable[[frozenset[str]], Iterable[str]],
          approved: tuple[str, ...]) -> tuple[Hold, ...]:
    """The clusters the hub would hold for this change (`fleet`: HEAD's, whose
    guards.maxDeletions the hub applies). Only clusters losing more than the count are
    looked at further: `owned` renders BASE in full for them when the diff rendered less."""
    limit = fleet.settings.max_deletions
    kept = set(after)
    gone = [p for p in before if p not in kept]
    lost = objects_by_cluster(gone)
    candidates = frozenset(c for c, paths in lost.items()
                           if len(paths) > limit.count and not approves(approved, c))
    if not candidates:
        return ()
    return judge(limit, before=owned(candidates), gone=gone, globs=approved).held


def approvals_between(repo: str | os.PathLike[str], base: str, head: str) -> tuple[str, ...]:
    """The cluster globs the commits after `base` up to `head` approve (at most 1,000)."""
    git = Git(repo)
    shas = git.run("rev-list", "--max-count=1000", head, f"^{base}").decode().split()
    return approvals(trailers_of(body).get(APPROVAL_TRAILER, "")
                     for body in git.read_objects(shas).values())


def diff_revisions(repo: str | os.PathLike[str], base: str, head: str, *,
                   everything: bool = False, charts: Charts | None = None) -> FleetDiff:
    """`diff_snapshots` of two commits of the Git repository at `repo` (HelmChart feeds
    rendered by `charts`, chart folders read at each commit), with the status input the hub
    would render with, read from the repository's status branches."""
    with ThreadPoolExecutor(max_workers=2) as pool:  # two `git` processes at once
        base_read, head_read = pool.submit(read_revision, repo, base), \
            pool.submit(read_revision, repo, head)
        (base_files, base_sha), (head_files, head_sha) = base_read.result(), head_read.result()
    listed = Git(repo).run("diff-tree", "-r", "--name-only", "--no-renames", base_sha,
                           head_sha).decode().splitlines()
    def kept(sha: str, files: Mapping[str, bytes]) -> KeptSettings | None:
        broken = settings_problems(files[FLEET_FILE]) if FLEET_FILE in files else []
        return last_good_settings(Git(repo), sha) if broken else None

    return diff_snapshots(Snapshot(base_sha, base_files, kept(base_sha, base_files)),
                          Snapshot(head_sha, head_files, kept(head_sha, head_files)),
                          fleet_at=lambda sha: load_snapshot(read_revision(repo, sha)[0]),
                          everything=everything,
                          other_changes=frozenset(p for p in listed if p not in base_files
                                                  and p not in head_files),
                          charts=None if charts is None else (
                              charts.at(folders.revision(Git(repo), base_sha)),
                              charts.at(folders.revision(Git(repo), head_sha))),
                          status=lambda fleet: read_status_input(repo, fleet),
                          approved=approvals_between(repo, base_sha, head_sha))
