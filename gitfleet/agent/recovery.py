"""Recovery (the `Recovery` feature gate): watch every owned kind and put drifted objects back.

One watch thread per kind, filtered by the cluster label, compares each event with the desired
object; a drift or a deletion queues the object, and one repair thread applies it again after a
short debounce (a burst of events for one object costs one apply). Our own applies come back
as events too, but they match the desired content and so cause nothing. `stop()` closes every
watch and joins every thread, bounded.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from gitfleet.agent.changes import DriftFound, ObjectResult
from gitfleet.agent.engine import Engine
from gitfleet.kube.client import KubeClient, Watch
from gitfleet.kube.errors import ApiError, NotServed, Unreachable
from gitfleet.logs import log

LOG = logging.getLogger("gitfleet.agent.recovery")

RepairHook = Callable[[ObjectResult, DriftFound], None]


class Recovery:
    def __init__(self, engine: Engine, kube: KubeClient, *, on_repair: RepairHook,
                 debounce: float = 0.05, join_timeout: float = 5.0) -> None:
        self.engine = engine
        self.kube = kube
        self.on_repair = on_repair
        self.debounce = debounce
        self.join_timeout = join_timeout
        self._watches: dict[tuple[str, str], tuple[Watch, threading.Thread]] = {}
        self._queue: queue.Queue[tuple[str, DriftFound] | None] = queue.Queue()
        self._stopped = threading.Event()
        self._worker = threading.Thread(target=self._repair_loop, name="gitfleet-repair",
                                        daemon=True)
        self._worker.start()

    def ensure(self, kinds: set[tuple[str, str]]) -> None:
        """Watch every kind in `kinds` (new ones start; kinds no longer owned stop)."""
        if self._stopped.is_set():
            return
        for kind_key in list(self._watches):
            if kind_key not in kinds:
                watch, thread = self._watches.pop(kind_key)
                watch.close()
                thread.join(self.join_timeout)
        for api_version, kind in sorted(kinds - self._watches.keys()):
            try:
                watch = self.kube.watch(api_version, kind, label_selector=self.engine.selector)
            except (NotServed, Unreachable, ApiError) as exc:
                log(LOG, logging.DEBUG, "cannot watch yet", kind=kind, error=str(exc))
                continue
            thread = threading.Thread(target=self._watch_loop, args=(watch,),
                                      name=f"gitfleet-watch-{kind}", daemon=True)
            self._watches[(api_version, kind)] = (watch, thread)
            thread.start()

    def _watch_loop(self, watch: Watch) -> None:
        def failed(exc: Exception) -> None:
            log(LOG, logging.DEBUG, "watch interrupted", error=str(exc))

        for event, obj in watch.events(on_error=failed):
            try:
                drift = self.engine.check_live(event, obj)
            except (Unreachable, ApiError):
                continue
            if drift is not None:
                self._queue.put((drift.ref.key, drift))

    def _repair_loop(self) -> None:
        while not self._stopped.is_set():
            item = self._queue.get()
            if item is None:
                return
            batch = {item[0]: item[1]}
            self._stopped.wait(self.debounce)
            while True:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    return
                batch.setdefault(more[0], more[1])
            for key, drift in batch.items():
                try:
                    result = self.engine.repair(key)
                except (Unreachable, ApiError) as exc:
                    log(LOG, logging.WARNING, "repair failed", object=key, error=str(exc))
                    continue
                if result is not None:
                    log(LOG, logging.INFO, "repaired drift", object=key,
                        change=str(result.change))
                    self.on_repair(result, drift)

    def stop(self) -> None:
        self._stopped.set()
        for watch, _ in self._watches.values():
            watch.close()
        for _, thread in self._watches.values():
            thread.join(self.join_timeout)
        self._watches.clear()
        self._queue.put(None)
        self._worker.join(self.join_timeout)
