"""`gitfleet dashboard --out DIR`: the same pages and their data as a static site.

The page is the served one; its data is written as `data/<key>.js` files that hand the JSON to
the page (`gitfleetData(key, data)`), because a page opened from `file://` may load scripts
beside it but not fetch them. The grid's filters and pages then run in the browser. History
holds the newest state commits, and for each the diff of every cluster it changed (bounded).
A static site has no headers of its own, so the page carries the served pages'
Content-Security-Policy as a `<meta>` (less `frame-ancestors`, which a `<meta>` cannot set).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from gitfleet.clock import isoformat
from gitfleet.dashboard import history, views
from gitfleet.dashboard.app import ASSETS, CSP, asset
from gitfleet.dashboard.source import FleetSource

HISTORY = 30            # state commits in the export
DIFFS_PER_COMMIT = 20   # clusters whose diff is written per state commit
# directives a <meta> policy may not carry (CSP3 "delivered via meta"): browsers ignore them
META_IGNORES = ("frame-ancestors", "report-uri", "sandbox")


def file_key(key: str) -> str:
    """The data file's name for `key` (the page computes the same: app.js `fileKey`)."""
    return re.sub(r"[^A-Za-z0-9.-]", lambda m: f"_{ord(m.group(0)):x}_", key)


def page_with_csp() -> bytes:
    """The page with the served CSP as its first `<head>` element: it holds before any script
    or style sheet loads."""
    kept = "; ".join(d for d in CSP.split("; ") if not d.startswith(META_IGNORES))
    html = asset("index.html").decode()
    head = html.index("<head>") + len("<head>")
    meta = f'\n<meta http-equiv="Content-Security-Policy" content="{kept}">'
    return (html[:head] + meta + html[head:]).encode()


def export(source: FleetSource) -> dict[str, bytes]:
    """The site's files by their path in the export folder (the page, its assets and one data
    file per view); the caller writes them (gitfleet.cli.outdir: only into a folder that is new,
    empty or an earlier export's)."""
    m = source.fresh()
    files: dict[str, bytes] = {"index.html": page_with_csp()}
    for name in ASSETS:
        if name != "index.html":
            files[f"static/{name}"] = asset(name)

    def put(key: str, data: Any) -> None:
        body = json.dumps(data, separators=(",", ":"), default=str)
        # `</` cannot close a script element from inside a string
        body = body.replace("</", "<\\/")
        files[f"data/{file_key(key)}.js"] = \
            f"gitfleetData({json.dumps(key)},{body});\n".encode()

    fleet = {k: v for k, v in m.fleet.items() if k != "signature"}
    put("fleet", fleet)
    put("meta", {"stateCommit": m.view.snap.state_commit or "",
                 "generated": isoformat(time.time())})
    for c in m.fleet["clusters"]:
        data = views.cluster(m.view, m.cells.get(c["name"]), c["name"])
        if data is not None:
            head = history.status_head(source.git, source.branches, m.view.snap, c["name"])
            data["history"] = history.status_log(source.git, head) if head else []
            put(f"cluster/{c['name']}", data)
    for a in m.fleet["apps"]:
        data = views.app(m.view, m.fleet, a["key"], m.cells, m.units)
        if data is not None:   # every cluster: the page cuts its pages from file://
            put(f"app/{a['key']}", views.app_page(data, limit=max(1, len(data["clusters"]))))
    state = m.view.snap.state_commit
    commits = history.state_log(source.git, state, limit=HISTORY) if state else []
    for newer, older in zip(commits, commits[1:], strict=False):
        changed = sorted(history.changed_clusters(source.git, older["commit"], newer["commit"]))
        newer["changed"] = changed[:DIFFS_PER_COMMIT]
        for name in newer["changed"]:
            put(f"diff/{older['commit']}/{newer['commit']}/{name}", {
                "a": older["commit"], "b": newer["commit"], "cluster": name,
                "objects": history.object_diff(source.git, older["commit"], newer["commit"],
                                               name)})
    put("history", {"commits": commits, "offset": 0, "limit": HISTORY,
                    "clusters": [c["name"] for c in m.fleet["clusters"]]})
    return files
