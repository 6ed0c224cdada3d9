"""Which overrides apply to one template in one cluster, and in which order.

Clusternet: every matching Globalization by priority ascending, then every Localization of the
cluster's dedicated namespace by priority ascending (replica division sits among them as a
Localization of priority 1000, upstream's, that sorts last among equals: the split is above
every user override); equal priorities by name. Karmada:
cluster-wide policies before namespaced ones, each by match strength ascending, then by name;
rules in list order. Later wins, and Karmada comes after Clusternet.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitfleet.model.loader import Fleet
from gitfleet.model.objects import Cluster, KarmadaOverride, ObjectKey, OverrideSet, Template
from gitfleet.model.problems import Problem
from gitfleet.render.plans import best_strength, resolve_feed
from gitfleet.render.selection import matches_affinity, matches_selector
from gitfleet.render.variants import ClusternetStep, KarmadaStep, SetReplicas, Step

DIVISION_PRIORITY = 1000


@dataclass(frozen=True)
class ClusternetChoice:
    """The override sets in force for one (Description, template), and the pending ones."""

    sets: tuple[OverrideSet, ...]
    deferred: frozenset[tuple[str, str, str]]


class Overlay:
    """Indexes of a fleet's overrides by the template they target."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.problems: list[Problem] = []
        self._globals: dict[ObjectKey, list[OverrideSet]] = {}
        self._locals: dict[tuple[str, ObjectKey], list[OverrideSet]] = {}
        self._karmada: dict[ObjectKey, list[KarmadaOverride]] = {}
        for g in fleet.globalizations:
            t = resolve_feed(g.feed, "default", fleet.templates)
            if t is None:
                self._missing(g)
            else:
                self._globals.setdefault(t.key, []).append(g)
        for loc in fleet.localizations:
            t = resolve_feed(loc.feed, "default", fleet.templates)
            if t is None:
                self._missing(loc)
            else:
                self._locals.setdefault((loc.namespace, t.key), []).append(loc)
        self._selective = [g for gs in self._globals.values() for g in gs
                           if g.affinity is not None]
        self._local_namespaces = {ns for ns, _ in self._locals}
        self._rule_targets = [target for p in fleet.karmada_overrides
                              for target, _ in p.rules if target is not None]

    def _missing(self, oset: OverrideSet) -> None:
        f = oset.feed
        who = f"{oset.kind}/{oset.namespace + '/' if oset.namespace else ''}{oset.name}"
        self.problems.append(Problem(
            oset.origin.path, oset.origin.line, who,
            f"feed {f.api_version} {f.kind} {f.namespace + '/' if f.namespace else ''}{f.name} "
            "matches no template; this override has no effect"))

    def clusternet_sets(self, template: Template, cluster: Cluster) -> list[OverrideSet]:
        found = [g for g in self._globals.get(template.key, ())
                 if g.affinity is None or matches_selector(g.affinity, cluster.labels)]
        found.extend(self._locals.get((cluster.namespace, template.key), ()))
        return found

    def signature(self, cluster: Cluster) -> tuple[object, ...]:
        """All that the overrides see of `cluster`: which Globalizations' affinities and which
        Karmada override rules' targets it matches, and its namespace when Localizations
        live there. Two clusters with one signature get the same override sets and steps for
        every template (`clusternet_sets`, `ordered_steps`)."""
        return (tuple(matches_selector(g.affinity, cluster.labels) for g in self._selective),
                tuple(matches_affinity(t, cluster) for t in self._rule_targets),
                cluster.namespace if cluster.namespace in self._local_namespaces else None)

    def karmada_policies(self, template: Template) -> list[KarmadaOverride]:
        cached = self._karmada.get(template.key)
        if cached is None:
            scored = []
            for p in self.fleet.karmada_overrides:
                ns = None if p.cluster_scoped else p.namespace
                if p.selectors:
                    strength = best_strength(p.selectors, template, ns)
                elif ns is None or template.namespace == ns:
                    strength = 0
                else:
                    strength = -1
                if strength >= 0:
                    scored.append((not p.cluster_scoped, strength, p.name, p))
            scored.sort(key=lambda s: s[:3])
            cached = self._karmada[template.key] = [s[3] for s in scored]
        return cached


def choose_clusternet(now: list[OverrideSet], basis: list[OverrideSet] | None
                      ) -> ClusternetChoice:
    """ApplyNow sets as they are now; ApplyLater ones as they were at the basis (if any)."""
    if basis is None:
        return ClusternetChoice(tuple(now), frozenset())
    chosen: dict[tuple[str, str, str], OverrideSet] = {}
    deferred: set[tuple[str, str, str]] = set()
    basis_by = {b.ident: b for b in basis if b.apply_later}
    for s in now:
        if not s.apply_later:
            chosen[s.ident] = s
        else:
            b = basis_by.get(s.ident)
            if b is None or b.digest != s.digest:
                deferred.add(s.ident)
    now_ids = {s.ident for s in now}
    for ident, b in basis_by.items():
        if ident in chosen:
            continue
        chosen[ident] = b
        if ident not in now_ids:
            deferred.add(ident)
    return ClusternetChoice(tuple(chosen.values()), frozenset(deferred))


def ordered_steps(sets: tuple[OverrideSet, ...], division: SetReplicas | None,
                  karmada: list[KarmadaOverride], cluster: Cluster,
                  *, replicas_first: bool) -> list[Step]:
    steps: list[Step] = []
    if division is not None and replicas_first:
        steps.append(division)
    globs = sorted((s for s in sets if s.kind == "Globalization"),
                   key=lambda s: (s.priority, s.name))
    steps.extend(ClusternetStep(g) for g in globs)
    locs: list[tuple[int, bool, str, Step]] = [(s.priority, False, s.name, ClusternetStep(s))
                                               for s in sets if s.kind == "Localization"]
    if division is not None and not replicas_first:
        locs.append((DIVISION_PRIORITY, True, "", division))
    locs.sort(key=lambda x: (x[0], x[1], x[2]))
    steps.extend(x[3] for x in locs)
    for policy in karmada:
        for i, (target, _) in enumerate(policy.rules):
            if target is None or matches_affinity(target, cluster):
                steps.append(KarmadaStep(policy, i))
    return steps
