"""Writing `gitfleet/status/<cluster>`: one commit per change, heartbeats folded in place.

The agent is the branch's only writer, so it keeps the tip it last pushed and pushes with that
tip as the lease; a lost lease (someone else moved it) means re-read and retry. A heartbeat-only
status replaces a heartbeat-only tip (the new commit takes the tip's parents), so quiet time does
not grow history; every other change appends (see `statusmessage`). `metrics.yaml` (the
autoscaling report, gitfleet.agent.metrics) rides along: a change of it alone is written as a
heartbeat, so it replaces a heartbeat-only tip too.

With a signing key (`gitfleet.agent.signer`) every commit is signed by the agent's `Git`. A tip
this agent did not sign (someone else wrote into its branch) is never read as its own last
status: the agent starts afresh on top of it, and the hub, which folds only commits signed by
the cluster's key, ignores it as well.

A move (`move_to`, the cluster's status repository changed) first leaves a **link** in the
fleet repo's branch (the agent's home, where every agent starts reading): a commit with the
status being written and the trailer `Gitfleet-Status-Moved-To: <url>`; only then is the new
place written. A `load` at home follows the link, so a restarted agent reads the newest status
(and the applied cluster commit in it) wherever the status moved, and a crash between the link
and the new place's first write is carried on from the link.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gitfleet import yamlio
from gitfleet.agent.statusmessage import HEARTBEAT_TRAILER, Message, Write, decide, describe
from gitfleet.errors import InputError, RefConflict, TransientError
from gitfleet.layout import METRICS_FILE, STATUS_FILE, STATUS_MOVED_TRAILER, Branches
from gitfleet.logs import log
from gitfleet.state.git import Git, RefUpdate, RemoteRefMissing
from gitfleet.state.objects import trailers_of
from gitfleet.state.signing import TrustedKeys, verify_commit_body
from gitfleet.state.urls import redact
from gitfleet.wire.status import ClusterStatus

LOG = logging.getLogger("gitfleet.agent.status")
MOVED_TRAILER = STATUS_MOVED_TRAILER
_OWN_RECORD_DEPTH = 50     # commits looked through under a tip this agent did not sign


@dataclass(frozen=True)
class _Place:
    """Where the status branch was before a move, and what it held."""

    url: str
    tip: str | None
    status: ClusterStatus | None
    metrics: bytes | None


class StatusBranch:
    def __init__(self, git: Git, url: str, branches: Branches, cluster: str) -> None:
        self.git = git
        self.url = url
        self.home = url        # the fleet repo: where a load starts and a move leaves its link
        self.cluster = cluster
        self.remote_ref = branches.status(cluster)
        self.local_ref = "refs/remotes/origin/" + self.remote_ref.removeprefix("refs/heads/")
        self.tip: str | None = None
        self.tip_parents: list[str] | None = None
        self.tip_heartbeat_only = False
        self.status: ClusterStatus | None = None
        self.metrics: bytes | None = None  # metrics.yaml at the tip
        self.loaded = False
        self._moved_from: _Place | None = None     # the place left, until the first write
        self._carry: str | None = None             # the old place's tip, as the new parent
        self._link_to: str | None = None           # a move's link, to leave at home first
        # the applied cluster commits of every place the last `load` read (the link's too,
        # when the place it names could not be reached): what a replay is judged against
        self.records: list[str] = []
        self._kept_record = ""    # under a foreign tip: the newest own commit's applied one

    def load(self) -> ClusterStatus | None:
        """Fetch the branch and read its tip (None when it does not exist yet). At home, a
        tip that links to the place the status moved to is followed: the newer of both wins."""
        target = self._read()
        found = self._record()
        if target is not None and self._moved_from is None and self.url == self.home:
            log(LOG, logging.INFO, "status branch lives elsewhere; following the link",
                cluster=self.cluster, to=redact(target))
            self._moved_from = _Place(self.url, self.tip, self.status, self.metrics)
            self.url = target
            try:
                self._read()
            except TransientError:
                self.records = found     # judge by the link's record; the next load goes on
                raise
            found += self._record()
        self.records = found
        self.loaded = True
        self._settle_move()
        return self.status

    def _read(self) -> str | None:
        """Read the tip of the branch at `self.url`; the place its link names, if any."""
        try:
            self.git.fetch(self.url, [f"+{self.remote_ref}:{self.local_ref}"])
            tip = self.git.resolve(self.local_ref)
        except RemoteRefMissing:
            tip = None
        self.tip = tip
        self.tip_parents = None
        self.status = None
        self.tip_heartbeat_only = False
        self.metrics = None
        self._carry = None
        self._kept_record = ""
        if tip is None:
            return None
        if not self._signed_by_us(tip):
            self._kept_record = self._own_record(tip)
            return None
        self.metrics = self.git.read_blob(tip, METRICS_FILE)
        raw = self.git.read_blob(tip, STATUS_FILE)
        if raw is not None:
            try:
                self.status = ClusterStatus.from_yaml(raw, STATUS_FILE)
            except InputError as exc:
                log(LOG, logging.WARNING, "unreadable status file, starting afresh",
                    error=str(exc))
        self.tip_heartbeat_only = self._heartbeat_only(tip)
        target = self._trailers(tip).get(MOVED_TRAILER, "")
        return target if target and target != self.url else None

    def _record(self) -> list[str]:
        """The applied cluster commit of the status just read, if any."""
        if self.status is not None and self.status.sync.cluster_commit:
            return [self.status.sync.cluster_commit]
        return [self._kept_record] if self._kept_record else []

    def _own_record(self, tip: str) -> str:
        """Under a tip someone else wrote: the applied cluster commit of this agent's newest
        own commit among the last few (first parents), so a commit pushed on top does not
        wipe what a replay is judged against. The status itself starts afresh."""
        key = self.git.signer
        if key is None:
            return ""
        older = self.git.run("rev-list", "--first-parent", f"--max-count={_OWN_RECORD_DEPTH}",
                             tip).decode().split()[1:]
        bodies = self.git.read_objects(older)
        trusted = TrustedKeys.of(key)
        for sha in older:
            if verify_commit_body(bodies.get(sha, b""), trusted).ok:
                raw = self.git.read_blob(sha, STATUS_FILE)
                try:
                    return ClusterStatus.from_yaml(raw, STATUS_FILE).sync.cluster_commit \
                        if raw else ""
                except InputError:
                    return ""
        return ""

    def move_to(self, url: str) -> None:
        """Push to `url` from now on (the cluster's status repository changed); the next
        `load` or `write` reads the new place and carries the newer status on."""
        if url == self.url:
            return
        if not self.loaded:
            self.load()              # what the old place holds travels (TransientError: later)
            if url == self.url:
                return
        if self._moved_from is None:
            self._moved_from = _Place(self.url, self.tip, self.status, self.metrics)
        self._link_to = None if url == self.home else url
        log(LOG, logging.INFO, "status branch moves", cluster=self.cluster,
            to=redact(url), was=redact(self.url))
        self.url = url
        self.loaded = False

    @property
    def moving(self) -> bool:
        """A move is under way: the next write goes to the new place even if nothing changed."""
        return self._moved_from is not None

    def _settle_move(self) -> None:
        """After loading the new place: keep the newer of both tips' status."""
        old = self._moved_from
        if old is None:
            return
        if old.tip is None or old.tip == self.tip:
            self._moved_from = None        # nothing to carry over
            return
        if self.tip is not None and self._time(self.tip) >= self._time(old.tip):
            self._moved_from = None        # the new place is newer (a restarted agent)
            return
        self.status, self.metrics = old.status, old.metrics
        self.tip_heartbeat_only = False
        if self.tip is None:
            self._carry = old.tip          # its history travels to the new place

    def _time(self, commit: str) -> int:
        out = self.git.run("show", "-s", "--format=%ct", commit).decode().strip()
        return int(out) if out.isdigit() else 0

    def _signed_by_us(self, commit: str) -> bool:
        """Whether `commit` carries this agent's signature (True when it signs nothing)."""
        key = self.git.signer
        if key is None:
            return True
        body = self.git.read_objects([commit]).get(commit, b"")
        verdict = verify_commit_body(body, TrustedKeys.of(key))
        if not verdict.ok:
            log(LOG, logging.WARNING, "status branch tip not signed by this agent; starting "
                "afresh on top of it", cluster=self.cluster, commit=commit[:12],
                reason=verdict.reason)
        return verdict.ok

    def _trailers(self, commit: str) -> dict[str, str]:
        return trailers_of(self.git.run("cat-file", "commit", commit))

    def _heartbeat_only(self, commit: str) -> bool:
        return self._trailers(commit).get(HEARTBEAT_TRAILER) == "true"

    def _parents(self, commit: str) -> list[str]:
        out = self.git.run("rev-list", "--parents", "-n", "1", commit).decode().split()
        return out[1:]

    def write(self, status: ClusterStatus, *, when: float, extra: Sequence[str] = (),
              rebase: Callable[[ClusterStatus | None], ClusterStatus] | None = None,
              metrics: bytes | None = None) -> Write:
        """Commit and push `status` if it differs from the tip. TransientError when offline.

        `rebase`, for a branch with two writers (an agent's heartbeat and the hub's push
        worker's sync, see `gitfleet.hub.pushworkers`): the status to write over the tip found
        after a lost lease, so that neither writer undoes the other's part.
        `metrics`: the new `metrics.yaml` (None: keep the tip's; b"": remove it)."""
        if not self.loaded:
            self.load()
        if self._link_to is not None:
            self._leave_link(self._link_to, status, when=when, metrics=metrics)
        if self._moved_from is not None:
            extra = [*extra, f"Status moved here from {redact(self._moved_from.url)}."]
        try:
            return self._write(status, when=when, extra=extra, metrics=metrics)
        except RefConflict:
            log(LOG, logging.INFO if rebase else logging.WARNING,
                "status branch moved under us; re-reading", cluster=self.cluster)
            self.load()
            if rebase is not None:
                status = rebase(self.status)
            return self._write(status, when=when, extra=extra, metrics=metrics)

    def _leave_link(self, target: str, status: ClusterStatus, *, when: float,
                    metrics: bytes | None) -> None:
        """Before the first write at `target`: the home branch's tip says the status moved
        there, and holds `status` (the newest record, with its applied cluster commit) so a
        crash before that write loses nothing. Appended with the home tip as the lease."""
        local = "refs/gitfleet-home/" + self.remote_ref.removeprefix("refs/heads/")
        for attempt in (1, 2):
            try:
                self.git.fetch(self.home, [f"+{self.remote_ref}:{local}"])
                tip = self.git.resolve(local)
            except RemoteRefMissing:
                tip = None
            if tip is not None and self._signed_by_us(tip) and \
                    self._trailers(tip).get(MOVED_TRAILER) == target:
                break                            # left already (a retry, or the other writer)
            files = {STATUS_FILE: yamlio.dump(status.to_dict()).encode()}
            kept = metrics if metrics is not None else self.metrics
            if kept:
                files[METRICS_FILE] = kept
            state = status.sync.state_commit
            trailers = ([f"State-Commit: {state}"] if state else []) + \
                [f"{MOVED_TRAILER}: {target}"]
            text = (f"{self.cluster}: status moved\n\nStatus moved to {redact(target)}.\n\n"
                    + "\n".join(trailers) + "\n")
            # a second before the new place's first write: readers that take the newer of
            # two places by commit time (a restarted agent, the hub) then pick the new place
            commit = self.git.commit(self.git.write_tree(files), [tip] if tip else [], text,
                                     when=when - 1)
            try:
                self.git.push(self.home, [RefUpdate(self.remote_ref, commit, tip)])
                break
            except RefConflict:
                if attempt == 2:
                    raise
        self._link_to = None
        log(LOG, logging.INFO, "status move linked in the fleet repo", cluster=self.cluster,
            to=redact(target))

    def _write(self, status: ClusterStatus, *, when: float, extra: Sequence[str],
               metrics: bytes | None) -> Write:
        new_metrics = self.metrics if metrics is None else (metrics or None)
        metrics_only = self.status == status and new_metrics != self.metrics
        action = decide(self.status, self.tip_heartbeat_only, status)
        if extra and action is not Write.APPEND_CHANGE:
            action = Write.APPEND_CHANGE
        if metrics_only and action is Write.NOTHING:
            action = Write.REPLACE_HEARTBEAT if self.tip_heartbeat_only else \
                Write.APPEND_HEARTBEAT
        if action is Write.NOTHING:
            return action
        message = describe(self.status, status, action)
        if metrics_only and action is not Write.APPEND_CHANGE:
            message = Message(f"{self.cluster}: metrics", heartbeat_only=True)
        if extra:
            message = Message(message.subject, (*message.body, *extra))
        files = {STATUS_FILE: yamlio.dump(status.to_dict()).encode()}
        if new_metrics:
            files[METRICS_FILE] = new_metrics
        tree = self.git.write_tree(files)
        if action is Write.REPLACE_HEARTBEAT and self.tip is not None:
            parents = (self.tip_parents if self.tip_parents is not None
                       else self._parents(self.tip))
        else:
            parents = [self.tip] if self.tip else [self._carry] if self._carry else []
        text = message.text(state_commit=status.sync.state_commit)
        commit = self.git.commit(tree, parents, text, when=when)
        self.git.push(self.url, [RefUpdate(self.remote_ref, commit, self.tip)])
        self.tip = commit
        self.tip_parents = parents
        self._moved_from = self._carry = None
        self.tip_heartbeat_only = message.heartbeat_only
        self.status = status
        self.metrics = new_metrics
        log(LOG, logging.INFO, "status pushed", cluster=self.cluster, action=str(action),
            subject=message.subject)
        return action
