"""HTTP/1.1 front of kubesim: routing, discovery, watch streams and fault injection.

Standard library only. Keep-alive with TCP_NODELAY and one write per response, so that a
client's request/response round trip costs microseconds, not a delayed-ACK timer.
"""

from __future__ import annotations

import contextlib
import hashlib
import http
import json
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

from gitfleet.kubesim import conversion, discovery, openapi, openapiv2
from gitfleet.kubesim import status as st
from gitfleet.kubesim.apiserver import ApiServer, Request
from gitfleet.kubesim.faults import Faults
from gitfleet.kubesim.limits import body_error
from gitfleet.kubesim.metrics import USAGE_PATH, UsageRule
from gitfleet.kubesim.podstates import STATE_PATH
from gitfleet.kubesim.tables import table, wants_table
from gitfleet.kubesim.watches import WatchRequest, expired_status, follow, start_cursor

LOG = logging.getLogger("gitfleet.kubesim")

HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
            409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests",
            500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


def _warning(text: str) -> str:
    """A `Warning` response header as a real server writes it (RFC 7234, code 299, agent -)."""
    quoted = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace(
        "\n", " ")
    return f'Warning: 299 - "{quoted}"\r\n'


def _deprecation(req: Request) -> str:
    """The `Warning` a real server adds to every answer about a deprecated version."""
    return _warning(req.rt.deprecation) if req.rt.deprecation else ""


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Context:
    """What the handler threads share: the API, faults, counters and the stop signal."""

    def __init__(self, api: ApiServer, faults: Faults, *, watch_poll: float = 0.5,
                 bookmark_interval: float = 5.0, watch_timeout: float = 1800.0) -> None:
        self.api = api
        self.faults = faults
        self.watch_poll = watch_poll
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.counts: Counter[str] = Counter()
        self.openapi_cache: dict[tuple[str, bool, str], bytes] = {}
        # KubeSim.set_container_state, for POST STATE_PATH from another process
        self.set_container_state: Callable[[str, str, str, str | None], None] | None = None
        self.count_lock = threading.Lock()
        self.stopping = threading.Event()
        self.address = ""

    def count(self, verb: str) -> None:
        with self.count_lock:
            self.counts[verb] += 1


class Headers(dict[str, str]):
    """Request headers by lower-case name: what the email parser gives, at a tenth of the cost."""

    def get(self, key: str, default: Any = None) -> Any:
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and dict.__contains__(self, key.lower())


MAX_HEADERS = 100
MAX_LINE = 65536


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kubesim"
    sys_version = ""
    ctx: Context

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def parse_request(self) -> bool:
        """HTTP/1.1 requests parsed directly; anything unusual goes the standard way."""
        line = str(getattr(self, "raw_requestline", b""), "iso-8859-1").rstrip("\r\n")
        words = line.split()
        if len(words) != 3 or words[2] != "HTTP/1.1" or words[1].startswith("//"):
            return super().parse_request()
        self.command, self.path, self.request_version = words
        self.requestline = line
        self.close_connection = False
        headers = Headers()
        for _ in range(MAX_HEADERS + 1):
            raw = self.rfile.readline(MAX_LINE + 1)
            if len(raw) > MAX_LINE:
                self.send_error(http.HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return False
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = str(raw, "iso-8859-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        else:
            self.send_error(http.HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
            return False
        self.headers = headers  # type: ignore[assignment]
        if headers.get("connection", "").lower() == "close":
            self.close_connection = True
        if headers.get("expect", "").lower() == "100-continue":
            return bool(self.handle_expect_100())
        return True

    # ---- plumbing ------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length:
            return self.rfile.read(int(length))
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return b""

    def _send(self, code: int, body: bytes, content_type: str = "application/json",
              extra: str = "") -> None:
        phrase = http.HTTPStatus(code).phrase if code in http.HTTPStatus._value2member_map_ \
            else ""
        head = (f"HTTP/1.1 {code} {phrase}\r\nContent-Type: {content_type}\r\n"
                f"Cache-Control: no-cache, private\r\nContent-Length: {len(body)}\r\n{extra}\r\n")
        self.wfile.write(head.encode("latin-1") + body)

    def _send_json(self, code: int, obj: Any) -> None:
        self._send(code, _dumps(obj))

    def _send_error(self, err: st.ApiError) -> None:
        self._send_json(err.code, err.status())

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        ctx = self.ctx
        try:
            body = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        if ctx.faults.latency > 0:
            time.sleep(ctx.faults.latency)
        raw_path, _, qs = self.path.partition("?")
        query = {k: v[-1] for k, v in parse_qs(qs, keep_blank_values=True).items()}
        try:
            if raw_path == USAGE_PATH:
                self._serve_usage(method, body)
            elif raw_path == STATE_PATH:
                self._serve_container_state(method, body)
            elif not self._serve_fixed(method, raw_path):
                self._serve_resource(method, raw_path, query, body)
        except st.ApiError as err:
            self._send_error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug in kubesim must answer, not hang the client
            LOG.exception("kubesim internal error")
            self._send_error(st.ApiError(500, "InternalError",
                                         f"Internal error occurred: {exc}"))

    # ---- non-resource paths --------------------------------------------------------------

    def _serve_usage(self, method: str, body: bytes) -> None:
        """The admin knob for another process: POST a UsageRule as JSON (gitfleet.kubesim.metrics).
        """
        if method != "POST":
            raise st.ApiError(405, "MethodNotAllowed", f"{USAGE_PATH} takes POST")
        try:
            rule = UsageRule.from_json(json.loads(body or b"{}"))
        except ValueError as exc:
            raise st.bad_request(f"usage rule: {exc}") from None
        self.ctx.api.metrics.set_usage(rule)
        self._send_json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

    def _serve_container_state(self, method: str, body: bytes) -> None:
        """The pod-state knob for another process: POST {"kind", "namespace", "name",
        "state"} (state null: back to the template's annotation; see `podstates`)."""
        if method != "POST":
            raise st.ApiError(405, "MethodNotAllowed", f"{STATE_PATH} takes POST")
        setter = self.ctx.set_container_state
        try:
            doc = json.loads(body or b"{}")
            if setter is None or not isinstance(doc, dict):
                raise ValueError("expected an object with kind, namespace, name and state")
            setter(str(doc["kind"]), str(doc.get("namespace", "")), str(doc["name"]),
                   None if doc.get("state") is None else str(doc["state"]))
        except (ValueError, KeyError) as exc:
            raise st.bad_request(f"container state: {exc}") from None
        self._send_json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

    def _serve_fixed(self, method: str, path: str) -> bool:
        api = self.ctx.api
        path = path.rstrip("/") or "/"
        if path in HEALTH_PATHS or path.startswith(tuple(p + "/" for p in HEALTH_PATHS)):
            self._send(200, b"ok", "text/plain; charset=utf-8")
            return True
        if method != "GET":
            return False
        doc: Any = None
        if path == "/version":
            doc = discovery.version()
        elif path == "/api":
            doc = discovery.api_versions(self.ctx.address)
        elif path == "/apis":
            doc = discovery.api_group_list(api.catalog)
        elif path == "/api/v1":
            doc = discovery.resource_list(api.catalog, "", "v1")
        elif path.startswith("/apis/"):
            parts = path.split("/")[2:]
            if len(parts) == 1:
                doc = discovery.api_group(api.catalog, parts[0])
                if doc is None:
                    raise st.page_not_found()
            elif len(parts) == 2:
                doc = discovery.resource_list(api.catalog, parts[0], parts[1])
                if doc is None:
                    raise st.page_not_found()
        elif path == "/openapi/v3":
            doc = openapi.root(api.catalog)
        elif path.startswith("/openapi/v3/") or path == "/openapi/v2":
            self._serve_openapi(path)
            return True
        elif path.startswith("/openapi/"):
            raise st.page_not_found()
        if doc is None:
            return False
        self._send_json(200, doc)
        return True

    def _serve_openapi(self, path: str) -> None:
        """The schema documents, built once per set of served custom resources."""
        api = self.ctx.api
        proto = openapiv2.MEDIA_TYPE in self.headers.get("Accept", "")
        custom = sorted((rt.group, rt.version, rt.plural, rt.kind, rt.namespaced)
                        for rt in api.catalog.all() if rt.custom)
        key = (path, proto, hashlib.sha256(_dumps([custom, sorted(
            (list(k), v) for k, v in api.schemas.items())])).hexdigest())
        cache = self.ctx.openapi_cache
        body = cache.get(key)
        if body is None:
            if path == "/openapi/v2":
                swagger = openapi.swagger(api.catalog, api.schemas)
                body = openapiv2.encode(swagger) if proto else _dumps(swagger)
            else:
                doc = openapi.group_version(api.catalog, path[len("/openapi/v3/"):],
                                            api.schemas)
                if doc is None:
                    raise st.page_not_found()
                body = _dumps(doc)
            if len(cache) > 64:
                cache.clear()
            cache[key] = body
        self._send(200, body, openapiv2.CONTENT_TYPE if proto else "application/json")

    # ---- resources -----------------------------------------------------------------------

    def _route(self, method: str, path: str, query: dict[str, str],
               body: bytes) -> tuple[Request, str]:
        segs = [unquote(s) for s in path.split("/") if s]
        if len(segs) >= 2 and segs[0] == "api":
            group, version, rest = "", segs[1], segs[2:]
        elif len(segs) >= 3 and segs[0] == "apis":
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            raise st.page_not_found()
        namespace = ""
        if (len(rest) >= 3 and rest[0] == "namespaces"
                and rest[2] not in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise st.page_not_found()
        rt = self.ctx.api.catalog.by_path(group, version, rest[0])
        if rt is None or (namespace and not rt.namespaced):
            raise st.page_not_found()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        token = sub == "token" and rt.kind == "ServiceAccount" and not rt.group
        if sub and not ((sub == "status" and rt.status) or (sub == "scale" and rt.scale)
                        or token):
            raise st.page_not_found()
        if token and method != "POST":
            raise st.method_not_allowed(method.lower())
        if method == "GET":
            verb = "get" if name else ("watch" if query.get("watch") in ("true", "1")
                                       else "list")
        elif method == "POST":
            verb = "create"
        elif method == "PUT":
            verb = "update"
        elif method == "PATCH":
            verb = "patch"
        else:
            verb = "delete" if name else "deletecollection"
        if verb in ("create", "deletecollection") and name and not token:
            raise st.method_not_allowed(verb)
        if verb in ("update", "patch") and not name:
            raise st.method_not_allowed(verb)
        if rt.namespaced and not namespace and verb not in ("list", "watch"):
            raise st.page_not_found() if name else st.method_not_allowed(verb)
        base_verb = "list" if verb == "watch" else verb
        if base_verb not in rt.verbs and verb != "watch" or (
                verb == "watch" and "watch" not in rt.verbs):
            raise st.method_not_allowed(verb)
        req = Request(verb, rt, namespace=namespace, name=name, subresource=sub, query=query,
                      body=body, content_type=self.headers.get("Content-Type",
                                                               "application/json"),
                      user_agent=self.headers.get("User-Agent", ""))
        return req, verb

    def _serve_resource(self, method: str, path: str, query: dict[str, str],
                        body: bytes) -> None:
        ctx = self.ctx
        req, verb = self._route(method, path, query, body)
        ctx.count(verb)
        too_large = body_error(verb, body)
        if too_large is not None:
            raise too_large
        code = ctx.faults.should_fail(verb)
        if code:
            reason = _REASONS.get(code, "InternalError")
            extra = "Retry-After: 1\r\n" if code in (429, 503) else ""
            err = st.ApiError(code, reason, f"kubesim injected fault ({verb})")
            self._send(code, _dumps(err.status()), extra=extra)
            return
        api = ctx.api
        accept = self.headers.get("Accept", "")
        if verb == "watch":
            self._watch(req, accept)
            return
        if verb == "get":
            obj = api.get(req)
            if wants_table(accept) and "Table" not in str(obj.get("kind")):
                obj = table([obj], kind=req.rt.kind,
                            resource_version=obj["metadata"].get("resourceVersion", ""),
                            now=api.now(), include=query.get("includeObject", "Metadata"),
                            printer_columns=self._printer_columns(req))
            self._send(200, _dumps(obj), extra=_deprecation(req))
            return
        if verb == "list":
            result = api.list_items(req)
            if wants_table(accept) and req.rt.group != "metrics.k8s.io":
                with_kinds = [dict(o, apiVersion=req.rt.api_version, kind=req.rt.kind)
                              for o in result["items"]]
                tab = table(with_kinds, kind=req.rt.kind,
                            resource_version=result["metadata"]["resourceVersion"],
                            now=api.now(), include=query.get("includeObject", "Metadata"),
                            printer_columns=self._printer_columns(req))
                if "continue" in result["metadata"]:
                    tab["metadata"]["continue"] = result["metadata"]["continue"]
                result = tab
            self._send(200, _dumps(result), extra=_deprecation(req))
            return
        handlers: dict[str, Callable[[Request], tuple[int, dict[str, Any]]]] = {
            "create": api.create, "update": api.update, "patch": api.patch,
            "delete": api.delete, "deletecollection": api.delete_collection}
        view = req.rt
        with api.store.lock:
            code, obj = handlers[verb](req)
        obj = conversion.present(view, obj)
        self._send(code, _dumps(obj), extra=_deprecation(req) + "".join(
            _warning(w) for w in req.warnings))

    def _printer_columns(self, req: Request) -> list[dict[str, Any]] | None:
        """A custom resource's additionalPrinterColumns (None: the built-in printers)."""
        if not req.rt.custom:
            return None
        return self.ctx.api.printer_columns.get((req.rt.group, req.rt.version, req.rt.plural),
                                                [])

    # ---- watch ---------------------------------------------------------------------------

    def _watch(self, req: Request, accept: str) -> None:
        ctx = self.ctx
        api = ctx.api
        as_table = wants_table(accept)
        wreq = WatchRequest(req.rt, req.namespace, api.matcher(req),
                            req.query.get("resourceVersion", ""),
                            float(req.query.get("timeoutSeconds") or ctx.watch_timeout),
                            req.query.get("allowWatchBookmarks") in ("true", "1"))
        cursor, initial, gone = start_cursor(api.store, wreq)
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Cache-Control: no-cache, private\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
        first = [True]

        def emit(kind: str, obj: dict[str, Any]) -> None:
            if kind not in ("ERROR", "BOOKMARK"):
                obj = conversion.present(req.rt, obj)
            if as_table and kind not in ("ERROR", "BOOKMARK"):
                obj = table([obj], kind=req.rt.kind,
                            resource_version=obj["metadata"].get("resourceVersion", ""),
                            now=api.now(), include=req.query.get("includeObject", "Metadata"),
                            columns=first[0], printer_columns=self._printer_columns(req))
                first[0] = False
            data = _dumps({"type": kind, "object": obj}) + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        closing = getattr(self.server, "closing", ctx.stopping)
        store = api.store

        def stopped() -> bool:
            return ctx.stopping.is_set() or store.closed or closing.is_set()

        try:
            if gone:
                emit("ERROR", expired_status(store, wreq.resource_version))
            else:
                for obj in initial:
                    emit("ADDED", obj)
                follow(store, wreq, emit, cursor=cursor, stopped=stopped,
                       poll=ctx.watch_poll, bookmark_interval=ctx.bookmark_interval)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


class HttpServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that sets TCP_NODELAY and can close every connection it holds."""

    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], ctx: Context) -> None:
        handler = type("BoundHandler", (Handler,), {"ctx": ctx})
        self._conns: set[socket.socket] = set()
        self._conn_threads: set[threading.Thread] = set()
        self._track = threading.Lock()
        self.closing = threading.Event()
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        LOG.debug("connection from %s ended with an error", client_address, exc_info=True)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._track:
            self._conns.add(sock)
        return sock, addr

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self._run_connection, args=(request, client_address),
                                  daemon=True,
                                  name=f"kubesim-{self.server_address[1]}-conn")
        with self._track:
            self._conn_threads.add(thread)
        thread.start()

    def _run_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._track:
                self._conn_threads.discard(threading.current_thread())
                self._conns.discard(request)

    def close_connections(self, timeout: float) -> None:
        """Cut every open connection and wait (bounded) for their threads to end."""
        self.closing.set()
        with self._track:
            conns = list(self._conns)
            threads = list(self._conn_threads)
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
