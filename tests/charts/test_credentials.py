"""A private chart repository: credentials come from the hub's side only (a file of Secrets,
named by chartPullSecret), go in a header, and are never printed nor written anywhere."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gitfleet.charts import credentials, fetch
from gitfleet.charts.credentials import Credentials
from gitfleet.charts.renderer import Charts
from gitfleet.cli import main
from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from tests.charts.chartrepo import HELM, chart_repo
from tests.charts.fleet import chart_fleet
from tests.render.conftest import objects_in

pytestmark = pytest.mark.skipif(HELM is None, reason="helm is not installed (tools/setup)")

PASSWORD = "s3cret-pa55word"
BASIC = "Basic " + base64.b64encode(f"robot:{PASSWORD}".encode()).decode()
SECRETS = f"""apiVersion: v1
kind: Secret
metadata: {{name: chart-creds, namespace: apps}}
data:
  username: {base64.b64encode(b"robot").decode()}
  password: {base64.b64encode(PASSWORD.encode()).decode()}
"""


def test_private_repository_with_the_hubs_credentials(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with chart_repo(tmp_path, authorization=BASIC) as repo:
        repo.publish("web", "1.0.0")
        files = chart_fleet(repo.url, chartPullSecret={"name": "chart-creds"})
        (tmp_path / "creds.yaml").write_text(SECRETS)
        store = credentials.load(tmp_path / "creds.yaml")
        assert PASSWORD not in repr(store.lookup({"name": "chart-creds"}, "apps"))
        work = tmp_path / "work"
        result = render(load_fleet(files), charts=Charts(work, credentials=store))
        assert result.errors == []
        assert objects_in(result, "b")["ConfigMap/web/web-settings"]["data"]["message"] == \
            "from-b"

        denied = render(load_fleet(files), charts=Charts(tmp_path / "w2"))
        assert denied.errors and all(
            "chartPullSecret apps/chart-creds is not among the hub's chart credentials"
            in p.message for p in denied.errors)
        anonymous = render(load_fleet(chart_fleet(repo.url)), charts=Charts(tmp_path / "w3"))
        assert anonymous.errors and all("HTTP 401: access denied" in p.message
                                        for p in anonymous.errors)

        fleet_dir = tmp_path / "fleet"
        for path, data in files.items():
            (fleet_dir / path).parent.mkdir(parents=True, exist_ok=True)
            (fleet_dir / path).write_bytes(data)
        assert main(["validate", str(fleet_dir), "--chart-credentials",
                     str(tmp_path / "creds.yaml"), "--chart-cache", str(work)]) == 0
    printed = capsys.readouterr()
    for text in (printed.out, printed.err, *(p.message for p in denied.errors),
                 *(p.message for p in anonymous.errors)):
        assert PASSWORD not in text and BASIC not in text
    for data in result.files.values():
        assert PASSWORD.encode() not in data
    for path in work.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_a_repository_url_with_credentials_in_it_is_refused(tmp_path: Path) -> None:
    result = render(load_fleet(chart_fleet("https://robot:pw@charts.example/")),
                    charts=Charts(tmp_path / "work"))
    assert result.errors and all("the repository URL carries credentials" in p.message
                                 and "robot" not in p.message and ":pw" not in p.message
                                 for p in result.errors)


class _Recording(BaseHTTPRequestHandler):
    """Answers every GET, records the Authorization header it got; `/moved` redirects to
    `target`."""

    seen: list[tuple[str, str]]
    target = ""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.seen.append((self.path, self.headers.get("Authorization", "")))
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", self.target)
            self.end_headers()
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextmanager
def _recording(target: str = "") -> Iterator[tuple[str, list[tuple[str, str]]]]:
    seen: list[tuple[str, str]] = []
    handler = type("Recorder", (_Recording,), {"seen": seen, "target": target})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_credentials_go_to_the_repositorys_host_only() -> None:
    """As Helm without --pass-credentials: an archive an index places on another host, and a
    redirect to another host, get no Authorization header."""
    creds = Credentials("robot", PASSWORD)
    with _recording() as (other, other_seen), _recording(f"{other}/after-redirect") as (
            repo, repo_seen):
        fetch.get(f"{repo}/index.yaml", auth=creds)
        fetch.get(f"{other}/web-1.0.0.tgz", auth=creds, origin=repo)
        fetch.get(f"{repo}/moved", auth=creds)
    assert repo_seen == [("/index.yaml", BASIC), ("/moved", BASIC)]
    assert other_seen == [("/web-1.0.0.tgz", ""), ("/after-redirect", "")]


def test_credentials_never_go_from_https_down_to_http() -> None:
    assert fetch.same_host("https://charts.example/a.tgz", "https://charts.example/")
    assert not fetch.same_host("http://charts.example/a.tgz", "https://charts.example/")
    assert not fetch.same_host("https://charts.example:8443/a", "https://charts.example/")
    assert not fetch.same_host("https://cdn.example/a.tgz", "https://charts.example/")
