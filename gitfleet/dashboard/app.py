"""The dashboard as an ASGI app (Starlette): the page, its assets, and a read-only JSON API.

Every route is GET (HEAD): nothing here writes. Every request must name this dashboard in its
Host (gitfleet.dashboard.access: no DNS-rebinding page reads it). The page and its assets hold
no fleet data; `/api/` answers only a caller that shows the bearer token (`Authorization:
Bearer ...`) or that a trusted reverse proxy vouched for (a non-empty user header, e.g.
`X-Forwarded-User` set by oauth2-proxy, from a `--trusted-proxy` peer), when either is set.
Answers carry a strict Content-Security-Policy (only this origin's own scripts and styles) and
an ETag: the page polls `/api/version` with If-None-Match, and reloads its data when it moves.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gitfleet.dashboard import history, views
from gitfleet.dashboard.access import Access, App, host_guard
from gitfleet.dashboard.query import Query
from gitfleet.dashboard.source import FleetSource, NotReady
from gitfleet.wire.autoscalingstatus import fhpa_path

LIVE_WAIT = 0.5     # seconds the live check waits for a rebuild under way (see FleetSource.model)
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
            "Cache-Control": "no-cache"}
OPEN = Access()     # no token, no proxy header: for a loopback listener
ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8",
          "index.html": "text/html; charset=utf-8"}


def asset(name: str) -> bytes:
    return resources.files("gitfleet.dashboard").joinpath("static", name).read_bytes()


def labels_match(text: str) -> Callable[[dict[str, str]], bool] | None:
    """`-l`'s label selector (`env=prod,tier!=small`), parsed as `gitfleet get -l` parses it."""
    from gitfleet.kubesim.selectors import SelectorError, label_selector

    if not text.strip():
        return None
    try:
        return label_selector(text)
    except SelectorError as exc:
        raise ValueError(f"not a label selector: {text!r} ({exc})") from None


class Api:
    """The JSON answers, computed off the event loop and tagged with the model's version."""

    def __init__(self, source: FleetSource) -> None:
        self.source = source

    def fleet(self, request: Request) -> tuple[str, Any]:
        q = Query(request.query_params, ("q", "l", "since", "offset", "limit"))
        match = labels_match(q.text("l"))
        since = q.text("since").strip()
        offset = q.integer("offset", 0)
        limit = q.integer("limit", views.PAGE, lowest=1, highest=views.MAX_PAGE)
        m = self.source.current()
        only = None
        changed: dict[str, list[str]] = {}
        if since:
            if not history.is_sha(since) or self.source.git.resolve(f"{since}^{{commit}}") is None:
                raise ValueError(f"since: no such commit {since!r}")
            state = m.view.snap.state_commit or ""
            changed = self.source.kept(("changed", since, state), lambda: history.changed_clusters(
                self.source.git, since, state))
            only = set(changed)
        page = views.fleet_page(m.fleet, now=self.source.clock(), query=q.text("q"),
                                match=match, only=only, offset=offset, limit=limit)
        page["changed"] = {c["name"]: changed.get(c["name"], []) for c in page["clusters"]
                           } if since else {}
        return m.etag, page

    def cluster(self, request: Request) -> tuple[str, Any]:
        Query(request.query_params, ())
        m = self.source.current()
        name = request.path_params["name"]
        data = self.source.kept(("cluster", m.etag, name), lambda: views.cluster(
            m.view, m.cells.get(name), name))
        if data is None:
            raise LookupError(f"no cluster {name!r}")
        data = {**data, "now": self.source.clock()}
        data["heartbeatAgeSeconds"] = views.aged(data, data["now"])["heartbeatAgeSeconds"]
        head = history.status_head(self.source.git, self.source.branches, m.view.snap, name)
        data["history"] = self.source.kept(("status", head), lambda: history.status_log(
            self.source.git, head)) if head else []
        return m.etag, data

    def app(self, request: Request) -> tuple[str, Any]:
        q = Query(request.query_params, ("q", "offset", "limit"))
        offset = q.integer("offset", 0)
        limit = q.integer("limit", views.PAGE, lowest=1, highest=views.MAX_PAGE)
        m = self.source.current()
        key = f"{request.path_params['namespace']}/{request.path_params['name']}"
        full = self.source.kept(("app", m.etag, key), lambda: views.app(
            m.view, m.fleet, key, m.cells, m.units))     # one build per model and application
        if full is None:
            raise LookupError(f"no application {key!r}")
        data = views.app_page(full, query=q.text("q"), offset=offset, limit=limit)
        data["partial"] = m.fleet["partial"]
        data["autoscalers"] = [dict(a) for a in data["autoscalers"]]
        ref = self.source.branches.fleet_status
        head = self.source.git.resolve(ref) or ""
        for a in data["autoscalers"]:
            path = fhpa_path(data["namespace"], a["name"])
            a["history"] = self._replicas(head, path) if head else []
        return m.etag, data

    def _replicas(self, head: str, path: str) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]]:
            return history.replicas_over_time(self.source.git, head, path)
        return self.source.kept(("fhpa", head, path), read)

    def history(self, request: Request) -> tuple[str, Any]:
        q = Query(request.query_params, ("offset", "limit"))
        offset = q.integer("offset", 0)
        limit = q.integer("limit", 50, lowest=1, highest=200)
        m = self.source.current()
        state = m.view.snap.state_commit or ""
        rows = self.source.kept(("log", state, offset, limit), lambda: history.state_log(
            self.source.git, state, offset=offset, limit=limit)) if state else []
        return m.etag, {"commits": rows, "offset": offset, "limit": limit,
                        "clusters": [c["name"] for c in m.fleet["clusters"]]}

    def diff(self, request: Request) -> tuple[str, Any]:
        q = Query(request.query_params, ("a", "b", "cluster"))
        a, b, name = q.text("a"), q.text("b"), q.text("cluster")
        git = self.source.git
        full = []
        for sha in (a, b):
            resolved = git.resolve(f"{sha}^{{commit}}") if history.is_sha(sha) else None
            if resolved is None:
                raise ValueError(f"not a commit: {sha!r}")
            full.append(resolved)
        if not name or "/" in name or name.startswith("."):
            raise ValueError("cluster: give a cluster's name")
        objects = self.source.kept(("diff", *full, name), lambda: history.object_diff(
            git, full[0], full[1], name))
        return "diff-" + hashlib.sha1(" ".join((*full, name)).encode()).hexdigest()[:16], {
            "a": full[0], "b": full[1], "cluster": name, "objects": objects}

    def version(self, request: Request) -> tuple[str, Any]:
        Query(request.query_params, ())
        m = self.source.current(wait=LIVE_WAIT)
        return m.etag, {"etag": m.etag, "stateCommit": m.view.snap.state_commit or ""}


def dashboard_app(source: FleetSource, *, access: Access = OPEN, listen: str = "127.0.0.1",
                  warm: bool = True) -> App:
    """The app for a listener on `listen` (its Host names are answered besides loopback's);
    with `warm`, the fleet's first read starts now, in the background."""
    api = Api(source)
    if warm:
        source.warm()
    token, user_header = access.token, access.user_header

    def allowed(request: Request) -> bool:
        if not token and not user_header:
            return True
        if token:
            given = request.headers.get("authorization", "")
            if given.startswith("Bearer ") and hmac.compare_digest(
                    given[7:].strip().encode(), token.encode()):
                return True
        return bool(user_header and access.trusted_peer(
            request.client.host if request.client else None)
            and request.headers.get(user_header, "").strip())

    def endpoint(compute: Callable[[Request], tuple[str, Any]]) -> Any:
        async def handle(request: Request) -> Response:
            if not allowed(request):
                return JSONResponse({"error": "unauthorized: this dashboard wants a bearer token"
                                     if token else "unauthorized"}, 401, headers={
                                         **SECURITY, "WWW-Authenticate": "Bearer"})
            try:
                etag, data = await run_in_threadpool(compute, request)
            except ValueError as exc:
                return JSONResponse({"error": str(exc)}, 400, headers=SECURITY)
            except LookupError as exc:
                return JSONResponse({"error": str(exc).strip("'\"")}, 404, headers=SECURITY)
            except NotReady as exc:
                return JSONResponse({"error": str(exc), "retry": True}, 503,
                                    headers={**SECURITY, "Retry-After": "1"})
            tag = '"' + hashlib.sha1(f"{etag} {request.url.query}".encode()).hexdigest()[:20] + '"'
            headers = {**SECURITY, "ETag": tag}
            if request.headers.get("if-none-match") == tag:
                return Response(status_code=304, headers=headers)
            body = json.dumps(data, separators=(",", ":"), default=str)
            return Response(body, media_type="application/json", headers=headers)
        return handle

    async def page(request: Request) -> Response:
        return Response(asset("index.html"), media_type=ASSETS["index.html"], headers=SECURITY)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS or name == "index.html":
            return JSONResponse({"error": "not found"}, 404, headers=SECURITY)
        return Response(asset(name), media_type=ASSETS[name], headers=SECURITY)

    async def not_found(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": "not found"}, 404, headers=SECURITY)

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": "read-only: only GET"}, 405,
                            headers={**SECURITY, "Allow": "GET, HEAD"})

    get = ["GET"]
    routes = [
        Route("/", page, methods=get), Route("/static/{name}", static, methods=get),
        Route("/api/version", endpoint(api.version), methods=get),
        Route("/api/fleet", endpoint(api.fleet), methods=get),
        Route("/api/cluster/{name}", endpoint(api.cluster), methods=get),
        Route("/api/app/{namespace}/{name}", endpoint(api.app), methods=get),
        Route("/api/history", endpoint(api.history), methods=get),
        Route("/api/diff", endpoint(api.diff), methods=get),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})
    return host_guard(app, access.hosts(listen))
