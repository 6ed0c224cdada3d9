"""Writing `gitfleet/status/<cluster>`: one commit per change, heartbeats folded in place.

The agent is the branch's only writer, so it keeps the tip it last pushed and pushes with that
tip as the lease; a lost lease (someone else moved it) means re-read and retry. A heartbeat-only
status replaces a heartbeat-only tip (the new commit takes the tip's parents), so quiet time does
not grow history; every other change appends (see `statusmessage`). `metrics.yaml` (the
autoscaling report, gitfleet.agent.metrics) rides along: a change of it alone is written as a
heartbeat, so it replaces a heartbeat-only tip too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from gitfleet import yamlio
from gitfleet.agent.desired import commit_trailers
from gitfleet.agent.statusfile import ClusterStatus
from gitfleet.agent.statusmessage import HEARTBEAT_TRAILER, Message, Write, decide, describe
from gitfleet.errors import InputError, RefConflict
from gitfleet.layout import METRICS_FILE, STATUS_FILE, Branches
from gitfleet.logs import log
from gitfleet.state.git import Git, RefUpdate, RemoteRefMissing

LOG = logging.getLogger("gitfleet.agent.status")


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
        return self.status

    def _heartbeat_only(self, commit: str) -> bool:
        message = self.git.run("cat-file", "commit", commit).decode(errors="replace")
        body = message.split("\n\n", 1)[1] if "\n\n" in message else ""
        return commit_trailers(body).get(HEARTBEAT_TRAILER) == "true"

    def _parents(self, commit: str) -> list[str]:
        out = self.git.run("rev-list", "--parents", "-n", "1", commit).decode().split()
        return out[1:]

    def write(self, status: ClusterStatus, *, when: float,
              extra: Sequence[str] = (), metrics: bytes | None = None) -> Write:
        """Commit and push `status` if it differs from the tip. TransientError when offline.
        `metrics`: the new `metrics.yaml` (None: keep the tip's; b"": remove it)."""
        if not self.loaded:
            self.load()
        try:
            return self._write(status, when=when, extra=extra, metrics=metrics)
        except RefConflict:
            log(LOG, logging.WARNING, "status branch moved under us; re-reading",
                cluster=self.cluster)
            self.load()
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
            parents = [self.tip] if self.tip else []
        text = message.text(state_commit=status.sync.state_commit)
        commit = self.git.commit(tree, parents, text, when=when)
        self.git.push(self.url, [RefUpdate(self.remote_ref, commit, self.tip)])
        self.tip = commit
        self.tip_parents = parents
        self.tip_heartbeat_only = message.heartbeat_only
        self.status = status
        self.metrics = new_metrics
        log(LOG, logging.INFO, "status pushed", cluster=self.cluster, action=str(action),
            subject=message.subject)
        return action
