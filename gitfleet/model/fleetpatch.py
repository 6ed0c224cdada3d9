"""A fleet kept between loads and patched with the files a commit changed.

A hub loads the fleet at every source commit it renders. At 100,000 clusters a pass over every
cluster and Localization file (even one that finds each in the loader's caches), sorting
100,000 clusters and Localizations and the checks across the fleet cost a good part of a
one-change round, while a push changes a file or two. `FleetPatcher` keeps the last fleet it
loaded with what it was built from, and when only cluster files and files of Localizations
changed it loads those files alone and puts what they hold in place of what they held.

A patch gives the fleet a full load gives (tests/model/test_fleet_patch.py): each changed
file, before and after, is loaded on its own, and the patch is made only where that is what
the file gives inside the whole fleet. Anything a changed file could reach beyond itself makes
it a full load: fleet.yaml, the `kept` settings, templates and kustomization builds, any
policy but a Localization, an identity another file claims too, a cluster file whose name a
sibling file (`.yaml`/`.yml`) shares, more than `PATCH_LIMIT` files at once. The patched fleet
says what it changed (`Fleet.change`), so the render can ask about those alone.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

from gitfleet.model.loader import (
    FLEET_FILE,
    Fleet,
    FleetChange,
    Ident,
    KeptSettings,
    _Builder,
    _heartbeat_timing,
    build_fleet,
    reference_warnings,
    relevant,
)
from gitfleet.model.objects import Origin, OverrideSet
from gitfleet.model.problems import Problem
from gitfleet.model.settings import FleetSettings

PATCH_LIMIT = 100          # changed files a patch takes; more: a full load
_PATCHED = ("clusters/", "policies/")
Claim = tuple[str, str, str, str]


@dataclass
class _Kept:
    """The last fleet loaded and what a patch of it needs."""

    files: Mapping[str, bytes]
    kept: KeptSettings | None
    fleet: Fleet
    seen: dict[Claim, Origin]             # identity -> the file that claimed it first
    contested: set[Claim]                 # identities claimed more than once
    namespaces: dict[str, set[str]]       # dedicated namespace -> its clusters
    heartbeat_problems: list[Problem]
    references: list[Problem]             # Localizations in no cluster's namespace


def _kept(files: Mapping[str, bytes], kept: KeptSettings | None, fleet: Fleet,
          builder: _Builder) -> _Kept:
    namespaces: dict[str, set[str]] = {}
    for name, cluster in fleet.clusters.items():
        namespaces.setdefault(cluster.namespace, set()).add(name)
    return _Kept(files, kept, fleet, builder.seen, builder.contested, namespaces,
                 builder.heartbeat_problems, builder.references)


def _alone(settings: FleetSettings, path: str, data: bytes | None) -> _Builder | None:
    """What one file gives loaded on its own (an empty builder for no file), or None when it
    holds anything but a cluster or Localizations (and their problems)."""
    builder = _Builder(settings)
    if data is None:
        return builder
    if path.startswith("clusters/"):
        builder.load_cluster_file(path, data)
    else:
        builder.load_source_file(path, data, in_policies=True)
    if builder.templates or builder.rollouts or builder.crd_scopes or builder.subscriptions \
            or builder.globalizations or builder.propagations or builder.karmada_overrides \
            or builder.autoscalers:
        return None
    return builder


def _by_name(o: OverrideSet) -> tuple[str, str]:
    return (o.namespace, o.name)


class FleetPatcher:
    """Loads fleets, patching the last one where only a few cluster or Localization files
    changed (thread-safe; one kept fleet)."""

    def __init__(self) -> None:
        self._last: _Kept | None = None
        self._lock = threading.Lock()
        self.patched = 0            # loads made by a patch (tests, benches)
        self.full = 0               # full loads

    def load(self, files: Mapping[str, bytes], *, kept: KeptSettings | None = None) -> Fleet:
        """The fleet of `files` (as `gitfleet.model.loader.load_fleet`). `files` is kept as
        it is: the caller must not change it afterwards."""
        with self._lock:
            last = self._last
            if last is not None and kept == last.kept:
                patched = _patch(last, files)
                if patched is not None:
                    self._last = patched
                    self.patched += 1
                    return patched.fleet
            fleet, builder = build_fleet(files, kept=kept)
            self._last = _kept(files, kept, fleet, builder)
            self.full += 1
            return fleet

    def forget(self) -> None:
        """Drop the kept fleet (its memory)."""
        with self._lock:
            self._last = None


def _changed(old: Mapping[str, bytes], files: Mapping[str, bytes]) -> list[str] | None:
    """Paths added, changed or removed (None: more than PATCH_LIMIT): one pass of C over
    both listings (an unchanged file's bytes keep their hash from the last time)."""
    changed = {path for path, _ in files.items() ^ old.items()}
    return sorted(changed) if len(changed) <= PATCH_LIMIT else None


def _patch(last: _Kept, files: Mapping[str, bytes]) -> _Kept | None:
    """`last` patched with what changed in `files`, or None when only a full load is sure
    to give the same fleet."""
    old = last.files
    if files.get(FLEET_FILE) != old.get(FLEET_FILE):
        return None
    changed = _changed(old, files)
    if changed is None:
        return None
    paths = sorted(p for p in changed if relevant(p))
    if not paths:
        return _Kept(files, last.kept, last.fleet, last.seen, last.contested, last.namespaces,
                     last.heartbeat_problems, last.references)
    if not all(p.startswith(_PATCHED) for p in paths):
        return None
    fleet = last.fleet
    loads: list[tuple[str, _Builder, _Builder]] = []
    claimed: set[Claim] = set()
    for path in paths:
        before, after = _alone(fleet.settings, path, old.get(path)), \
            _alone(fleet.settings, path, files.get(path))
        if before is None or after is None:
            return None
        if path.startswith("clusters/"):
            stem = path[len("clusters/"):].rsplit(".", 1)[0]
            if any(p != path and (p in old or p in files)
                   for p in (f"clusters/{stem}.yaml", f"clusters/{stem}.yml")):
                return None
        for key in before.seen:
            first = last.seen.get(key)
            if key in last.contested or first is None or first.path != path:
                return None
        for key in after.seen:
            first = last.seen.get(key)
            if key in last.contested or key in claimed or (first is not None and
                                                           first.path != path):
                return None
            claimed.add(key)
        loads.append((path, before, after))
    return _apply(last, files, paths, loads)


def _apply(last: _Kept, files: Mapping[str, bytes], paths: list[str],
           loads: list[tuple[str, _Builder, _Builder]]) -> _Kept | None:
    """The patch itself, once every changed file is known to stand alone."""
    fleet = last.fleet
    changed = set(paths)
    # Localizations: out with what the files held, in with what they hold (kept sorted)
    localizations = list(fleet.localizations)
    moved: dict[Ident, list[OverrideSet | None]] = {}
    for _, before, _ in loads:
        for loc in before.localizations:
            at = bisect.bisect_left(localizations, _by_name(loc), key=_by_name)
            if at == len(localizations) or _by_name(localizations[at]) != _by_name(loc):
                return None
            moved[loc.ident] = [localizations.pop(at), None]
    for _, _, after in loads:
        for loc in after.localizations:
            bisect.insort(localizations, loc, key=_by_name)
            moved.setdefault(loc.ident, [None, None])[1] = loc
    # clusters: the changed files' out, theirs in (in name order, as a load sorts them)
    gone = {name: c for _, before, _ in loads for name, c in before.clusters.items()}
    came = {name: c for _, _, after in loads for name, c in after.clusters.items()}
    if gone or came:
        clusters = dict(fleet.clusters)
        for name in gone.keys() - came.keys():
            del clusters[name]
        clusters.update(came)
        if gone.keys() != came.keys():
            clusters = dict(sorted(clusters.items()))
    else:
        clusters = fleet.clusters
    # (from here on the kept state is changed in place: nothing may fail)
    namespaces = last.namespaces
    touched = {c.namespace for c in gone.values()} | {c.namespace for c in came.values()}
    had = {ns for ns in touched if namespaces.get(ns)}
    for name, c in gone.items():
        namespaces.get(c.namespace, set()).discard(name)
    for name, c in came.items():
        namespaces.setdefault(c.namespace, set()).add(name)
    for ns in touched:
        if not namespaces.get(ns):
            namespaces.pop(ns, None)
    dropped = {id(p) for p in last.references}
    if had != {ns for ns in touched if ns in namespaces}:
        # a namespace came or went: every Localization's reference again (a warning's
        # "did you mean" is the closest of all namespaces)
        references = reference_warnings(localizations, namespaces)
    else:
        references = [p for p in last.references if p.path not in changed]
        references += reference_warnings((loc for _, _, after in loads
                                          for loc in after.localizations), namespaces)
    heartbeat, beat_problems = fleet.heartbeat, last.heartbeat_problems
    if (gone or came) and (len(clusters) != len(fleet.clusters) or fleet.settings.status):
        heartbeat, beat_problems = _heartbeat_timing(files, fleet.settings, clusters)
    dropped_errors = {id(p) for p in last.heartbeat_problems}
    errors = [p for p in fleet.errors if p.path not in changed and id(p) not in dropped_errors]
    errors += beat_problems
    warnings = [p for p in fleet.warnings if p.path not in changed and id(p) not in dropped]
    warnings += references
    broken = set(fleet.broken_paths - changed)
    broken_clusters = set(fleet.broken_clusters)
    for _, before, after in loads:
        errors += after.errors
        warnings += after.warnings
        broken |= after.broken
        broken_clusters -= before.broken_clusters
        broken_clusters |= after.broken_clusters
    seen = last.seen
    for _, before, _ in loads:
        for key in before.seen:
            del seen[key]
    for _, _, after in loads:
        seen.update(after.seen)
    contested = last.contested | {key for _, _, after in loads for key in after.contested}
    change = FleetChange(
        base=weakref.ref(fleet), paths=frozenset(paths),
        clusters=frozenset(gone.keys() | came.keys() | {
            stem for _, before, after in loads
            for stem in before.broken_clusters | after.broken_clusters}),
        localizations={ident: (b, h) for ident, (b, h) in moved.items()},
        namespaces={ns: frozenset(namespaces.get(ns, ())) for ns in {i[1] for i in moved}})
    patched = Fleet(
        settings=fleet.settings, clusters=clusters, templates=fleet.templates,
        subscriptions=fleet.subscriptions, globalizations=fleet.globalizations,
        localizations=tuple(localizations), propagations=fleet.propagations,
        karmada_overrides=fleet.karmada_overrides, autoscalers=fleet.autoscalers,
        errors=tuple(sorted(errors)), warnings=tuple(sorted(warnings)),
        broken_paths=frozenset(broken), broken_clusters=frozenset(broken_clusters),
        rollouts=fleet.rollouts, heartbeat=heartbeat, change=change)
    return _Kept(files, last.kept, patched, seen, contested, namespaces, beat_problems,
                 references)


PATCHER = FleetPatcher()
