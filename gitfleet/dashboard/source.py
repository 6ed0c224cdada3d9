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
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gitfleet.dashboard import firstread, views
from gitfleet.dashboard.cells import Cell, Cells
from gitfleet.dashboard.firstread import LimitedReader
from gitfleet.fleetview.rows import View
from gitfleet.fleetview.snapshot import (
    DescriptionEntry,
    branch_prefix,
    read_snapshot,
)
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.state.git import Git
from gitfleet.state.statusread import SHARD_REFS

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
        self._listing: tuple[str, dict[str, str]] = ("", {})   # digest -> the refs it digests
        self._stamp: tuple[int, ...] | None = None
        self._snap: tuple[str, Any] = ("", None)
        self._model: tuple[str, float, Model | None] = ("", -1.0, None)
        self._kept: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._refreshing = False
        self._next_start = 0.0             # monotonic time before which no rebuild starts
        self._error = ""                   # why the last background read failed
        self._status_reader: LimitedReader | None = None
        self._ready = threading.Event()    # set once the first background read ended
        self._rebuilt = threading.Condition(self._lock)   # told when a rebuild ends
        self._build = threading.Lock()     # one read and rebuild of the cells at a time
        self.cells = Cells()
        self._unit_index: tuple[list[DescriptionEntry] | None,
                                dict[str, list[DescriptionEntry]] | None,
                                dict[str, list[str]]] = (None, None, {})

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

    def refs_version(self, *, trusted: float = VERSION_TTL) -> str:
        """A digest of every gitfleet branch tip and the source branch. `for-each-ref` runs
        only when a ref file or folder changed since the last call (Git moves a ref by renaming
        a new file over it, which touches its folder): a 10,000-cluster fleet's 20,000 refs are
        listed once per change, not per request."""
        now = time.monotonic()
        with self._lock:
            at, digest = self._refs
            if now - at < trusted and digest:
                return digest
        stamp = self._ref_stamp()
        with self._lock:
            if stamp is not None and stamp == self._stamp and self._refs[1]:
                self._refs = (now, self._refs[1])
                return self._refs[1]
        b = self.branches       # what the views read (not the 10,000 cluster branches)
        out = self.git.run("for-each-ref", "--format=%(objectname) %(refname)", b.state,
                           b.fleet_status, b.status(""), b.registration(""), SHARD_REFS,
                           "refs/heads/main", "refs/heads/master")
        digest = hashlib.sha1(out).hexdigest()[:16]
        listing = {}
        for line in out.decode().splitlines():
            sha, _, ref = line.partition(" ")
            listing[ref] = sha
        with self._lock:
            self._refs = (now, digest)
            self._stamp = stamp
            self._listing = (digest, listing)
        return digest

    def _ref_stamp(self) -> tuple[int, ...] | None:
        """The modification times of the folders of the refs `refs_version` lists, their
        files outside folders, and packed-refs (None: cannot tell). Git moves a ref by renaming
        a new file over it, which touches its folder: a stat per folder, not per ref."""
        try:
            root = self.git.git_dir()
            heads = root / "refs" / "heads"
            mine = heads / self.prefix
            paths = (root / "packed-refs", heads, mine, mine / "state", mine / "fleet-status",
                     mine / "status", mine / "registrations", heads / "main", heads / "master")
            shards = root / SHARD_REFS.rstrip("/")       # the status repositories' copies
            places = sorted(shards.iterdir()) if shards.is_dir() else []
            return tuple(p.stat().st_mtime_ns if p.exists() else 0
                         for p in (*paths, shards, *places))
        except OSError:
            return None

    def model(self, wait: float = 0.0) -> Model:
        """The current model. The first call reads it; later calls answer at once with the
        newest one built, while one background thread rebuilds it when a branch moved or a
        heartbeat expired (readiness ages with the clock): no request waits for a re-read,
        but the page's live check, which waits up to `wait` seconds for a rebuild under way
        (a status commit then reaches the page in one poll, not two)."""
        with self._lock:
            cached_version, at, model = self._model
        if model is None:
            if self._ready.wait(0) or not self._refreshing:
                return self.fresh()
            self._ready.wait()          # the first read is under way (`warm`): share it
            return self.model()
        # the live check looks at the refs' folders every time (a stat of each: cheap)
        version = self.refs_version(trusted=0.0 if wait > 0 else VERSION_TTL)
        due = version != cached_version or self.clock() >= model.next_flip
        if due and time.monotonic() >= self._next_start:
            self.warm()
        if due and wait > 0:
            with self._rebuilt:
                self._rebuilt.wait_for(lambda: not self._refreshing, timeout=wait)
                return self._model[2] or model
        return model

    def current(self, wait: float = 0.0) -> Model:
        """The newest model without waiting for the first read: a server asks this, so that no
        request outlives its connection's bound while a big fleet's first read runs (NotReady
        meanwhile); `wait` as `model`'s."""
        with self._lock:
            model = self._model[2]
            error = self._error
        if model is None:
            self.warm()
            raise NotReady("reading the fleet's branches for the first time" +
                           (f" (the last try failed: {error})" if error else ""))
        return self.model(wait)

    def warm(self) -> None:
        """Starts a rebuild on the background thread, unless one runs (a server calls this
        when it starts, so the first page does not wait for the first read)."""
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True
        threading.Thread(target=self._refresh, daemon=True,
                         name="gitfleet-dashboard-read").start()

    def fresh(self, only: frozenset[str] | None = None, of: int = 0) -> Model:
        """A model built now, from the branches as they are (the export, the first request);
        with `only`, of those clusters alone (a step of the first read: `of` clusters in all)."""
        with self._build:      # one read at a time: they share the reader and the cells
            version = self.refs_version()
            now = self.clock()
            with self._lock:
                snap_version, snap = self._snap
            if snap is None or snap_version != version or snap.only != only:
                reader = self._reader()
                reader.only = only
                with self._lock:
                    listed, refs = self._listing
                reader.listing = refs if listed == version else None
                snap = read_snapshot(self.git, prefix=self.prefix, previous=snap,
                                     reader=reader, only=only)
            view = View(snap, now)
            cells = self.cells.update(view)
            totals = self.cells.totals.snapshot()
            units, errors = self._units(view)
        fleet = views.fleet(view, cells, units, totals, errors)
        fleet["partial"] = {"read": len(only), "of": of} if only is not None else None
        etag = hashlib.sha1(f"{version} {fleet['signature']} {fleet['partial']}".encode()
                            ).hexdigest()[:16]
        model = Model(etag, view, fleet, cells, units,
                      min((c.until for c in cells.values()), default=math.inf))
        with self._lock:
            self._snap = (version, snap)
            if now >= self._model[1]:
                self._model = (version, now, model)
        return model

    def _units(self, view: View) -> tuple[dict[str, list[DescriptionEntry]],
                                          dict[str, list[str]]]:
        """Applications -> their Descriptions, and their render errors, found once per read
        of the state."""
        snap = view.snap
        grouped, units, errors = self._unit_index
        if grouped is not snap.descriptions or units is None:
            units = views.units_of(snap.descriptions)
            errors = {key: views.unit_errors(view, key, ds) for key, ds in units.items()}
            self._unit_index = (snap.descriptions, units, errors)
        return units, errors

    def _reader(self) -> LimitedReader:
        """One status reader for as long as the prefix stays (it parses each commit once)."""
        if self._status_reader is None or self._status_reader.branches != self.branches:
            self._status_reader = LimitedReader(self.git, branches=self.branches)
        return self._status_reader

    def _first_read(self) -> None:
        """The first read in growing steps (gitfleet.dashboard.firstread), each published."""
        reader = self._reader()
        version = self.refs_version()
        with self._lock:
            listed, refs = self._listing
        reader.listing = refs if listed == version else None
        names = firstread.cluster_names(self.git, self.branches, reader)
        for only in firstread.steps(names):
            self.fresh(only, len(names))
        self.fresh()

    def _refresh(self) -> None:
        started = time.monotonic()
        first = self._model[2] is None
        try:
            self._first_read() if first else self.fresh()
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
                self._rebuilt.notify_all()
                # a rebuild that takes long leaves as long again (up to 2/3 of a core to it);
                # the first read (every status parsed) is no measure of the rebuilds after it
                self._next_start = ended + (MIN_GAP if first else
                                            max(MIN_GAP, (ended - started) / 2))
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

