"""The hub publishes each cluster branch's tip as a signed document (gitfleet.wire.tips).

Why: so agents learn that their branch moved without asking Git (docs/tips.md). After each
round whose state or cluster heads changed, the `TipPublisher` reactor reads the cluster refs
once and re-issues the document of every cluster whose branch moved (signed with the hub's
state key), into a `TipBoard` the hub's listener serves with ETags and long-poll
(gitfleet.hub.tipserver), and/or as static files in a folder (`hub --tips-dir`) that any web
server, bucket or CDN can serve. Nothing is re-issued while nothing moves.

A cluster whose agent reads it (its heartbeat reports gitfleet.wire.tips.ANNOUNCED_SINCE or
later) also finds in its document the plan requests waiting for it (`plans`: the unexpired ids
under `<prefix>/plans/<cluster>/`, read from the hub's mirror after each fetch), so its agent
answers a plan within one tip poll without fetching Git every `--plan-interval`
(docs/plans.md). The documents of other clusters leave the field out, as before: an older
agent would refuse a field it does not know.

The folder is the hub's alone to write: a document is replaced atomically (a reader sees the
old or the new file, never half of one), and the only files ever removed are tip documents of
clusters that left the fleet and temporary files of a killed write, both named as gitfleet
names them.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitfleet.atomicfile import write_atomically
from gitfleet.clock import Clock
from gitfleet.hub.round import FOREVER, RoundDone
from gitfleet.hub.settings import HubSettings
from gitfleet.hub.tipsafety import SafetyChoice
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.state.git import Git
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.plans import expiry_of
from gitfleet.wire.status import HUB_WORKER_VERSION, ClusterStatus
from gitfleet.wire.tips import (
    MAX_PLANS,
    PLAN_ID,
    SAFETY_FLOOR,
    SUFFIX,
    Tip,
    TipError,
    cluster_of,
    decode,
    encode,
    file_name,
    reads_announced,
)

# only the daemon's tip server waits on events: `hub --once` never imports asyncio (nor ssl)
if TYPE_CHECKING:
    import asyncio

LOG = logging.getLogger("gitfleet.hub.tips")
TEMP_PREFIX = ".gitfleet-tip-"
PUSH_WORKER = HUB_WORKER_VERSION.partition("/")[0] + "/"


@dataclass(frozen=True)
class Published:
    """One cluster's current document, as served."""

    commit: str
    body: bytes
    etag: str          # a quoted strong ETag: the document's digest


class TipBoard:
    """The documents the listener serves, and the long-polls waiting for them to change.

    Written by the hub's round (one thread), read by the listener's event loop (another):
    a publish wakes the requests waiting on that cluster through their own loop."""

    def __init__(self) -> None:
        self._docs: dict[str, Published] = {}
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._docs)

    def get(self, cluster: str) -> Published | None:
        with self._lock:
            return self._docs.get(cluster)

    def put(self, cluster: str, doc: Published | None) -> None:
        """Publish (None: withdraw) one cluster's document; wakes its waiting requests."""
        with self._lock:
            if doc is None:
                self._docs.pop(cluster, None)
            else:
                self._docs[cluster] = doc
            waiters = self._waiters.pop(cluster, set())
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    def watch(self, cluster: str, event: asyncio.Event) -> None:
        """`event` is set (on the running loop) at the next `put` for `cluster`."""
        import asyncio

        with self._lock:
            self._waiters.setdefault(cluster, set()).add((asyncio.get_running_loop(), event))

    def unwatch(self, cluster: str, event: asyncio.Event) -> None:
        import asyncio

        with self._lock:
            waiting = self._waiters.get(cluster)
            if waiting is not None:
                waiting.discard((asyncio.get_running_loop(), event))
                if not waiting:
                    del self._waiters[cluster]


class TipFolder:
    """Tip documents as static files, `<folder>/<cluster>.json` (mode 0644)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._stamps: dict[str, float] = {}   # cluster -> the mtime of its last write
        folder.mkdir(parents=True, exist_ok=True)
        for leftover in folder.glob(TEMP_PREFIX + "*"):   # a write killed half-way
            leftover.unlink(missing_ok=True)

    def existing(self) -> dict[str, bytes]:
        """The documents already in the folder (from an earlier run), by cluster."""
        out = {}
        for path in self.folder.glob("*" + SUFFIX):
            cluster = cluster_of(path.name)
            if cluster is not None and path.is_file():
                out[cluster] = path.read_bytes()
        return out

    def write(self, cluster: str, body: bytes) -> None:
        """Replace the document so that its ETag changes on every write.

        Static servers derive ETag and Last-Modified from the modification time in whole
        seconds and the size (nginx: `"<mtime hex>-<size hex>"`), and a new tip has the size
        of the old one, so the time must move to a second of its own: one past the last
        written (kept here as well, in case the file was removed in between) or now, if that
        is later. The time is set on the temporary file before the rename, so a reader never
        sees the new bytes under the old ETag. Rewrites faster than one a second run the
        time ahead of the clock by as many seconds; nothing reads it as a clock."""
        path = self.folder / file_name(cluster)
        try:
            before = path.stat().st_mtime
        except OSError:
            before = 0.0
        last = max(before, self._stamps.get(cluster, 0.0))
        stamp = max(time.time(), math.floor(last) + 1.0)
        write_atomically(path, body, mode=0o644, prefix=TEMP_PREFIX, mtime=stamp)
        self._stamps[cluster] = stamp

    def remove(self, cluster: str, ref: str) -> None:
        """Remove a cluster's document, only if it is one (a file gitfleet wrote)."""
        path = self.folder / file_name(cluster)
        try:
            decode(path.read_bytes(), cluster=cluster, ref=ref, trusted=None)
        except (OSError, TipError):
            return
        path.unlink(missing_ok=True)


def older_agents(statuses: Mapping[str, ClusterStatus], clusters: Iterable[str]) -> int:
    """How many of `clusters` have not shown, in their last heartbeat, an agent release that
    reads `safetySeconds`: an older or unplaceable version, or no heartbeat yet (the hub waits
    for every cluster's first one rather than guess). A hub push worker's heartbeat (an
    agentless Push cluster) counts as read: nothing there polls a tip document."""
    count = 0
    for cluster in clusters:
        status = statuses.get(cluster)
        beat = status.heartbeat if status is not None else None
        version = beat.agent_version if beat is not None else ""
        if not version.startswith(PUSH_WORKER) and not reads_announced(version):
            count += 1
    return count


def plan_readers(statuses: Mapping[str, ClusterStatus], clusters: Iterable[str]) -> set[str]:
    """The clusters whose agent, by its last heartbeat, reads `plans` in its tip document."""
    out = set()
    for cluster in clusters:
        status = statuses.get(cluster)
        beat = status.heartbeat if status is not None else None
        if beat is not None and reads_announced(beat.agent_version):
            out.add(cluster)
    return out


def waiting_plans(git: Git, branches: Branches, *, now: float,
                  readers: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each of `readers`, the ids of its unexpired plan requests (the newest MAX_PLANS,
    oldest first: an id starts with its expiry); refs that are no plan id are left out."""
    head = branches.plans()
    found: dict[str, list[str]] = {cluster: [] for cluster in readers}
    for ref in git.refs(head):
        cluster, _, plan = ref[len(head):].partition("/")
        ids = found.get(cluster)
        when = expiry_of(plan) if ids is not None and PLAN_ID.fullmatch(plan) else None
        if ids is not None and when is not None and when > now:
            ids.append(plan)
    return {cluster: tuple(sorted(ids)[-MAX_PLANS:]) for cluster, ids in found.items()}


def etag_of(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


class TipPublisher:
    """The reactor: after a round that moved cluster branches, their new tip documents."""

    def __init__(self, git: Git, clock: Clock, *, key: SigningKey | None,
                 board: TipBoard | None = None, folder: TipFolder | None = None,
                 safety: SafetyChoice | None = None) -> None:
        self.git, self.clock, self.key = git, clock, key
        self.board, self.folder = board, folder
        self.safety = safety or SafetyChoice()
        self._safety = 0                           # `safetySeconds` of the published documents
        self._own = TrustedKeys.of(key) if key is not None else None
        self._seen: tuple[object, ...] | None = None
        # cluster -> (commit, plans), as published
        self._tips: dict[str, tuple[str, tuple[str, ...] | None]] = {}
        # the tips of branches in state repositories (gitfleet.state.placement): the fleet
        # repo holds only their link
        self.placed: Callable[[], Mapping[str, str]] = dict
        self._on_disk: dict[str, bytes] | None = None
        self.issued = 0                            # documents signed so far (for tests)

    def react(self, done: RoundDone) -> float:
        older = 0 if self.safety.fixed is not None else \
            older_agents(done.inputs.status.statuses, done.inputs.fleet.clusters)
        inputs = done.inputs
        readers = plan_readers(inputs.status.statuses, inputs.fleet.clusters)
        plans = waiting_plans(self.git, inputs.branches, now=self.clock.now(), readers=readers)
        seen = (done.state, inputs.heads.clusters, older, plans)
        if seen == self._seen or done.state is None:
            return FOREVER
        prefix = inputs.branches.cluster("")
        heads = {ref[len(prefix):]: sha for ref, sha in self.git.refs(prefix).items()}
        heads.update(self.placed())
        self.publish(heads, state=done.state, ref=inputs.branches.cluster, older=older,
                     plans=plans)
        fleet = inputs.fleet
        self.safety.check_status_pushes(len(heads), heartbeat=fleet.heartbeat.interval,
                                        own_repos=bool(fleet.settings.status))
        self._seen = seen
        return FOREVER

    def publish(self, heads: Mapping[str, str], *, state: str,
                ref: Callable[[str], str], older: int = 0,
                plans: Mapping[str, tuple[str, ...]] | None = None) -> None:
        """Issue a document for every cluster whose head or waiting plans (`plans`: for the
        clusters whose agent reads them; the others' documents leave the field out) differ
        from what was published; withdraw those of clusters whose branch is gone. A new
        safety interval (the fleet grew past a step, or the last `older` agent was upgraded:
        gitfleet.hub.tipsafety) re-issues every document."""
        if self.folder is not None and self._on_disk is None:
            self._on_disk = self.folder.existing()
        safety = self.safety.written(len(heads), older=older)
        if safety != self._safety:
            if self._tips:
                log(LOG, logging.INFO, "tip documents re-issued with a new safety interval",
                    clusters=len(heads), safety=f"{safety or SAFETY_FLOOR}s")
            self._tips.clear()
            self._safety = safety
        now = self.clock.now()
        moved = 0
        for cluster, commit in sorted(heads.items()):
            waiting = (plans or {}).get(cluster)
            if self._tips.get(cluster) == (commit, waiting) or \
                    cluster_of(cluster + SUFFIX) is None:
                continue
            body = self._current_on_disk(cluster, commit, waiting, ref(cluster))
            if body is None:
                tip = Tip(cluster=cluster, ref=ref(cluster), commit=commit, state=state,
                          issued_at=now, safety_seconds=safety, plans=waiting)
                body = encode(tip, self.key)
                self.issued += 1
                if self.folder is not None:
                    self.folder.write(cluster, body)
            if self.board is not None:
                self.board.put(cluster, Published(commit, body, etag_of(body)))
            self._tips[cluster] = (commit, waiting)
            moved += 1
        gone = [c for c in {*self._tips, *(self._on_disk or {})} if c not in heads]
        for cluster in gone:
            self._tips.pop(cluster, None)
            if self.board is not None:
                self.board.put(cluster, None)
            if self.folder is not None:
                self.folder.remove(cluster, ref(cluster))
        if self._on_disk:
            self._on_disk.clear()
        if moved or gone:
            log(LOG, logging.INFO, "tips published", moved=moved, withdrawn=len(gone),
                state=state[:12])

    def _current_on_disk(self, cluster: str, commit: str, plans: tuple[str, ...] | None,
                         ref: str) -> bytes | None:
        """An earlier run's document that already names `commit` (kept as it is: a restart
        rewrites nothing), else None."""
        body = (self._on_disk or {}).get(cluster)
        if body is None:
            return None
        try:
            reading = decode(body, cluster=cluster, ref=ref, trusted=None)
        except TipError:
            return None
        # by this hub's key (when it has one): a new key re-signs every document. The folder
        # is the hub's own, so the claimed signer is enough here (no verification per file).
        signer = self._own.signer(reading.signature) if self._own and reading.signature else None
        if self.key is not None and signer != self.key.fingerprint:
            return None
        tip = reading.tip
        current = (tip.commit, tip.safety_seconds, tip.plans) == (commit, self._safety, plans)
        return body if current else None


class UnservedTips:
    """The reactor of a hub that publishes no tip documents: a `tips.url` fleet.yaml announces
    to every agent is said in the log (once per URL), since those agents then find no document
    there and poll Git every interval."""

    def __init__(self) -> None:
        self._said = ""

    def react(self, done: RoundDone) -> float:
        url = done.inputs.fleet.settings.tips_url
        if url and url != self._said:
            log(LOG, logging.WARNING, "fleet.yaml announces tip documents this hub does not "
                "publish (no --serve-tips or --tips-dir): agents find none and poll Git every "
                "interval", url=url)
        self._said = url
        return FOREVER


def publisher_for(git: Git, clock: Clock, settings: HubSettings) -> TipPublisher | None:
    """The reactor the hub's settings ask for (`tips`, `tips_dir`), or None. The hub puts it
    first among its reactors: agents learn of a change before the fleet status is folded."""
    if not settings.tips and settings.tips_dir is None:
        return None
    return TipPublisher(git, clock, key=settings.signing_key,
                        board=TipBoard() if settings.tips else None,
                        folder=TipFolder(settings.tips_dir) if settings.tips_dir else None,
                        safety=SafetyChoice(fixed=settings.tips_safety,
                                            budget=settings.tips_fetch_budget))
