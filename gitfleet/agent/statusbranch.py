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
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gitfleet import yamlio
from gitfleet.agent.desired import commit_trailers
from gitfleet.agent.statusmessage import HEARTBEAT_TRAILER, Message, Write, decide, describe
from gitfleet.errors import InputError, RefConflict
from gitfleet.layout import METRICS_FILE, STATUS_FILE, Branches
from gitfleet.logs import log
from gitfleet.state.git import Git, RefUpdate, RemoteRefMissing
from gitfleet.state.signing import TrustedKeys, verify_commit_body
from gitfleet.state.urls import redact
from gitfleet.wire.status import ClusterStatus

LOG = logging.getLogger("gitfleet.agent.status")


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

    def load(self) -> ClusterStatus | None:
        """Fetch the branch and read its tip (None when it does not exist yet)."""
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
        if tip is not None and not self._signed_by_us(tip):
            self.loaded = True
            self._settle_move()
            return self.status
        if tip is not None:
            self.metrics = self.git.read_blob(tip, METRICS_FILE)
            raw = self.git.read_blob(tip, STATUS_FILE)
            if raw is not None:
                try:
                    self.status = ClusterStatus.from_yaml(raw, STATUS_FILE)
                except InputError as exc:
                    log(LOG, logging.WARNING, "unreadable status file, starting afresh",
                        error=str(exc))
            self.tip_heartbeat_only = self._heartbeat_only(tip)
        self.loaded = True
        self._settle_move()
        return self.status

    def move_to(self, url: str) -> None:
        """Push to `url` from now on (the cluster's status repository changed); the next
        `load` or `write` reads the new place and carries the newer status on."""
        if url == self.url:
            return
        if self._moved_from is None and self.loaded:
            self._moved_from = _Place(self.url, self.tip, self.status, self.metrics)
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

    def _heartbeat_only(self, commit: str) -> bool:
        message = self.git.run("cat-file", "commit", commit).decode(errors="replace")
        body = message.split("\n\n", 1)[1] if "\n\n" in message else ""
        return commit_trailers(body).get(HEARTBEAT_TRAILER) == "true"

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
