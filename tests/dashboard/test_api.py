"""The dashboard's API on a real server (127.0.0.1, uvicorn) over a real Git repo: read-only,
a strict CSP, bearer-token and proxy-header auth, ETags, and Secret values never shown."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gitfleet import yamlio
from gitfleet.cli.outdir import write_tree
from gitfleet.dashboard.access import Access
from gitfleet.dashboard.app import CSP, dashboard_app
from gitfleet.dashboard.export import export, file_key
from gitfleet.dashboard.history import object_diff
from gitfleet.dashboard.source import FleetSource
from gitfleet.errors import InputError
from gitfleet.httpthread import HTTPThread
from gitfleet.state.git import Git, init_repo
from tests.harness import wait_for

SECRET_VALUE = "hunter2-do-not-show"
OTHER_VALUE = "correct-horse-battery"


def state_commit(git: Git, files: dict[str, bytes], parents: list[str], source: str) -> str:
    tree = git.write_tree(files)
    return git.commit(tree, parents, f"Render\n\nSource-Commit: {source}\n")


def secret(values: dict[str, str]) -> bytes:
    """A Secret as `kubectl get -o yaml` exports it: its last-applied annotation copies it."""
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"},
           "stringData": values}
    copy = json.dumps(obj)
    obj["metadata"] = {**obj["metadata"], "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": copy}}
    return yamlio.dump(obj).encode()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Git, list[str]]:
    """A repo whose state branch holds two commits: a Secret and a ConfigMap change between."""
    git = init_repo(tmp_path / "fleet.git", bare=True, branch="main")
    source = git.commit(git.write_tree({"fleet.yaml": b"branchPrefix: gitfleet\n"}), [], "src")
    git.run("update-ref", "refs/heads/main", source)
    base = "clusters/c1/shop/shop/"
    cm = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata:\n  k: "
    clusters = {f"clusters/{c}/cluster.yaml": f"name: {c}\nlabels: {{env: {env}}}\n".encode()
                for c, env in (("c1", "prod"), ("c2", "dev"))}
    first = state_commit(git, {
        **clusters,
        base + "core_Secret_shop_db.yaml": secret({"password": SECRET_VALUE, "user": "app"}),
        base + "core_ConfigMap_shop_cfg.yaml": cm + b"one\n"}, [], source)
    second = state_commit(git, {
        **clusters,
        base + "core_Secret_shop_db.yaml": secret({"password": OTHER_VALUE, "user": "app"}),
        base + "core_ConfigMap_shop_cfg.yaml": cm + b"two\n"}, [first], source)
    git.run("update-ref", "refs/heads/gitfleet/state", second)
    return git, [first, second]


@contextmanager
def serving(git: Git, **auth: Any) -> Iterator[str]:
    """The dashboard on 127.0.0.1; `auth` as `Access.of` takes it (token, user_header, ...)."""
    source = FleetSource(git)
    source.fresh()          # the first read done: no answer is "reading the fleet" (503)
    server = HTTPThread("127.0.0.1", 0, dashboard_app(source, access=Access.of(**auth)),
                        name="test")
    server.start()
    try:
        yield "http://{}:{}/".format(*server.address)
    finally:
        server.stop()


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None
          ) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, method=method, headers=headers or {},
                                 data=b"{}" if method in ("POST", "PUT") else None)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_secret_values_never_leave_the_diff_but_their_change_does(repo: Any) -> None:
    git, (first, second) = repo
    objects = {o["path"]: o for o in object_diff(git, first, second, "c1")}
    shown = json.dumps(objects)
    assert SECRET_VALUE not in shown and OTHER_VALUE not in shown
    lines = objects["shop/shop/core_Secret_shop_db.yaml"]["diff"]
    assert "-  password: <hidden 1>" in lines
    assert "+  password: <hidden 2>" in lines
    assert not any("user:" in line and line[0] in "+-" for line in lines)   # unchanged: no line
    assert "+  k: two" in objects["shop/shop/core_ConfigMap_shop_cfg.yaml"]["diff"]


def test_the_api_is_read_only_with_a_strict_csp_and_etags(repo: Any) -> None:
    git, (first, second) = repo
    with serving(git) as url:
        code, headers, body = fetch(url)
        assert code == 200 and b"static/app.js" in body
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert "unsafe" not in csp and "http" not in csp      # no inline code, no CDN
        for path in ("", "api/fleet", "api/history", "static/app.js"):
            for method in ("POST", "PUT", "DELETE"):
                assert fetch(url + path, method=method)[0] == 405, (method, path)
        code, headers, body = fetch(f"{url}api/diff?a={first}&b={second}&cluster=c1")
        assert code == 200 and SECRET_VALUE.encode() not in body
        assert fetch(f"{url}api/diff?a={first}&b={second}&cluster=c2", headers={
            "If-None-Match": headers["etag"]})[0] == 200        # another query, another tag
        again = fetch(f"{url}api/diff?a={first}&b={second}&cluster=c1",
                      headers={"If-None-Match": headers["etag"]})
        assert again[0] == 304 and again[2] == b""
        assert fetch(f"{url}api/diff?a=nope&b={second}&cluster=c1")[0] == 400
        assert fetch(f"{url}api/cluster/absent")[0] == 404
        assert fetch(f"{url}static/../app.py")[0] == 404


def test_the_grid_filters_by_label_name_and_change_since_a_commit(repo: Any) -> None:
    git, (first, second) = repo
    with serving(git) as url:
        def names(query: str) -> list[str]:
            code, _, body = fetch(f"{url}api/fleet?{query}")
            assert code == 200, body
            return [c["name"] for c in json.loads(body)["clusters"]]

        assert names("") == ["c1", "c2"]
        assert names("l=env%3Dprod") == ["c1"] and names("l=env!%3Dprod") == ["c2"]
        assert names("q=2") == ["c2"]
        assert names(f"since={first}") == ["c1"]        # only c1's files moved since
        assert names(f"since={second}") == []
        code, _, body = fetch(f"{url}api/fleet?since={first}")
        assert json.loads(body)["changed"] == {"c1": ["shop/shop"]}
        assert fetch(f"{url}api/fleet?since=0000000")[0] == 400
        assert fetch(f"{url}api/fleet?l=env%20in%20(a")[0] == 400
        assert [len(json.loads(fetch(f"{url}api/fleet?limit=1&offset={o}")[2])["clusters"])
                for o in (0, 1, 2)] == [1, 1, 0]


def test_a_token_or_a_trusted_proxy_header_guards_the_data_not_the_page(repo: Any) -> None:
    git, _ = repo
    with serving(git, token="t0ken", user_header="X-Forwarded-User") as url:
        assert fetch(url)[0] == 200 and fetch(url + "static/app.css")[0] == 200
        code, headers, body = fetch(url + "api/fleet")
        assert code == 401 and headers["www-authenticate"] == "Bearer"
        assert b"t0ken" not in body
        assert fetch(url + "api/fleet", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert fetch(url + "api/fleet", headers={"Authorization": "Bearer t0ken"})[0] == 200
        assert fetch(url + "api/fleet", headers={"X-Forwarded-User": "ada"})[0] == 200
        assert fetch(url + "api/fleet", headers={"X-Forwarded-User": " "})[0] == 401


def test_the_user_header_counts_only_from_a_trusted_proxy(repo: Any) -> None:
    """As Grafana's auth.proxy whitelist and Kubernetes' requestheader: a user header from a
    peer that is not a --trusted-proxy reads nothing, whatever X-Forwarded-For claims."""
    git, _ = repo
    user = {"X-Forwarded-User": "ada"}
    with serving(git, user_header="X-Forwarded-User", trusted_proxies=["10.0.0.0/8"]) as url:
        code, _, body = fetch(url + "api/fleet", headers=user)
        assert code == 401 and b"c1" not in body
        assert fetch(url + "api/fleet", headers={**user, "X-Forwarded-For": "10.1.2.3"})[0] == 401
    with serving(git, user_header="X-Forwarded-User", trusted_proxies=["127.0.0.1"]) as url:
        assert fetch(url + "api/fleet", headers=user)[0] == 200
        assert fetch(url + "api/fleet")[0] == 401


def test_only_a_host_naming_this_dashboard_is_answered(repo: Any) -> None:
    """DNS rebinding: a page from attacker.example whose name then resolves to 127.0.0.1 is
    same-origin with the dashboard, but its requests say `Host: attacker.example` (as
    `kubectl proxy --accept-hosts` and Jupyter, they get 403 and no fleet data)."""
    git, _ = repo
    with serving(git, allowed_hosts=["dash.example.com"]) as url:
        port = url.rstrip("/").rsplit(":", 1)[1]
        for host in ("attacker.example", f"attacker.example:{port}", f"127.0.0.1.nip.io:{port}",
                     "dash.example.com.attacker.example", "localhost.attacker.example"):
            for path in ("", "api/fleet", "api/cluster/c1", "api/version", "static/app.js"):
                code, _, body = fetch(url + path, headers={"Host": host})
                assert code == 403, (host, path)
                assert b"c1" not in body and b"cluster" not in body
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LocalHost", f"[::1]:{port}",
                     "dash.example.com", "Dash.Example.com:443"):
            code, _, body = fetch(url + "api/fleet", headers={"Host": host})
            assert code == 200 and b"c1" in body, host
    source = FleetSource(git)
    source.fresh()
    server = HTTPThread("127.0.0.2", 0, dashboard_app(source, listen="127.0.0.2"), name="test")
    server.start()
    try:
        url = "http://{}:{}/api/fleet".format(*server.address)
        assert fetch(url)[0] == 200                      # the listen address is its own name
        assert fetch(url, headers={"Host": "attacker.example"})[0] == 403
    finally:
        server.stop()


def test_before_the_first_read_the_api_says_so_and_the_page_still_loads(repo: Any) -> None:
    git, _ = repo
    source = FleetSource(git)
    with source._lock:
        source._refreshing = True            # as if a big fleet's first read were running
    server = HTTPThread("127.0.0.1", 0, dashboard_app(source, warm=False), name="test")
    server.start()
    try:
        url = "http://{}:{}/".format(*server.address)
        code, headers, body = fetch(url + "api/fleet")
        assert code == 503 and headers["retry-after"] == "1"
        assert json.loads(body)["error"].startswith("reading the fleet")
        assert fetch(url)[0] == 200
        with source._lock:
            source._refreshing = False
        source.warm()
        wait_for(lambda: fetch(url + "api/fleet")[0] == 200, what="the first read served")
    finally:
        server.stop()


def test_the_snapshot_is_read_again_only_when_a_branch_moves(repo: Any) -> None:
    git, (first, second) = repo
    now = [1000.0]
    source = FleetSource(git, clock=lambda: now[0])
    one = source.model()
    assert source.model() is one                  # same refs, same second: the same model
    assert one.fleet["stateCommit"] == second
    git.run("update-ref", "refs/heads/gitfleet/state", first)
    source._refs = (-1.0, "")                     # past the fingerprint's short trust
    assert source.model() is one                  # answered at once; re-read in the background
    wait_for(lambda: source.model().fleet["stateCommit"] == first, what="the re-read")
    assert source.model() is source.model()   # and kept until something moves
    now[0] += 3600.0                              # no heartbeat to expire: nothing to re-judge
    time.sleep(0.5)
    assert source.model().view.now == 1000.0


def test_the_export_names_data_files_as_the_page_asks_for_them(repo: Any,
                                                               tmp_path: Path) -> None:
    git, (first, second) = repo
    assert file_key("app/_cluster/metrics-namespace") == "app_2f__5f_cluster_2f_metrics-namespace"
    out = tmp_path / "site"
    write_tree(out, export(FleetSource(git)))
    assert (out / "index.html").exists() and (out / "static" / "app.js").exists()
    written = {p.name for p in (out / "data").iterdir()}
    assert {"fleet.js", "history.js", "meta.js"} <= written
    assert f"{file_key(f'diff/{first}/{second}/c1')}.js" in written
    site = "".join(p.read_text() for p in (out / "data").iterdir())
    assert SECRET_VALUE not in site and OTHER_VALUE not in site


def test_the_static_export_carries_the_served_csp(repo: Any) -> None:
    """A static site has no headers: its page carries the served pages' policy as a <meta>,
    ahead of every script and style sheet (less frame-ancestors, which a <meta> cannot set)."""
    git, _ = repo
    with serving(git) as url:
        served = fetch(url)[1]["content-security-policy"]
    assert served == CSP
    page = export(FleetSource(git))["index.html"].decode()
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert meta is not None

    def directives(text: str) -> dict[str, str]:
        return {d.split()[0]: d for d in text.split("; ")}
    assert directives(meta[1]) == {k: v for k, v in directives(served).items()
                                   if k != "frame-ancestors"}
    assert page.index(meta[0]) < min(page.index("<script"), page.index('rel="stylesheet"'))


def test_a_re_read_parses_only_the_statuses_whose_commit_moved(repo: Any) -> None:
    from gitfleet.fleetview.snapshot import read_snapshot
    from gitfleet.state.statusread import StatusReader
    from gitfleet.wire.status import ClusterStatus

    git, _ = repo
    heads = []
    for name in ("c1", "c2"):
        data = ClusterStatus(cluster=name).to_yaml().encode()
        heads.append(git.commit(git.write_tree({"status.yaml": data}), [], f"{name}: status"))
        git.run("update-ref", f"refs/heads/gitfleet/status/{name}", heads[-1])
    reader = StatusReader(git)
    first = read_snapshot(git, reader=reader)
    assert sorted(first.statuses) == ["c1", "c2"]
    again = read_snapshot(git, previous=first, reader=reader)
    assert again.statuses["c1"] is first.statuses["c1"]            # not parsed again
    assert again.descriptions is first.descriptions                # same state commit
    moved = git.commit(git.write_tree({"status.yaml": ClusterStatus(
        cluster="c2").to_yaml().encode()}), [heads[1]], "c2: heartbeat")
    git.run("update-ref", "refs/heads/gitfleet/status/c2", moved)
    third = read_snapshot(git, previous=again, reader=reader)
    assert third.statuses["c1"] is first.statuses["c1"]
    assert third.statuses["c2"] is not first.statuses["c2"]
    assert third.statuses["c2"] == first.statuses["c2"]            # read again, same content


def test_the_export_writes_only_into_a_new_empty_or_earlier_export_folder(
        repo: Any, tmp_path: Path) -> None:
    git, _ = repo
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "index.html").write_text("my own page\n")
    with pytest.raises(InputError, match="is not empty"):
        write_tree(mine, export(FleetSource(git)))
    assert (mine / "index.html").read_text() == "my own page\n"
    site = tmp_path / "site"
    write_tree(site, export(FleetSource(git)))
    write_tree(site, export(FleetSource(git)))    # an earlier export's folder is written again
    assert (site / "index.html").exists()
