"""Tip documents by default: the agent follows the tips URL its hub announces in cluster.yaml.

Why: an agent that polls Git every interval costs the fleet repository one fetch per cluster
per interval (docs/git-budget.md); with tip documents it fetches only when its branch moved
(gitfleet.agent.tips). The agent cannot guess where they are served, but the hub knows
(fleet.yaml `tips.url`) and says it in every cluster's `cluster.yaml` (`tips: {url: ...}`). So
the agent runs the `TipWatcher` that file names, and starts, stops or moves it when a new
cluster commit says otherwise, without a restart. The operator's `--tips-url` (a fixed URL)
or `--no-tips` (none) wins over the announcement; an announcement the flag overrides is said
once in the log, not ignored in silence.

The follower is a reactor of the agent's round (gitfleet.agent.round): it reads the verified
`DesiredState`, so with `--trust-hub-key` only a URL the hub signed is followed. Whatever the
URL, a tip document decides only when the agent fetches, never what it applies, and a watcher
whose server does not answer leaves the agent polling Git at its interval (as without tips).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from gitfleet.agent.round import FOREVER, Round
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.agent.tips")


class Watcher(Protocol):
    """What the follower runs (gitfleet.agent.tips.TipWatcher)."""

    url: str

    def hint(self) -> str | None: ...

    def plans(self) -> frozenset[str] | None: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class TipFollower:
    """The agent's tip watcher, as cluster.yaml announces it unless the operator said.

    `watcher_for(url)` builds a watcher for a folder URL; `fixed`: the operator's `--tips-url`
    (followed from `start()`, whatever cluster.yaml says); `off`: `--no-tips`. `hint()` is the
    agent's `branch_hint`; `react()` is its reactor; `close()` stops the watcher. `plans()`
    is what the watcher's document says of plan requests (the agent's plan part asks it), and
    `noticed()`, which the watcher calls when the document lists a plan request, tells
    whoever `listen`s (the plan part, without waking a round)."""

    def __init__(self, watcher_for: Callable[[str], Watcher], *, cluster: str,
                 fixed: str = "", off: bool = False) -> None:
        self.watcher_for, self.cluster = watcher_for, cluster
        self.fixed, self.off = fixed, off
        self.watcher: Watcher | None = None
        self.url = ""                  # the folder URL the running watcher polls
        self._announced: str | None = None   # cluster.yaml's tips.url, as last read
        self._listeners: list[Callable[[], None]] = []

    def start(self) -> None:
        """Start the operator's `--tips-url` watcher, if any (announced ones start with the
        round that reads them)."""
        if self.fixed and not self.off:
            self._run(self.fixed, why="--tips-url")

    def hint(self) -> str | None:
        watcher = self.watcher
        return None if watcher is None else watcher.hint()

    def plans(self) -> frozenset[str] | None:
        """The plan requests the running watcher's document lists (None: no watcher, or no
        usable document saying)."""
        watcher = self.watcher
        return None if watcher is None else watcher.plans()

    def listen(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def noticed(self) -> None:
        """The watcher's document lists plan requests (maybe new ones)."""
        for listener in self._listeners:
            listener()

    def react(self, round_: Round) -> float:
        desired = round_.desired
        if desired is None:          # nothing verified this round: keep what runs
            return FOREVER
        announced = desired.tips_url
        if announced == self._announced:
            return FOREVER
        self._announced = announced
        if self.off or self.fixed:
            if announced and announced != self.fixed:
                log(LOG, logging.INFO, "cluster.yaml announces tip documents; not followed",
                    cluster=self.cluster, announced=announced,
                    because="--no-tips" if self.off else "--tips-url", used=self.url or "none")
            return FOREVER
        self._run(announced, why="cluster.yaml")
        return FOREVER

    def _run(self, url: str, *, why: str) -> None:
        if url == self.url:
            return
        was, self.url = self.url, url
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        if url:
            watcher = self.watcher_for(url)
            watcher.start()
            self.watcher = watcher
            log(LOG, logging.INFO, "following tip documents: Git is fetched when the tip "
                "moves", cluster=self.cluster, url=watcher.url, source=why,
                **({"was": was} if was else {}))
        else:
            log(LOG, logging.INFO, "no tip documents announced any more: polling Git every "
                "interval", cluster=self.cluster, was=was)

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
