"""Every rewrite of a tip document changes its ETag at a real nginx, however fast it comes.

nginx's ETag for a static file is its modification time in whole seconds and its size, and a
new tip has the size of the old one: without care, a document rewritten twice within a second
keeps its ETag, the agent's `If-None-Match` is answered 304 and the change is missed until the
safety fetch. The hub's TipFolder gives every write a second of its own, set before the rename.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitfleet.hub.tips import TipFolder
from gitfleet.layout import Branches
from gitfleet.wire.tips import Tip, encode
from tests.tips.servers import tip_site


def _doc(n: int) -> bytes:
    """Tip documents of one size (only the commit differs): the ETag cannot tell them apart
    by size."""
    return encode(Tip(cluster="c1", ref=Branches().cluster("c1"), commit=f"{n:040x}",
                      state="", issued_at=1e9), None)


def _get(url: str, etag: str | None = None) -> tuple[int, str, bytes]:
    headers = {"If-None-Match": etag} if etag else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=10) as response:
            return response.status, response.headers["ETag"], response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers.get("ETag", ""), b""


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[TipFolder, str]]:
    with tip_site(tmp_path) as (folder, url):
        yield folder, f"{url}/c1.json"


def test_rewrites_within_one_second_each_get_a_new_etag(site: tuple[TipFolder, str]) -> None:
    folder, url = site
    assert len({len(_doc(n)) for n in range(6)}) == 1
    time.sleep(1.0 - time.time() % 1.0)   # all writes below fall in one wall-clock second
    folder.write("c1", _doc(0))
    status, etag, body = _get(url)
    assert (status, body) == (200, _doc(0))
    for n in range(1, 6):
        folder.write("c1", _doc(n))
        # the poller's conditional request with the ETag it holds: the new tip, not a 304
        status, new_etag, body = _get(url, etag)
        assert (status, body) == (200, _doc(n)), f"rewrite {n} answered {status}"
        assert new_etag != etag
        etag = new_etag
    assert _get(url, etag)[0] == 304        # and an unchanged document is still a cheap 304


def test_no_etag_ever_names_two_documents(site: tuple[TipFolder, str]) -> None:
    """A reader polling while the hub rewrites: each ETag it is given stands for one body
    (the time is set before the rename, never after it)."""
    folder, url = site
    folder.write("c1", _doc(0))
    seen: dict[str, set[bytes]] = {}
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            status, etag, body = _get(url)
            if status == 200:
                seen.setdefault(etag, set()).add(body)

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for n in range(1, 30):
            folder.write("c1", _doc(n))
            time.sleep(0.01)
    finally:
        stop.set()
        reader.join(timeout=20)
    assert len(seen) > 1
    assert {etag: len(bodies) for etag, bodies in seen.items() if len(bodies) > 1} == {}


def test_a_removed_and_rewritten_document_does_not_reuse_an_old_etag(
        site: tuple[TipFolder, str]) -> None:
    folder, url = site
    folder.write("c1", _doc(1))
    _, etag, _ = _get(url)
    (folder.folder / "c1.json").unlink()       # the cluster left (as `remove` does) ...
    folder.write("c1", _doc(2))                # ... and came back at once
    status, _, body = _get(url, etag)
    assert (status, body) == (200, _doc(2))
