"""What a change of the fleet repo can affect: the Subscriptions and policies to render again.

A pull request usually touches one file of a large fleet. Rendering every Subscription for every
cluster twice would take seconds; the units whose output cannot change are left out of both
renders instead. A unit can change when its own object changed, a template it feeds changed, an
override on one of its templates changed, or a cluster it is (or becomes) bound to changed.
Karmada propagation policies compete for templates (claims), so a policy is kept together with
every policy that selects a template it selects. A change to `fleet.yaml` affects everything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gitfleet.model.loader import FLEET_FILE, Fleet, change_between
from gitfleet.model.objects import (
    Cluster,
    Feed,
    KarmadaOverride,
    ObjectKey,
    OverrideSet,
    Propagation,
    Subscription,
    Template,
)
from gitfleet.render.plans import UnitPlan, best_strength, plan_all, resolve_feed
from gitfleet.render.previous import PreviousState
from gitfleet.render.selection import karmada_candidates, subscription_weights
from gitfleet.render.status import StatusSnapshot


@dataclass(frozen=True)
class Scope:
    """The units to render: Subscriptions by (namespace, name), and whether Karmada's policies."""

    everything: bool
    subscriptions: frozenset[tuple[str, str]]
    propagations: frozenset[tuple[str, str, str]]  # (kind, namespace, name)

    def restrict(self, fleet: Fleet) -> Fleet:
        """`fleet` with only the units in scope (templates, overrides and clusters untouched)."""
        if self.everything:
            return fleet
        subs = tuple(s for s in fleet.subscriptions
                     if (s.namespace, s.name) in self.subscriptions)
        props = tuple(p for p in fleet.propagations
                      if (p.kind, p.namespace, p.name) in self.propagations)
        return dataclasses.replace(fleet, subscriptions=subs, propagations=props)


def changed_paths(base: Mapping[str, bytes], head: Mapping[str, bytes]) -> frozenset[str]:
    """Fleet files added, removed or modified between two snapshots."""
    return frozenset(p for p in set(base) | set(head) if base.get(p) != head.get(p))


def _cluster_sig(c: Cluster) -> tuple[object, ...]:
    return (c, tuple(sorted(c.labels.items())))


def _changed_clusters(base: Fleet, head: Fleet) -> dict[str, Cluster]:
    """Clusters that differ (in either fleet), with the version of the fleet that has them.
    A fleet patched from `base` names the clusters its changed files held (the others are
    the very same objects)."""
    out: dict[str, Cluster] = {}
    change = change_between(base, head)
    names = change.clusters if change is not None else base.clusters.keys() | head.clusters.keys()
    for name in names:
        b, h = base.clusters.get(name), head.clusters.get(name)
        if b is h:        # an unchanged file loads as the same object (gitfleet.model.loader)
            continue
        if b is None or h is None or _cluster_sig(b) != _cluster_sig(h):
            out[name] = h or b  # type: ignore[assignment]
    broken = base.broken_clusters | head.broken_clusters
    for name in broken:
        c = base.clusters.get(name) or head.clusters.get(name)
        if c is not None:
            out[name] = c
    return out


def _changed_templates(base: Fleet, head: Fleet) -> set[ObjectKey]:
    keys = set(base.templates) | set(head.templates)
    return {k for k in keys if (base.templates.get(k) is None) != (head.templates.get(k) is None)
            or _template_sig(base.templates.get(k)) != _template_sig(head.templates.get(k))}


def _template_sig(t: Template | None) -> tuple[object, ...] | None:
    return None if t is None else (t.api_version, t.digest, t.origin.path)


def _override_sig(o: OverrideSet) -> tuple[object, ...]:
    return (o.digest, o.priority, o.apply_later, o.feed, o.origin.path)


def _changed_override_targets(base: Fleet, head: Fleet) -> set[ObjectKey]:
    """Template keys whose Globalizations or Localizations changed."""
    def index(fleet: Fleet) -> dict[tuple[str, str, str], OverrideSet]:
        return {o.ident: o for o in (*fleet.globalizations, *fleet.localizations)}

    change = change_between(base, head)    # (its Globalizations are the base's)
    pairs = change.localizations.items() if change is not None else \
        ((ident, (b.get(ident), h.get(ident)))
         for b, h in [(index(base), index(head))] for ident in b.keys() | h.keys())
    targets: set[ObjectKey] = set()
    for _, (ob, oh) in pairs:
        if ob is not None and oh is not None and _override_sig(ob) == _override_sig(oh):
            continue
        for fleet, o in ((base, ob), (head, oh)):
            if o is None:
                continue
            t = resolve_feed(o.feed, "default", fleet.templates)
            targets.add(t.key if t is not None else o.feed.key)
    return targets


def _feeds_any(sub: Subscription, keys: Iterable[ObjectKey]) -> bool:
    return any(_feed_matches(f, sub.namespace, k) for f in sub.feeds for k in keys)


def _feed_matches(feed: Feed, sub_namespace: str, key: ObjectKey) -> bool:
    fk = feed.key
    if (fk.group, fk.kind, fk.name) != (key.group, key.kind, key.name):
        return False
    return key.namespace in ({feed.namespace} if feed.namespace else {"", sub_namespace})


def scope_of(base: Fleet, head: Fleet, paths: frozenset[str]) -> Scope:
    """The units that the change from `base` to `head` (touching `paths`) can affect."""
    if FLEET_FILE in paths or base.settings != head.settings:
        return Scope(True, frozenset(), frozenset())
    clusters = _changed_clusters(base, head)
    templates = _changed_templates(base, head)
    targets = templates | _changed_override_targets(base, head) | \
        _changed_karmada_override_targets(base, head)
    subs: set[tuple[str, str]] = set()
    b_subs = {(s.namespace, s.name): s for s in base.subscriptions}
    h_subs = {(s.namespace, s.name): s for s in head.subscriptions}
    for ident in set(b_subs) | set(h_subs):
        sb, sh = b_subs.get(ident), h_subs.get(ident)
        if sb is None or sh is None or sb.digest != sh.digest or \
                sb.origin.path != sh.origin.path or sb.origin.path in paths:
            subs.add(ident)
            continue
        if _feeds_any(sb, targets) or _feeds_any(sh, targets):
            subs.add(ident)
            continue
        if clusters and (subscription_weights(sb, _only(clusters, base), {})
                         or subscription_weights(sh, _only(clusters, head), {})):
            subs.add(ident)
    props = _propagations_in_scope(base, head, clusters, targets)
    props |= {_pid(p) for fleet in (base, head) for p in fleet.propagations
              if p.origin.path in paths}  # its file changed: its lines may have moved
    return Scope(False, frozenset(subs), frozenset(props))


def only_clusters_changed(paths: frozenset[str]) -> bool:
    return bool(paths) and all(p.startswith("clusters/") for p in paths)


def fresh_plans(fleet: Fleet) -> tuple[list[UnitPlan], dict[ObjectKey, Propagation]]:
    """Scheduling of `fleet` rendered with no previous state (as BASE is in a diff)."""
    return plan_all(fleet, StatusSnapshot(), PreviousState(None))


def clusters_in_scope(base: Fleet, head: Fleet, base_plans: list[UnitPlan],
                      head_plans: list[UnitPlan]) -> frozenset[str]:
    """For a change of cluster files only: the clusters whose output can change (those
    changed, and those whose placements move, e.g. replicas divided again)."""
    placements = [_placements(base_plans), _placements(head_plans)]
    moved = {c for key in set(placements[0]) | set(placements[1])
             for c in _differing(placements[0].get(key, {}), placements[1].get(key, {}))}
    return frozenset(_changed_clusters(base, head)) | frozenset(moved)


def _placements(plans: list[UnitPlan]) -> dict[tuple[str, str], dict[str, object]]:
    return {(p.ident, p.folder): {c: tuple((pl.template.key, pl.template.digest, pl.replicas)
                                           for pl in ps) for c, ps in p.clusters.items()}
            for p in plans}


def _differing(a: Mapping[str, object], b: Mapping[str, object]) -> set[str]:
    return {c for c in set(a) | set(b) if a.get(c) != b.get(c)}


def _only(changed: Mapping[str, Cluster], fleet: Fleet) -> dict[str, Cluster]:
    return {n: fleet.clusters[n] for n in changed if n in fleet.clusters}


PolicyId = tuple[str, str, str]


def _pid(p: Propagation) -> PolicyId:
    return (p.kind, p.namespace, p.name)


def _selects(p: Propagation, t: Template) -> bool:
    return best_strength(p.selectors, t, None if p.cluster_scoped else p.namespace) >= 0


def _may_place_on(p: Propagation, changed: Mapping[str, Cluster]) -> bool:
    placement = p.placement
    if placement.get("clusterAffinities") or placement.get("spreadConstraints"):
        return True  # fallbacks and spreading depend on the whole set of clusters
    return bool(karmada_candidates(placement, changed, {})[0])


def _propagations_in_scope(base: Fleet, head: Fleet, clusters: Mapping[str, Cluster],
                           targets: set[ObjectKey]) -> set[PolicyId]:
    """Propagation policies the change can affect, closed over competition for templates."""
    chosen: set[PolicyId] = set()
    for fleet, other in ((base, head), (head, base)):
        others = {_pid(p): p for p in other.propagations}
        for p in fleet.propagations:
            q = others.get(_pid(p))
            changed = q is None or (p.digest, p.priority, p.origin.path) != \
                (q.digest, q.priority, q.origin.path)
            placed = bool(clusters) and _may_place_on(p, _only(clusters, fleet))
            if changed or placed or any(_selects(p, fleet.templates[k])
                                        for k in targets if k in fleet.templates):
                chosen.add(_pid(p))
    for fleet in (base, head):
        selected: dict[PolicyId, set[ObjectKey]] = {
            _pid(p): {k for k, t in fleet.templates.items() if _selects(p, t)}
            for p in fleet.propagations}
        grew = True
        while grew:
            grew = False
            claimed = set().union(*(selected.get(c, set()) for c in chosen))
            for pid, keys in selected.items():
                if pid not in chosen and keys & claimed:
                    chosen.add(pid)
                    grew = True
    return chosen


def _changed_karmada_override_targets(base: Fleet, head: Fleet) -> set[ObjectKey]:
    """Templates selected (in either fleet) by a Karmada override policy that changed."""
    def index(fleet: Fleet) -> dict[tuple[str, str, str], KarmadaOverride]:
        return {(o.kind, o.namespace, o.name): o for o in fleet.karmada_overrides}

    b, h = index(base), index(head)
    targets: set[ObjectKey] = set()
    for ident in set(b) | set(h):
        ob, oh = b.get(ident), h.get(ident)
        if ob is not None and oh is not None and \
                (ob.digest, ob.origin.path) == (oh.digest, oh.origin.path):
            continue
        for fleet, o in ((base, ob), (head, oh)):
            if o is None:
                continue
            ns = None if o.cluster_scoped else o.namespace
            for key, t in fleet.templates.items():
                if o.selectors:
                    hit = best_strength(o.selectors, t, ns) >= 0
                else:
                    hit = ns is None or t.namespace == ns
                if hit:
                    targets.add(key)
    return targets
