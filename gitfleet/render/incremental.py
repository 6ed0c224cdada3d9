"""Render again only what a change can affect, and keep the rest of the previous state.

A push usually touches one file of a large fleet. The Subscriptions and policies the change
cannot affect (see `scope`) have, by construction, the same output as before, so the hub renders
only the others and takes every other Description folder, and every problem of the units left
out, from the previous state. Whenever that reasoning could be unsafe — no previous state, broken
files, clusters added or removed, fleet settings changed — it declines, and the caller renders
everything. Tests compare it byte for byte with a full render.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gitfleet import yamlio
from gitfleet.filemap import overlay, subset
from gitfleet.layout import ERRORS_FILE
from gitfleet.model.loader import Fleet
from gitfleet.model.objects import ObjectKey
from gitfleet.model.problems import Problem
from gitfleet.render.core import (
    CLUSTER_FILE,
    ClusterSummary,
    RenderResult,
    claims_file,
    errors_file,
    problems_per_cluster,
    render,
)
from gitfleet.render.plans import best_strength, karmada_claims, resolve_feed
from gitfleet.render.previous import CLAIMS_FILE, PreviousState
from gitfleet.render.scope import Scope, scope_of
from gitfleet.render.status import StatusSnapshot

Unit = tuple[str, str, str]  # kind, namespace, name


def render_incremental(base: Fleet, head: Fleet, *, paths: frozenset[str],
                       previous_files: Mapping[str, bytes] | None, source_commit: str,
                       status: StatusSnapshot | None = None,
                       fleet_at: Callable[[str], Fleet] | None = None) -> RenderResult | None:
    """The render of `head` after `base` (whose render is `previous_files`), or None when only
    a full render is safe. `status` must be what `base` was rendered with."""
    if not previous_files or ERRORS_FILE not in previous_files:
        return None
    if base.broken_paths or head.broken_paths or base.broken_clusters or head.broken_clusters:
        return None
    if set(base.clusters) != set(head.clusters) or base.settings != head.settings:
        return None
    scope = scope_of(base, head, paths)
    if scope.everything:
        return None
    scope = _close_over_shared_templates(scope, base, head)
    units = _units(scope)
    folders = {folder for unit in units for folder in _folders(unit)}
    again = {f"clusters/{c}/{folder}" for c in head.clusters for folder in folders}
    replaced, kept, redone_paths = _kept_files(previous_files, again, set(head.clusters))
    # The units rendered again only need their own previous folders (and the claims); a state
    # read lazily from Git reads just these.
    redone = subset(previous_files, [*redone_paths, CLAIMS_FILE, ERRORS_FILE])
    result = render(scope.restrict(head), source_commit=source_commit, previous_files=redone,
                    status=status, fleet_at=fleet_at)
    changes = {p: d for p, d in result.files.items() if p not in (ERRORS_FILE, CLAIMS_FILE)}
    idents = {_ident(u) for u in units}
    old_errors, old_warnings = _previous_problems(redone[ERRORS_FILE])
    errors = sorted(set(result.errors) | {p for p in old_errors
                                         if p.unit and p.unit not in idents})
    warnings = sorted(set(result.warnings) | {p for p in old_warnings
                                             if p.unit and p.unit not in idents})
    changes[ERRORS_FILE] = errors_file(errors, warnings)
    claims = karmada_claims(head, PreviousState(redone))
    if claims:
        changes[CLAIMS_FILE] = claims_file(head, claims)
    files = overlay(previous_files, changes, [*redone_paths, *replaced, CLAIMS_FILE])
    by_name = {c.name: c for c in result.clusters}
    n_warn, n_err = problems_per_cluster(warnings), problems_per_cluster(errors)
    summaries = [ClusterSummary(c, by_name[c].descriptions + kept[c][0],
                                by_name[c].objects + kept[c][1], n_warn[c], n_err[c])
                 for c in head.clusters]
    return RenderResult(files, errors, warnings, summaries, result.variants_built)


def _kept_files(previous: Mapping[str, bytes], again: set[str], clusters: set[str]
                ) -> tuple[list[str], dict[str, list[int]], list[str]]:
    """The previous files written again in any case (cluster files), per cluster the
    Descriptions and objects among the files kept, and the files of the folders rendered again
    (one pass over the paths only: a state holds a hundred thousand files)."""
    replaced: list[str] = []
    redone: list[str] = []
    counts = {c: [0, 0] for c in clusters}
    owner: dict[str, list[int] | None] = {}  # folder -> its cluster's counts (None: not counted)
    for path in previous:
        folder, _, name = path.rpartition("/")
        if folder in again:
            redone.append(path)
            continue
        if name == CLUSTER_FILE:
            replaced.append(path)
            continue
        if path in (ERRORS_FILE, CLAIMS_FILE):
            continue
        if folder not in owner:
            parts = folder.split("/")
            owner[folder] = counts.get(parts[1]) if len(parts) == 4 and \
                parts[0] == "clusters" else None
        tally = owner[folder]
        if tally is not None:
            tally[0 if name == "description.yaml" else 1] += 1
    return replaced, counts, redone


def _units(scope: Scope) -> set[Unit]:
    return {("Subscription", ns, name) for ns, name in scope.subscriptions} | \
        set(scope.propagations)


def _ident(unit: Unit) -> str:
    kind, ns, name = unit
    return f"{kind}/{ns + '/' if ns else ''}{name}"


def _folders(unit: Unit) -> tuple[str, ...]:
    kind, ns, name = unit
    if kind == "Subscription":
        return (f"{ns}/{name}", f"{ns}/{name}@helm")
    return (f"{ns or '_cluster'}/{name}",)


def _previous_problems(raw: bytes) -> tuple[list[Problem], list[Problem]]:
    data = yamlio.load_one(raw, ERRORS_FILE) or {}
    return ([Problem.from_dict(p) for p in data.get("errors") or []],
            [Problem.from_dict(p) for p in data.get("warnings") or []])


def _template_keys(fleet: Fleet) -> dict[Unit, set[ObjectKey]]:
    """The templates each unit may deliver (what one Description could share with another)."""
    keys: dict[Unit, set[ObjectKey]] = {}
    for sub in fleet.subscriptions:
        found = (resolve_feed(f, sub.namespace, fleet.templates) for f in sub.feeds)
        keys[("Subscription", sub.namespace, sub.name)] = {t.key for t in found if t}
    for p in fleet.propagations:
        ns = None if p.cluster_scoped else p.namespace
        keys[(p.kind, p.namespace, p.name)] = {
            k for k, t in fleet.templates.items() if best_strength(p.selectors, t, ns) >= 0}
    return keys


def _close_over_shared_templates(scope: Scope, base: Fleet, head: Fleet) -> Scope:
    """Units that may deliver a template an in-scope unit delivers join the scope: who keeps an
    object claimed twice in one cluster depends on both."""
    chosen = _units(scope)
    for fleet in (base, head):
        keys = _template_keys(fleet)
        grew = True
        while grew:
            grew = False
            taken = set().union(*(keys.get(u, set()) for u in chosen))
            for unit, mine in keys.items():
                if unit not in chosen and mine & taken:
                    chosen.add(unit)
                    grew = True
    return Scope(False, frozenset((ns, name) for kind, ns, name in chosen
                                  if kind == "Subscription"),
                 frozenset(u for u in chosen if u[0] != "Subscription"))
