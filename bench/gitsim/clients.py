"""Simulated agents: the agent's real ClusterBranch fetch and StatusBranch heartbeat push.

Each simulated cluster has the agent's own objects (gitfleet.agent.clusterbranch.ClusterBranch,
gitfleet.agent.statusbranch.StatusBranch) over its own local repository (borrowing the seed's
objects, created on first use by copying a template), so a fetch or a push runs exactly
the `git fetch` / `git push` an agent runs. A status branch starts in the state a live agent
keeps between heartbeats (its tip, heartbeat-only, parents known), so no warm-up fetch is
needed; from there `StatusBranch.write` decides, commits and pushes as the agent does.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import replace
from pathlib import Path

from bench.gitsim.repo import BRANCHES, Fleet, Statuses, borrow
from gitfleet.agent.clusterbranch import ClusterBranch
from gitfleet.agent.statusbranch import StatusBranch
from gitfleet.agent.statusmessage import Write
from gitfleet.clock import isoformat
from gitfleet.state.git import Git


class Agents:
    """The simulated clusters' Git objects, created on first use."""

    def __init__(self, fleet: Fleet, statuses: Statuses, workdir: Path, *,
                 fetch_url: dict[str, str], status_url: dict[str, str]) -> None:
        self.fleet, self.statuses = fleet, statuses
        self.workdir = workdir
        self.template = borrow(fleet.seed, workdir / "template.git")
        self._gits: dict[str, Git] = {}
        self._lock = threading.Lock()
        self._writing: dict[str, threading.Lock] = {}
        self.fetch_url, self.status_url = fetch_url, status_url
        self._branches: dict[str, ClusterBranch] = {}
        self._status: dict[str, StatusBranch] = {}

    def git(self, cluster: str) -> Git:
        """The cluster's own local repository (holding only its own refs, as an agent's)."""
        with self._lock:
            git = self._gits.get(cluster)
            if git is None:
                path = self.workdir / f"{cluster}.git"
                shutil.copytree(self.template, path)
                git = self._gits[cluster] = Git(path)
            return git

    def branch(self, cluster: str) -> ClusterBranch:
        b = self._branches.get(cluster)
        if b is None:
            b = self._branches[cluster] = ClusterBranch(self.git(cluster),
                                                        self.fetch_url[cluster], BRANCHES,
                                                        cluster)
        return b

    def status(self, cluster: str) -> StatusBranch:
        s = self._status.get(cluster)
        if s is None:
            s = StatusBranch(self.git(cluster), self.status_url[cluster], BRANCHES, cluster)
            s.tip = self.statuses.tips[cluster]
            s.tip_parents = []
            s.tip_heartbeat_only = True
            s.status = self.statuses.statuses[cluster]
            s.loaded = True
            self._status[cluster] = s
        return s

    def fetch(self, cluster: str) -> str | None:
        """The agent's fetch of its cluster branch; the commit it now has."""
        return self.branch(cluster).fetch().commit

    def heartbeat(self, cluster: str, now: float) -> Write:
        """The agent's heartbeat: the same status with a new heartbeat time, pushed. One
        push at a time per cluster, as its one agent loop does."""
        with self._lock:
            lock = self._writing.setdefault(cluster, threading.Lock())
        with lock:
            s = self.status(cluster)
            assert s.status is not None and s.status.heartbeat is not None
            status = replace(s.status, heartbeat=replace(s.status.heartbeat,
                                                         time=isoformat(now)))
            return s.write(status, when=now)
