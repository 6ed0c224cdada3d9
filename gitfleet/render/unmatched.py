"""Selectors that match no cluster: a warning naming the selector, with a did-you-mean.

A misspelt cluster name or label value (`eu-prd`, `env: prodution`) silently deploys nowhere,
which looks exactly like a fleet that is fine. Checked: every Subscription subscriber's
clusterAffinity, Karmada placement clusterAffinity / clusterAffinities (their clusterNames and
exclude entries, and a term that selects nothing), Globalization clusterAffinity and Karmada
override targets. (A Localization outside every dedicated namespace is the loader's warning.)
A fleet without clusters yet is not warned about.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from gitfleet.model.loader import Fleet
from gitfleet.model.objects import Cluster, Origin
from gitfleet.model.problems import Problem
from gitfleet.render.selection import matches_affinity, matches_selector


def unmatched_selectors(fleet: Fleet) -> list[Problem]:
    clusters = fleet.clusters
    if not clusters:
        return []
    found: list[Problem] = []

    def warn(origin: Origin, who: str, messages: Iterator[str]) -> None:
        found.extend(Problem(origin.path, origin.line, who, m) for m in messages)

    for sub in fleet.subscriptions:
        who = f"Subscription/{sub.namespace}/{sub.name}"
        for i, subscriber in enumerate(sub.subscribers):
            warn(sub.origin, who, _label_selector(
                f"subscribers[{i}].clusterAffinity", subscriber.selector, clusters))
    for g in fleet.globalizations:
        if g.affinity is not None:
            warn(g.origin, f"Globalization/{g.name}",
                 _label_selector("clusterAffinity", g.affinity, clusters))
    for p in fleet.propagations:
        who = f"{p.kind}/{p.namespace + '/' if p.namespace else ''}{p.name}"
        placement = p.placement
        if isinstance(placement.get("clusterAffinity"), dict):
            warn(p.origin, who, _affinity("placement.clusterAffinity",
                                          placement["clusterAffinity"], clusters))
        for i, term in enumerate(placement.get("clusterAffinities") or ()):
            if isinstance(term, dict):
                warn(p.origin, who, _affinity(f"placement.clusterAffinities[{i}]", term,
                                              clusters))
    for o in fleet.karmada_overrides:
        who = f"{o.kind}/{o.namespace + '/' if o.namespace else ''}{o.name}"
        for i, (target, _) in enumerate(o.rules):
            if isinstance(target, dict):
                warn(o.origin, who, _affinity(f"overrideRules[{i}].targetCluster", target,
                                              clusters))
    return found


def _affinity(where: str, affinity: Mapping[str, Any], clusters: Mapping[str, Cluster]
              ) -> Iterator[str]:
    unknown = False
    for field in ("clusterNames", "exclude"):
        for name in affinity.get(field) or ():
            if name not in clusters:
                unknown = True
                yield f"{where}.{field}: no cluster `{name}`{_hint(str(name), clusters)}"
    if unknown or not affinity:
        return  # a term naming an unknown cluster has said what is wrong
    if not any(matches_affinity(affinity, c) for c in clusters.values()):
        hints = ""
        selector = affinity.get("labelSelector")
        if isinstance(selector, dict):
            hints = _label_hint(selector, clusters)
        yield f"{where} matches no cluster{hints}"


def _label_selector(where: str, selector: Mapping[str, Any] | None,
                    clusters: Mapping[str, Cluster]) -> Iterator[str]:
    if any(matches_selector(selector, c.labels) for c in clusters.values()):
        return
    yield f"{where} matches no cluster{_label_hint(selector or {}, clusters)}"


def _label_hint(selector: Mapping[str, Any], clusters: Mapping[str, Cluster]) -> str:
    """`; no cluster has env=prd (did you mean env=prod?)` for the first matchLabels pair
    that no cluster carries."""
    labels = [c.labels for c in clusters.values()]
    match_labels = selector.get("matchLabels")
    for key, value in (match_labels.items() if isinstance(match_labels, dict) else ()):
        wanted = f"{key}={value}"
        have = sorted({f"{k}={v}" for lab in labels for k, v in lab.items()})
        if wanted in have:
            continue
        close = difflib.get_close_matches(wanted, have, n=1, cutoff=0.6)
        mean = f" (did you mean `{close[0]}`?)" if close else ""
        return f"; no cluster has label `{wanted}`{mean}"
    return ""


def _hint(name: str, clusters: Mapping[str, Cluster]) -> str:
    close = difflib.get_close_matches(name, list(clusters), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""
