"""History from Git: the state branch's commits, a cluster's status log, and what a cluster ran
between two state commits, object by object.

Every answer here is a function of commit ids, so the caller caches it forever (bounded). A
Secret's values never leave this module: both versions go through
`gitfleet.secrets.redact.hide_secret_data` (`data`, `stringData`, the annotations that copy the
object), whose placeholders say only whether a value changed between the two commits.
"""

from __future__ import annotations

import difflib
import logging
import re
from typing import TYPE_CHECKING, Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.secrets.redact import HIDDEN, hide_old_words, hide_secret_data
from gitfleet.state.git import Git
from gitfleet.wire.autoscalingstatus import read_fhpa_status

if TYPE_CHECKING:
    from gitfleet.fleetview.snapshot import FleetSnapshot

LOG = logging.getLogger("gitfleet.dashboard.history")
_SEP, _END = "\x1f", "\x1e"
_TRAILER = re.compile(r"^Source-Commit:\s*([0-9a-f]{7,40})\s*$", re.M)
_SHA = re.compile(r"^[0-9a-f]{4,40}$")


def is_sha(text: str) -> bool:
    return bool(_SHA.match(text))


def _log(git: Git, ref: str, *args: str) -> list[list[str]]:
    fmt = _SEP.join(("%H", "%an", "%ct", "%s", "%b")) + _END
    out = git.run("log", f"--format={fmt}", *args, ref, "--", check=False).decode(
        "utf-8", "replace")
    return [entry.strip("\n").split(_SEP) for entry in out.split(_END) if entry.strip()]


def state_log(git: Git, state: str, *, offset: int = 0, limit: int = 50) -> list[dict[str, Any]]:
    """State commits, newest first, with the source commit each was rendered from (its author
    and subject) and the `git revert` that undoes that source change."""
    rows: list[dict[str, Any]] = []
    for sha, author, when, subject, body in _log(git, state, f"--skip={offset}",
                                                 f"-n{limit}"):
        m = _TRAILER.search(body)
        rows.append({"commit": sha, "author": author, "time": int(when), "subject": subject,
                     "sourceCommit": m.group(1) if m else ""})
    sources = [str(r["sourceCommit"]) for r in rows if r["sourceCommit"]]
    info = {}
    if sources:
        fmt = _SEP.join(("%H", "%an", "%ct", "%s")) + _END
        out = git.run("show", "-s", "--no-walk=unsorted", f"--format={fmt}", *sources,
                      check=False).decode("utf-8", "replace")
        for entry in out.split(_END):
            parts = entry.strip("\n").split(_SEP)
            if len(parts) == 4:
                info[parts[0]] = {"author": parts[1], "time": int(parts[2]), "subject": parts[3]}
    for r in rows:
        wanted = str(r["sourceCommit"])
        src = info.get(wanted) or next(
            (v for k, v in info.items() if wanted and k.startswith(wanted)), None)
        r["source"] = src or {}
        r["revert"] = f"git revert --no-edit {r['sourceCommit']}" if r["sourceCommit"] else ""
    return rows


def status_head(git: Git, branches: Branches, snap: FleetSnapshot, cluster: str) -> str:
    """Where a cluster's status history starts: the status commit the fold believes, read
    from the cluster's own place (its status repository, fetched into this one, or the fleet
    repo); else its branch in the fleet repo ("" when neither)."""
    return snap.status_commits.get(cluster) or git.resolve(branches.status(cluster)) or ""


def status_log(git: Git, ref: str, *, limit: int = 50) -> list[dict[str, Any]]:
    """A cluster's status branch, newest first: when, by whom, what it said (a Secret's
    values an older agent wrote into a subject cut off)."""
    return [{"commit": sha, "author": author, "time": int(when),
             "subject": hide_old_words(subject)}
            for sha, author, when, subject, _ in _log(git, ref, f"-n{limit}")]


def changed_clusters(git: Git, since: str, state: str) -> dict[str, list[str]]:
    """cluster -> the Description folders whose files differ between two state commits (a
    cluster whose `cluster.yaml` alone changed, e.g. a taint, maps to no folder)."""
    out = git.run("diff", "--name-only", "--no-renames", since, state, "--", "clusters/",
                  check=False).decode()
    changed: dict[str, list[str]] = {}
    for path in out.splitlines():
        parts = path.split("/")
        if len(parts) >= 3:     # a Description's files, or the cluster's own cluster.yaml
            folder = f"{parts[2]}/{parts[3]}" if len(parts) >= 5 else ""
            found = changed.setdefault(parts[1], [])
            if folder and folder not in found:
                found.append(folder)
    return changed


def object_diff(git: Git, a: str, b: str, cluster: str) -> list[dict[str, Any]]:
    """What `cluster` ran at state commit `a` against `b`: one entry per object file that was
    added, removed or changed, with a unified diff (Secret values hidden)."""
    prefix = f"clusters/{cluster}/"
    old, new = git.ls_tree(a, prefix), git.ls_tree(b, prefix)
    paths = sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
    blobs = git.read_objects([s for p in paths for s in (old.get(p), new.get(p)) if s])
    out = []
    for path in paths:
        before = blobs.get(old.get(path, ""), b"")
        after = blobs.get(new.get(path, ""), b"")
        rel = path[len(prefix):]
        name = rel.rsplit("/", 1)[-1]
        if _is_secret(name, before or after):
            before, after = _hide_secret(before, after)
        lines = list(difflib.unified_diff(
            before.decode("utf-8", "replace").splitlines(),
            after.decode("utf-8", "replace").splitlines(),
            f"a/{rel}", f"b/{rel}", lineterm="", n=3))
        out.append({"path": rel, "change": "added" if path not in old else
                    "removed" if path not in new else "changed", "diff": lines})
    return out


def _is_secret(file_name: str, data: bytes) -> bool:
    return "_Secret_" in file_name or bool(re.search(rb"^kind: Secret\s*$", data, re.M))


def _hide_secret(before: bytes, after: bytes) -> tuple[bytes, bytes]:
    """Both versions with every value hidden; a value that differs between them gets another
    placeholder (so a diff shows that it moved, never what)."""
    docs = [_load(before), _load(after)]
    b, a = hide_secret_data(*({**d, "kind": "Secret"} if d is not None else None
                              for d in docs))
    return (yamlio.dump(dict(b)).encode() if b is not None else b"",
            yamlio.dump(dict(a)).encode() if a is not None else b"")


def _load(data: bytes) -> dict[str, Any] | None:
    if not data:
        return None
    try:
        doc = yamlio.load_one(data, "secret")
    except InputError:
        return {"unreadable": HIDDEN}
    return doc if isinstance(doc, dict) else {"unreadable": HIDDEN}


def replicas_over_time(git: Git, ref: str, path: str, *, limit: int = 30
                       ) -> list[dict[str, Any]]:
    """An autoscaler's replicas at each of the last `limit` commits that changed its status
    file on the fleet-status branch, oldest first: when, current and desired."""
    out = git.run("log", f"-n{limit}", "--format=%H %ct", ref, "--", path, check=False).decode()
    commits = [line.split() for line in out.splitlines() if len(line.split()) == 2]
    if not commits:
        return []
    blobs = git.run("cat-file", "--batch", input="".join(
        f"{sha}:{path}\n" for sha, _ in commits).encode())
    rows, pos = [], 0
    for sha, when in commits:
        nl = blobs.index(b"\n", pos)
        header = blobs[pos:nl].split()
        pos = nl + 1
        if len(header) != 3:
            continue
        size = int(header[2])
        data = blobs[pos:pos + size]
        pos += size + 1
        try:
            status = read_fhpa_status(data, path)
        except InputError as exc:      # a version gitfleet did not write: no point of the chart
            log(LOG, logging.WARNING, "autoscaler status unreadable", commit=sha,
                path=path, error=exc.format())
            continue
        rows.append({"time": int(when), "current": status.current,
                     "desired": status.desired})
    return rows[::-1]
