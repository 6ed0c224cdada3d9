"""`/tips/<cluster>.json` on the hub's real listener (uvicorn): ETag and 304, a held request
answered the moment a new tip is published, and a bound on held requests that leaves the
listener's probes and webhooks their connections."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator

import pytest

from gitfleet.hub.metrics import Metrics
from gitfleet.hub.tips import Published, TipBoard, etag_of
from gitfleet.hub.tipserver import tip_slots, tips_app
from gitfleet.hub.triggers import Wakeup
from gitfleet.hub.webhook import HubServer
from tests.harness import wait_for

Answer = tuple[int, dict[str, str], bytes]


def _doc(text: str) -> Published:
    body = text.encode()
    return Published(commit="a" * 40, body=body, etag=etag_of(body))


@pytest.fixture
def served() -> Iterator[tuple[HubServer, TipBoard, object]]:
    board = TipBoard()
    app = tips_app(board, max_wait=20, slots=2)
    server = HubServer("127.0.0.1", 0, wake=Wakeup(), metrics=Metrics(), tips=app,
                       max_connections=6)
    server.start()
    try:
        yield server, board, app
    finally:
        server.stop()


def _get(server: HubServer, path: str, **headers: str) -> Answer:
    host, port = server.address
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("GET", path, headers={k.replace("_", "-"): v for k, v in headers.items()})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, \
            response.read()
    finally:
        conn.close()


def _held(app: object) -> int:
    return int(app.state.route.held)  # type: ignore[attr-defined]


def test_etag_and_304(served) -> None:  # type: ignore[no-untyped-def]
    server, board, _ = served
    assert _get(server, "/tips/c1.json")[0] == 404
    board.put("c1", _doc('{"one": 1}'))
    status, headers, body = _get(server, "/tips/c1.json")
    assert (status, body) == (200, b'{"one": 1}')
    assert headers["content-type"].startswith("application/json")
    etag = headers["etag"]
    status, headers, body = _get(server, "/tips/c1.json", If_None_Match=etag)
    assert (status, body, headers["etag"]) == (304, b"", etag)
    assert _get(server, "/tips/..%2Fetc.json")[0] == 404
    assert _get(server, "/tips/")[0] == 404                   # never a listing


def test_a_held_request_is_answered_when_the_tip_changes(served) -> None:  # type: ignore[no-untyped-def]
    server, board, app = served
    board.put("c1", _doc('{"one": 1}'))
    etag = _get(server, "/tips/c1.json")[1]["etag"]
    answers: list[Answer] = []
    thread = threading.Thread(target=lambda: answers.append(
        _get(server, "/tips/c1.json", If_None_Match=etag, Prefer="wait=20")))
    thread.start()
    wait_for(lambda: _held(app) == 1, what="the request to be held")
    assert answers == []
    board.put("c1", _doc('{"two": 2}'))
    thread.join(20)
    status, headers, body = answers[0]
    assert (status, body) == (200, b'{"two": 2}')
    assert headers["preference-applied"] == "wait=20"
    assert _held(app) == 0


def test_held_requests_are_bounded_and_probes_still_answer(served) -> None:  # type: ignore[no-untyped-def]
    server, board, app = served
    board.put("c1", _doc('{"one": 1}'))
    etag = _get(server, "/tips/c1.json")[1]["etag"]
    answers: list[Answer] = []
    threads = [threading.Thread(target=lambda: answers.append(
        _get(server, "/tips/c1.json", If_None_Match=etag, Prefer="wait=20")))
        for _ in range(2)]
    for t in threads:
        t.start()
    wait_for(lambda: _held(app) == 2, what="both slots to be held")
    status, headers, _ = _get(server, "/tips/c1.json", If_None_Match=etag, Prefer="wait=20")
    assert status == 304 and "preference-applied" not in headers   # answered at once
    assert _get(server, "/healthz")[0] == 200
    board.put("c1", _doc('{"two": 2}'))
    for t in threads:
        t.join(20)
    assert sorted(a[0] for a in answers) == [200, 200]


def test_the_slots_leave_a_reserve_of_the_connection_bound() -> None:
    assert tip_slots(64) == 56
    assert tip_slots(6) == 2
    assert tip_slots(3) == 0
