"""Object storage with one resourceVersion counter and a bounded event history.

Like etcd behind a real server: every write gets the next resourceVersion, every write is an
event, and a watch resumes from any resourceVersion still in the history (410 Gone after).
Stored objects are never mutated in place; writers store new dicts.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
TypeKey = tuple[str, str]  # (group, plural)
ObjKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class Event:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    tkey: TypeKey
    namespace: str
    obj: Obj
    previous: Obj | None


class Store:
    """All objects of one simulated cluster, their versions, and the event history."""

    def __init__(self, *, history: int = 10_000) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self._objects: dict[TypeKey, dict[ObjKey, Obj]] = {}
        self._rv = 0
        self._history: deque[Event] = deque(maxlen=history)
        self.closed = False

    @property
    def resource_version(self) -> int:
        return self._rv

    def next_rv(self) -> int:
        with self.lock:
            self._rv += 1
            return self._rv

    def get(self, tkey: TypeKey, namespace: str, name: str) -> Obj | None:
        return self._objects.get(tkey, {}).get((namespace, name))

    def items(self, tkey: TypeKey, namespace: str | None = None) -> list[Obj]:
        with self.lock:
            objs = self._objects.get(tkey, {})
            if namespace is None:
                return [objs[k] for k in sorted(objs)]
            return [objs[k] for k in sorted(objs) if k[0] == namespace]

    def count(self, tkey: TypeKey) -> int:
        return len(self._objects.get(tkey, {}))

    def type_keys(self) -> list[TypeKey]:
        with self.lock:
            return list(self._objects)

    def put(self, tkey: TypeKey, namespace: str, name: str, obj: Obj, rv: int) -> Event:
        """Store `obj` (its metadata.resourceVersion already set to `rv`) and record it."""
        with self.lock:
            bucket = self._objects.setdefault(tkey, {})
            previous = bucket.get((namespace, name))
            bucket[(namespace, name)] = obj
            event = Event(rv, "ADDED" if previous is None else "MODIFIED", tkey, namespace, obj,
                          previous)
            self._record(event)
            return event

    def delete(self, tkey: TypeKey, namespace: str, name: str, rv: int) -> Event | None:
        with self.lock:
            previous = self._objects.get(tkey, {}).pop((namespace, name), None)
            if previous is None:
                return None
            obj = dict(previous)
            obj["metadata"] = dict(previous["metadata"], resourceVersion=str(rv))
            event = Event(rv, "DELETED", tkey, namespace, obj, previous)
            self._record(event)
            return event

    def _record(self, event: Event) -> None:
        self._history.append(event)
        self.changed.notify_all()

    def events_since(self, rv: int) -> list[Event] | None:
        """Events after `rv`, or None when `rv` is older than the history holds."""
        with self.lock:
            if not self._history:
                return []
            oldest = self._history[0].rv
            if rv < oldest - 1:
                return None
            if rv >= self._rv:
                return []
            # history rvs are increasing: skip from the right end
            out = []
            for event in reversed(self._history):
                if event.rv <= rv:
                    break
                out.append(event)
            out.reverse()
            return out

    def oldest_rv(self) -> int:
        with self.lock:
            return self._history[0].rv if self._history else self._rv

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.changed.notify_all()
