"""Watch streams: replay from a resourceVersion, then follow the store until a timeout.

Events are filtered by type, namespace and selectors the way a real server filters them: an
object that stops matching a label selector is seen as DELETED, one that starts matching as
ADDED. With `allowWatchBookmarks` a quiet watch still learns the current resourceVersion.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitfleet.kubesim import status as st
from gitfleet.kubesim.catalog import ResourceType
from gitfleet.kubesim.conversion import store_key
from gitfleet.kubesim.store import Event, Store

Emit = Callable[[str, dict[str, Any]], None]
Matcher = Callable[[dict[str, Any]], bool]


@dataclass
class WatchRequest:
    rt: ResourceType
    namespace: str
    match: Matcher
    resource_version: str
    timeout: float
    bookmarks: bool


def start_cursor(store: Store, req: WatchRequest) -> tuple[int, list[dict[str, Any]], bool]:
    """(cursor, objects to send as ADDED first, expired?) for a new watch."""
    tkey = store_key(req.rt)
    with store.lock:
        if req.resource_version in ("", "0"):
            initial = [o for o in store.items(tkey, req.namespace or None) if req.match(o)]
            return store.resource_version, initial, False
        try:
            cursor = int(req.resource_version)
        except ValueError:
            raise st.bad_request(
                f'invalid resource version: "{req.resource_version}"') from None
        return cursor, [], store.events_since(cursor) is None


def follow(store: Store, req: WatchRequest, emit: Emit, *, cursor: int,
           stopped: Callable[[], bool], poll: float, bookmark_interval: float) -> None:
    """Send events after `cursor` until the timeout, `stopped()`, or expiry (410 ERROR)."""
    tkey = store_key(req.rt)
    deadline = time.monotonic() + req.timeout
    last_sent = cursor
    last_bookmark = time.monotonic()

    def bookmark() -> None:
        nonlocal last_sent, last_bookmark
        last_bookmark = time.monotonic()
        if req.bookmarks and cursor > last_sent:
            emit("BOOKMARK", {"kind": req.rt.kind, "apiVersion": req.rt.api_version,
                              "metadata": {"resourceVersion": str(cursor)}})
            last_sent = cursor

    while not stopped():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            bookmark()
            return
        with store.changed:
            events = store.events_since(cursor)
            if events == []:
                store.changed.wait(min(remaining, poll))
        if events is None:
            emit("ERROR", expired_status(store, str(cursor)))
            return
        for event in events:
            cursor = event.rv
            if _emit_event(event, tkey, req.namespace, req.match, emit):
                last_sent = cursor
        if time.monotonic() - last_bookmark >= bookmark_interval:
            bookmark()


def expired_status(store: Store, resource_version: str) -> dict[str, Any]:
    return st.gone(f"too old resource version: {resource_version} "
                   f"({store.oldest_rv()})").status()


def _emit_event(event: Event, tkey: tuple[str, str], namespace: str, match: Matcher,
                emit: Emit) -> bool:
    if event.tkey != tkey or (namespace and event.namespace != namespace):
        return False
    if event.type == "ADDED":
        if match(event.obj):
            emit("ADDED", event.obj)
            return True
    elif event.type == "DELETED":
        if match(event.previous or event.obj):
            emit("DELETED", event.obj)
            return True
    else:
        now_in = match(event.obj)
        was_in = event.previous is not None and match(event.previous)
        if now_in or was_in:
            emit("MODIFIED" if now_in and was_in else "ADDED" if now_in else "DELETED",
                 event.obj)
            return True
    return False


__all__ = ["WatchRequest", "expired_status", "follow", "start_cursor"]
