"""`GET /tips/<cluster>.json` on the hub's listener: the tip documents, with ETag and long-poll.

Plain HTTP caching semantics, so any client or cache understands it: the answer carries an
`ETag`; a request whose `If-None-Match` names the current one is answered 304 (no body). A
request may ask to wait for a change (`Prefer: wait=N`, RFC 7240): while its document is
unchanged (or not there yet) the answer is held up to N seconds (at most `max_wait`) and sent
the moment the hub publishes a new tip, with `Preference-Applied: wait=N` so the client knows
it may ask again at once. That is how a new tip reaches an agent at once while an idle agent
makes one request per wait.

The listener's connection bound stays whole: at most `slots` requests are held at once (the
rest of the bound is kept for webhooks, probes and the dashboard); a request beyond them is
answered at once, without `Preference-Applied`, and its client falls back to plain polling.
Tip documents hold no secret (cluster name, commit ids, a time); documents are served only by
exact name, never listed.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gitfleet.hub.tips import TipBoard
from gitfleet.wire.tips import MEDIA_TYPE, cluster_of

_WAIT = re.compile(r"(?:^|[,;\s])wait\s*=\s*(\d{1,6})(?:$|[,;\s])", re.IGNORECASE)
HEADERS = {"Cache-Control": "no-cache", "Vary": "Prefer"}


def wait_of(prefer: str | None) -> int:
    """The seconds a `Prefer` header asks to wait (0: none)."""
    match = _WAIT.search(prefer or "")
    return int(match.group(1)) if match else 0


def matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names `etag` (or `*`), weak comparison (RFC 9110)."""
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag.removeprefix("W/") in tags


class TipRoute:
    """The handler and its count of held requests (the event loop's alone: no lock)."""

    def __init__(self, board: TipBoard, *, max_wait: float, slots: int) -> None:
        self.board = board
        self.max_wait = max_wait
        self.slots = slots
        self.held = 0

    async def __call__(self, request: Request) -> Response:
        cluster = cluster_of(request.path_params["name"])
        if cluster is None:
            return Response("not found\n", 404, media_type="text/plain")
        asked = min(wait_of(request.headers.get("prefer")), int(self.max_wait))
        etag = request.headers.get("if-none-match")
        doc = self.board.get(cluster)
        headers = dict(HEADERS)
        unchanged = doc is None or matches(etag, doc.etag)
        if asked > 0 and unchanged and self.held < self.slots:
            headers["Preference-Applied"] = f"wait={asked}"
            doc = await self._hold(request, cluster, doc.etag if doc else None, asked)
        if doc is None:
            return Response("no tip for this cluster\n", 404, headers=headers,
                            media_type="text/plain")
        headers["ETag"] = doc.etag
        if matches(etag, doc.etag):
            return Response(status_code=304, headers=headers)
        return Response(doc.body, 200, headers=headers, media_type=MEDIA_TYPE)

    async def _hold(self, request: Request, cluster: str, etag: str | None,
                    wait: float) -> Any:
        """Wait until the cluster's document differs from `etag`, `wait` passes or the client
        goes away; returns the document then."""
        self.held += 1
        event = asyncio.Event()
        self.board.watch(cluster, event)
        gone = asyncio.ensure_future(_disconnected(request))
        changed = asyncio.ensure_future(event.wait())
        try:
            current = self.board.get(cluster)   # published between the read and the watch
            if (current.etag if current else None) == etag:
                await asyncio.wait({gone, changed}, timeout=wait,
                                   return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.held -= 1
            self.board.unwatch(cluster, event)
            for task in (gone, changed):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        return self.board.get(cluster)


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone away."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def tips_app(board: TipBoard, *, max_wait: float, slots: int) -> Starlette:
    """The ASGI app to mount at `/tips`."""
    route = TipRoute(board, max_wait=max_wait, slots=slots)

    async def tip(request: Request) -> Response:
        return await route(request)

    app = Starlette(routes=[Route("/{name}", tip, methods=["GET", "HEAD"])])
    app.state.route = route     # its count of held requests, for tests
    return app


def tip_slots(max_connections: int) -> int:
    """Requests held at once: the connection bound less a reserve for webhooks and probes."""
    return max(0, max_connections - max(4, max_connections // 8))
