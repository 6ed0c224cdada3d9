"""What wakes the hub: file-system events on a local repository's refs, and a shared wake-up.

A local repository (bare or not) changes when someone commits or pushes to it: Git writes a
`<ref>.lock` file and renames it over the ref, or rewrites `packed-refs`. The watcher turns
those events into a wake-up, ignoring the refs the hub writes itself so that its own writes do
not wake it again. The loop debounces a burst of events into one round.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from gitfleet.layout import Branches


class Wakeup:
    """A wake-up call shared by every trigger; `wait` returns the reasons it was woken for."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._reasons: list[str] = []

    def set(self, reason: str) -> None:
        with self._cond:
            self._reasons.append(reason)
            self._cond.notify_all()

    def wait(self, timeout: float) -> list[str]:
        """Block until woken or `timeout` seconds pass; returns (and clears) the reasons."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._cond:
            while not self._reasons:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            reasons, self._reasons = self._reasons, []
            return reasons

    def settle(self, quiet: float, *, longest: float) -> list[str]:
        """Collect further reasons until `quiet` seconds pass without one (at most `longest`)."""
        collected: list[str] = []
        end = time.monotonic() + longest
        while quiet > 0:
            more = self.wait(min(quiet, max(0.0, end - time.monotonic())))
            if not more or time.monotonic() >= end:
                collected += more
                break
            collected += more
        return collected


class RefWatcher:
    """Watchdog observer on a repository's refs folder and packed-refs."""

    def __init__(self, git_dir: Path, wake: Wakeup, *,
                 branches: Callable[[], Branches]) -> None:
        self.git_dir = git_dir.resolve()
        self.wake = wake
        self.branches = branches
        self._observer: Observer | None = None   # type: ignore[valid-type]

    def start(self) -> None:
        handler = _Handler(self)
        observer = Observer()
        observer.schedule(handler, str(self.git_dir / "refs"), recursive=True)
        observer.schedule(handler, str(self.git_dir), recursive=False)
        observer.daemon = True
        observer.start()
        self._observer = observer

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    def relevant(self, path: str) -> bool:
        """Whether a changed file is a ref someone else moved (not one the hub writes)."""
        try:
            rel = Path(path).resolve().relative_to(self.git_dir).as_posix()
        except ValueError:
            return False
        if rel == "packed-refs":
            return True
        if not rel.startswith("refs/heads/"):
            return False
        ref = rel.removesuffix(".lock")
        b = self.branches()
        own = (b.state, b.fleet_status, b.cluster(""))
        return not (ref in own or ref.startswith(b.cluster("")))


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: RefWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("opened", "closed_no_write"):
            return
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        if any(p and self.watcher.relevant(str(p)) for p in paths):
            self.watcher.wake.set("watch")
