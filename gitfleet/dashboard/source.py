"""Where the dashboard's data comes from: a fleet repo's branches, read once per commit.

`refs_version()` fingerprints the gitfleet refs (one `for-each-ref`, trusted for a fraction of
a second); the snapshot is re-read only when it changes. The rows that depend on the clock too
(readiness judged on heartbeat age, as the hub judges it) are rebuilt when the next heartbeat
expires, so a stopped agent turns its cluster Unknown with no new commit. Rebuilds run on one
background thread, with a pause of half their length between them: requests are answered from
the newest model at once, never waiting for a re-read. History and diffs are keyed by commit
ids, which never change, and kept in a bounded cache.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gitfleet.dashboard import views
from gitfleet.dashboard.cells import Cell, Cells
from gitfleet.fleetview.rows import View
from gitfleet.fleetview.snapshot import (
    DescriptionEntry,
    FleetSnapshot,
    branch_prefix,
    read_snapshot,
)
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.state.git import Git
from gitfleet.state.statusread import StatusReader

LOG = logging.getLogger("gitfleet.dashboard")
T = TypeVar("T")
VERSION_TTL = 0.2     # seconds a ref fingerprint is trusted before `for-each-ref` runs again
MIN_GAP = 0.3         # seconds between the end of one rebuild and the start of the next
KEPT = 256            # commit-keyed results kept (history pages, diffs, cluster logs)


class NotReady(Exception):
    """No model yet: the first read is under way."""


@dataclass(frozen=True)
class Model:
    """Everything the views show at one instant: the snapshot, its rows per cluster."""

    etag: str
    view: View
    fleet: dict[str, Any]
    cells: dict[str, Cell]                          # cluster -> its kept row and tiles
    units: dict[str, list[DescriptionEntry]]        # application -> its Descriptions
    next_flip: float       # when a cluster's readiness next changes by the clock alone


class FleetSource:
    """A fleet repo read for the dashboard; thread-safe, cheap to ask again."""

    def __init__(self, git: Git, *, prefix: str | Callable[[], str] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.git = git
        self._prefix = prefix
        self.clock = clock
        self._lock = threading.Lock()
        self._refs: tuple[float, str] = (-1.0, "")
        self._stamp: tuple[int, ...] | None = None
        self._snap: tuple[str, Any] = ("", None)
        self._model: tuple[str, float, Model | None] = ("", -1.0, None)
        self._kept: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._refreshing = False
        self._next_start = 0.0             # monotonic time before which no rebuild starts
        self._error = ""                   # why the last background read failed
        self._status_reader: StatusReader | None = None
        self._ready = threading.Event()    # set once the first background read ended
        self._build = threading.Lock()     # one rebuild of the cells at a time
        self.cells = Cells()
        self._unit_index: tuple[str | None, dict[str, list[DescriptionEntry]] | None] = \
            (None, None)

    @property
    def prefix(self) -> str:
        """The branch prefix (the hub hands its own, which fleet.yaml may change)."""
        if callable(self._prefix):
            return self._prefix()
        if self._prefix is None:
            self._prefix = branch_prefix(self.git)
        return self._prefix

    @property
    def branches(self) -> Branches:
        return Branches(self.prefix)

    def refs_version(self) -> str:
        """A digest of every gitfleet branch tip and the source branch. `for-each-ref` runs
        only when a ref file or folder changed since the last call (Git moves a ref by renaming
        a new file over it, which touches its folder): a 10,000-cluster fleet's 20,000 refs are
        listed once per change, not per request."""
        now = time.monotonic()
        with self._lock:
            at, digest = self._refs
            if now - at < VERSION_TTL and digest:
                return digest
        stamp = self._ref_stamp()
        with self._lock:
            if stamp is not None and stamp == self._stamp and self._refs[1]:
                self._refs = (now, self._refs[1])
                return self._refs[1]
        out = self.git.run("for-each-ref", "--format=%(objectname) %(refname)",
                           f"refs/heads/{self.prefix}/", "refs/heads/main", "refs/heads/master")
        digest = hashlib.sha1(out).hexdigest()[:16]
        with self._lock:
            self._refs = (now, digest)
            self._stamp = stamp
        return digest

    def _ref_stamp(self) -> tuple[int, ...] | None:
        """The modification times of the ref folders and packed-refs (None: cannot tell)."""
        try:
            root = self.git.git_dir()
            stamps = []
            for path in (root / "packed-refs", root / "refs" / "heads"):
                stamps.append(path.stat().st_mtime_ns if path.exists() else 0)
            folders = [root / "refs" / "heads" / self.prefix]
            while folders:
                folder = folders.pop()
                if not folder.is_dir():
                    continue
                stamps.append(folder.stat().st_mtime_ns)
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            folders.append(Path(entry.path))
                        elif entry.name in ("main", "master"):
                            stamps.append(entry.stat().st_mtime_ns)
            for name in ("main", "master"):
                ref = root / "refs" / "heads" / name
                stamps.append(ref.stat().st_mtime_ns if ref.exists() else 0)
            return tuple(stamps)
        except OSError:
            return None

    def model(self) -> Model:
        """The current model. The first call reads it; later calls answer at once with the
        newest one built, while one background thread rebuilds it when a branch moved or a
        second has passed (readiness ages with the clock): no request waits for a re-read."""
        with self._lock:
            cached_version, at, model = self._model
        if model is None:
            if self._ready.wait(0) or not self._refreshing:
                return self.fresh()
            self._ready.wait()          # the first read is under way (`warm`): share it
            return self.model()
        due = self.refs_version() != cached_version or self.clock() >= model.next_flip
        if due and time.monotonic() >= self._next_start:
            self.warm()
        return model

    def current(self) -> Model:
        """The newest model without waiting: a server asks this, so that no request outlives
        its connection's bound while a big fleet's first read runs (NotReady meanwhile)."""
        with self._lock:
            model = self._model[2]
            error = self._error
        if model is None:
            self.warm()
            raise NotReady("reading the fleet's branches for the first time" +
                           (f" (the last try failed: {error})" if error else ""))
        return self.model()

    def warm(self) -> None:
        """Starts a rebuild on the background thread, unless one runs (a server calls this
        when it starts, so the first page does not wait for the first read)."""
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True
        threading.Thread(target=self._refresh, daemon=True,
                         name="gitfleet-dashboard-read").start()

    def fresh(self) -> Model:
        """A model built now, from the branches as they are (the export, the first request)."""
        version = self.refs_version()
        now = self.clock()
        with self._lock:
            snap_version, snap = self._snap
        if snap is None or snap_version != version:
            snap = read_snapshot(self.git, prefix=self.prefix, previous=snap,
                                 reader=self._reader())
        view = View(snap, now)
        with self._build:
            cells = self.cells.update(view)
            units = self._units(snap)
        fleet = views.fleet(view, cells, units)
        etag = hashlib.sha1(f"{version} {fleet['signature']}".encode()).hexdigest()[:16]
        model = Model(etag, view, fleet, cells, units,
                      min((c.until for c in cells.values()), default=math.inf))
        with self._lock:
            self._snap = (version, snap)
            if now >= self._model[1]:
                self._model = (version, now, model)
        return model

    def _units(self, snap: FleetSnapshot) -> dict[str, list[DescriptionEntry]]:
        """Applications -> their Descriptions, grouped once per state commit."""
        state, units = self._unit_index
        if state != snap.state_commit or units is None:
            units = views.units_of(snap.descriptions)
            self._unit_index = (snap.state_commit, units)
        return units

    def _reader(self) -> StatusReader:
        """One status reader for as long as the prefix stays (it parses each commit once)."""
        if self._status_reader is None or self._status_reader.branches != self.branches:
            self._status_reader = StatusReader(self.git, branches=self.branches)
        return self._status_reader

    def _refresh(self) -> None:
        started = time.monotonic()
        try:
            self.fresh()
        except Exception as exc:   # the page keeps the last model; the log says why
            log(LOG, logging.WARNING, "dashboard: reading the fleet failed", error=repr(exc))
            with self._lock:
                self._error = str(exc) or repr(exc)
        else:
            with self._lock:
                self._error = ""
        finally:
            ended = time.monotonic()
            with self._lock:
                self._refreshing = False
                # a big fleet's rebuild takes seconds: at most two thirds of a core go to it
                self._next_start = ended + max(MIN_GAP, (ended - started) / 2)
            self._ready.set()

    def kept(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """`compute()`'s result, kept by `key` (made of commit ids: it never goes stale)."""
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            self._kept[key] = value
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return value

