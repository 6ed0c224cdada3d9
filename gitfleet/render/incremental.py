"""Render again only what a change can affect, and keep the rest of the previous state.

A push usually touches one file of a large fleet. The Subscriptions and policies the change
cannot affect (see `scope`) have, by construction, the same output as before, so the hub renders
only the others and takes every other Description folder, and every problem of the units left
out, from the previous state. Whenever that reasoning could be unsafe — no previous state, broken
files, clusters added or removed, fleet settings changed — it declines, and the caller renders
everything. Tests compare it byte for byte with a full render.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import overload

from gitfleet.filemap import files_in, overlay, subset
from gitfleet.layout import DESCRIPTION_FILE, ERRORS_FILE
from gitfleet.model.loader import Fleet, change_between
from gitfleet.model.objects import Cluster, ObjectKey
from gitfleet.model.problems import Problem
from gitfleet.render.charts import ChartRenderer
from gitfleet.render.core import (
    CLUSTER_FILE,
    ClusterSummary,
    RenderResult,
    claims_file,
    errors_file,
    problems_per_cluster,
    render,
)
from gitfleet.render.delivery import (
    delivered_keys,
    is_undelivered,
    policies_broken,
    undelivered_warnings,
)
from gitfleet.render.lastplans import plans_for
from gitfleet.render.plans import best_strength, karmada_claims, keeps_placement, resolve_feed
from gitfleet.render.previous import CLAIMS_FILE, PreviousState
from gitfleet.render.scope import Scope, scope_of
from gitfleet.render.status import StatusSnapshot
from gitfleet.wire.errors import read_errors

Unit = tuple[str, str, str]  # kind, namespace, name


def render_incremental(base: Fleet, head: Fleet, *, paths: frozenset[str],
                       previous_files: Mapping[str, bytes] | None, source_commit: str,
                       status: StatusSnapshot | None = None,
                       fleet_at: Callable[[str], Fleet] | None = None,
                       previous_totals: tuple[int, int] | None = None,
                       charts: ChartRenderer | None = None,
                       only_clusters: Collection[str] | None = None) -> RenderResult | None:
    """The render of `head` after `base` (whose render is `previous_files`), or None when only
    a full render is safe. `status` must be what `base` was rendered with.

    `previous_totals` are the Descriptions and objects `previous_files` holds (a state
    commit's Render-Summary): with them the totals of the result are counted from the folders
    rendered again alone, and nothing outside them is listed (a state read lazily from Git
    stays unread); the per-cluster figures are then counted only when asked for.

    `only_clusters` renders only those clusters' subtrees (a hub shard's own; scheduling
    still reads the whole fleet's previous state where it needs it): the result holds the
    others as `previous_files` has them, and its figures count only these clusters."""
    if previous_files is None or ERRORS_FILE not in previous_files:
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
    only = _localized_clusters(base, head) if not scope.propagations else None
    if only_clusters is not None:
        only = set(only_clusters) if only is None else only & set(only_clusters)
    drafted = set(head.clusters) if only is None else only
    restricted = scope.restrict(head)
    # Scheduling reads the previous Descriptions of every cluster only for steady division and
    # sub-group binding; otherwise the clusters drafted are all that is read.
    read = drafted if only is not None and not keeps_placement(restricted) else head.clusters
    again = sorted({f"clusters/{c}/{folder}" for c in read for folder in folders})
    # The units rendered again only need their own previous folders (and the claims); a state
    # read lazily from Git reads just these.
    previous_paths = files_in(previous_files, again)
    redone = subset(previous_files, [*previous_paths, CLAIMS_FILE, ERRORS_FILE])
    redone_paths = previous_paths if only is None else \
        [p for p in previous_paths if p.split("/", 2)[1] in only]
    if only is not None:
        again = [f for f in again if f.split("/", 2)[1] in only]
    # every cluster file drafted is written again by the render below
    replaced = [f"clusters/{c}/{CLUSTER_FILE}" for c in sorted(drafted)]
    # scheduling of the units in scope: the last incremental render's again where it holds
    plans = plans_for(restricted, status or StatusSnapshot(), PreviousState(redone))
    result = render(restricted, source_commit=source_commit, previous_files=redone,
                    status=status, fleet_at=fleet_at, only_clusters=only, charts=charts,
                    plans=plans)
    changes = {p: d for p, d in result.files.items() if p not in (ERRORS_FILE, CLAIMS_FILE)}
    idents = {_ident(u) for u in units}
    old_errors, old_warnings = _previous_problems(redone[ERRORS_FILE])

    def kept(p: Problem) -> bool:
        """A previous problem the render above could not have made again."""
        return bool(p.unit) and (p.unit not in idents or (
            only is not None and (m := _CLUSTER_SUFFIX.search(p.message)) is not None
            and m[1] not in only))

    claims = karmada_claims(head, PreviousState(redone))
    errors = sorted(set(result.errors) | {p for p in old_errors if kept(p)})
    # what nothing delivers is a question about the whole fleet, not the units rendered again
    warnings = sorted({p for p in result.warnings if not is_undelivered(p)} |
                      {p for p in old_warnings if kept(p)} |
                      set(undelivered_warnings(head.templates, delivered_keys(head, claims),
                                               policies_broken=policies_broken(head))))
    changes[ERRORS_FILE] = errors_file(errors, warnings)
    if claims:
        changes[CLAIMS_FILE] = claims_file(head, claims)
    files = overlay(previous_files, changes, [*redone_paths, *replaced, CLAIMS_FILE])
    none = ClusterSummary("", 0, 0, 0, 0)
    by_name = {c.name: c for c in result.clusters}
    n_warn, n_err = problems_per_cluster(warnings), problems_per_cluster(errors)
    again_set = set(again)

    names = [c for c in head.clusters if only_clusters is None or c in only_clusters]

    def summaries() -> list[ClusterSummary]:
        counts = _kept_counts(previous_files, again_set, set(names))
        return [ClusterSummary(c, by_name.get(c, none).descriptions + counts[c][0],
                               by_name.get(c, none).objects + counts[c][1], n_warn[c],
                               n_err[c])
                for c in names]

    if previous_totals is None:
        return RenderResult(files, errors, warnings, summaries(), result.variants_built)
    gone_desc = sum(1 for p in redone_paths if p.endswith(_DESCRIPTION))
    totals = (previous_totals[0] - gone_desc + result.descriptions,
              previous_totals[1] - (len(redone_paths) - gone_desc) + result.objects)
    return RenderResult(files, errors, warnings,
                        LazySummaries(names, summaries),
                        result.variants_built, totals=totals)


_DESCRIPTION = "/" + DESCRIPTION_FILE
_CLUSTER_SUFFIX = re.compile(r" \(cluster ([^)]+)\)$")


def _localized_clusters(base: Fleet, head: Fleet) -> set[str] | None:
    """The clusters a change can reach when it changes nothing but Localizations (a
    Localization applies in the one cluster whose dedicated namespace holds it; scheduling
    does not read it), else None. Rendering only those clusters' Descriptions is what keeps a
    one-cluster tuning of a Subscription bound to 10,000 clusters cheap."""
    if not _same_but_localizations(base, head):
        return None
    change = change_between(base, head)
    if change is not None:      # patched from `base`: its Localizations changed are known
        moved = {ident[1] for ident, (b, h) in change.localizations.items() if b != h}
        return {name for ns in moved for name in change.namespaces.get(ns, ())}
    before = {o.ident: o for o in base.localizations}
    after = {o.ident: o for o in head.localizations}
    namespaces = {ident[1] for ident in before.keys() | after.keys()
                  if before.get(ident) != after.get(ident)}
    return {c.name for c in head.clusters.values() if c.namespace in namespaces}


def _same_but_localizations(base: Fleet, head: Fleet) -> bool:
    """Whether two fleets hold the same of everything a render reads but their Localizations
    and problems. A cluster file that did not change loads as the same object (the loader
    keeps them): only the others are compared, by content and place."""
    change = change_between(base, head)
    if change is not None:      # patched: only its clusters and Localizations may differ
        return base.broken_paths == head.broken_paths and \
            base.broken_clusters == head.broken_clusters and all(
                (b := base.clusters.get(n)) is not None and (h := head.clusters.get(n))
                is not None and (b is h or _cluster_sig(b) == _cluster_sig(h))
                for n in change.clusters)
    if base.clusters.keys() != head.clusters.keys():
        return False
    for name, b in base.clusters.items():
        h = head.clusters[name]
        if b is not h and _cluster_sig(b) != _cluster_sig(h):
            return False
    return _all_but_clusters_and_localizations(base) == \
        _all_but_clusters_and_localizations(head)


def _cluster_sig(c: Cluster) -> tuple[object, ...]:
    """A cluster by content and place (object equality leaves labels and origin out)."""
    return (c, sorted(c.labels.items()), c.origin)


def _all_but_clusters_and_localizations(fleet: Fleet) -> tuple[object, ...]:
    """Everything of a fleet a render reads, but its clusters, Localizations and problems,
    compared by content and place (object equality leaves bodies and origins out)."""
    return (
        fleet.settings, fleet.broken_paths, fleet.broken_clusters,
        {k: (t.api_version, t.digest, t.origin) for k, t in fleet.templates.items()},
        [(s, s.digest, s.origin) for s in fleet.subscriptions],
        [(g, g.digest, g.affinity, g.origin) for g in fleet.globalizations],
        [(p, p.digest, p.spec, p.origin) for p in fleet.propagations],
        [(o, o.digest, o.origin) for o in fleet.karmada_overrides],
        [(a, a.spec, a.origin) for a in fleet.autoscalers])


class LazySummaries(Sequence[ClusterSummary]):
    """Per-cluster figures of an incremental render, counted (over the whole previous state)
    only when someone asks for them; the hub asks only for their number and the totals."""

    def __init__(self, names: list[str], count: Callable[[], list[ClusterSummary]]) -> None:
        self._names = names
        self._count = count
        self._done: list[ClusterSummary] | None = None

    def __len__(self) -> int:
        return len(self._names)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    @overload
    def __getitem__(self, i: int) -> ClusterSummary: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[ClusterSummary]: ...

    def __getitem__(self, i: int | slice) -> ClusterSummary | Sequence[ClusterSummary]:
        if self._done is None:
            self._done = self._count()
        return self._done[i]


def _kept_counts(previous: Mapping[str, bytes], again: set[str], clusters: set[str]
                 ) -> dict[str, list[int]]:
    """Per cluster, the Descriptions and objects among the previous files kept (outside the
    folders rendered again): one pass over the paths only."""
    counts = {c: [0, 0] for c in clusters}
    owner: dict[str, list[int] | None] = {}  # folder -> its cluster's counts (None: not counted)
    for path in previous:
        folder, _, name = path.rpartition("/")
        if folder in again:
            continue
        if folder not in owner:
            parts = folder.split("/")
            owner[folder] = counts.get(parts[1]) if len(parts) == 4 and \
                parts[0] == "clusters" else None
        tally = owner[folder]
        if tally is not None:
            tally[0 if name == DESCRIPTION_FILE else 1] += 1
    return counts


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
    data = read_errors(raw, ERRORS_FILE)
    return [Problem.of(p) for p in data.errors], [Problem.of(p) for p in data.warnings]


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
