"""The simulated fleet's repositories, built in seconds with `git fast-import`.

One seed repository holds, for N clusters, the cluster branch (a small rendered tree) and, per
scenario, the status branch (a heartbeat-only status.yaml commit, as a live agent leaves it) of
each, under `refs/gitsim/<scenario>/`. Served repositories and the simulated agents' local
repositories borrow the seed's objects through `objects/info/alternates` (with the seed's refs
hidden from them), so nothing is copied; what the hub or an agent writes afterwards lands in
that repository's own object store, so a fetch of a change moves real objects.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from gitfleet import yamlio
from gitfleet.agent.heartbeat import build_heartbeat
from gitfleet.agent.statusmessage import Message
from gitfleet.clock import isoformat
from gitfleet.layout import STATUS_FILE, Branches
from gitfleet.wire.status import ClusterStatus

BRANCHES = Branches()
IDENTITY = "gitsim <gitsim@example.invalid>"
_NAME, _TIME = "c99999", "2000-01-01T00:00:00Z"


def cluster_name(i: int) -> str:
    return f"c{i:05d}"


def _template(interval: float, tolerance: float) -> ClusterStatus:
    """The status a live, idle agent writes: its heartbeat and nothing else changing."""
    hb = build_heartbeat(time=_TIME, interval_seconds=int(interval),
                         version={"gitVersion": "v1.30.0", "platform": "linux/amd64"},
                         healthz=True, livez=True, readyz=True,
                         nodes=[{"status": {"capacity": {"cpu": "4", "memory": "8Gi"},
                                            "allocatable": {"cpu": "4", "memory": "8Gi"},
                                            "conditions": [{"type": "Ready",
                                                            "status": "True"}]}}],
                         pods=[], cluster_id=f"uid-{_NAME}", app_pusher=False)
    return ClusterStatus(cluster=_NAME, heartbeat=replace(hb, tolerance_seconds=int(tolerance)))


def cluster_files(cluster: str, generation: int) -> dict[str, bytes]:
    """A small rendered cluster tree: cluster.yaml and one Description with one object."""
    desc = (f"apiVersion: gitfleet.io/v1alpha1\nkind: Description\nmetadata:\n"
            f"  name: web\n  namespace: apps\nspec:\n  generation: {generation}\n")
    obj = (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: apps\n"
           f"data:\n  cluster: {cluster}\n  generation: '{generation}'\n")
    return {"cluster.yaml": f"name: {cluster}\nlabels:\n  env: prod\n".encode(),
            "apps/web/description.yaml": desc.encode(),
            "apps/web/core_ConfigMap_apps_web.yaml": obj.encode()}


@dataclass
class Statuses:
    """One scenario's status branches in the seed: tips, parsed statuses, true last beats."""

    interval: float
    tolerance: float
    tips: dict[str, str] = field(default_factory=dict)
    statuses: dict[str, ClusterStatus] = field(default_factory=dict)
    last_beat: dict[str, float] = field(default_factory=dict)


@dataclass
class Fleet:
    """The seed repository and each cluster's branch tips in it."""

    seed: Path
    clusters: list[str]
    cluster_tips: dict[str, str] = field(default_factory=dict)
    scenarios: dict[str, Statuses] = field(default_factory=dict)


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def _import(repo: Path, chunks: list[bytes]) -> None:
    chunks.append(b"done\n")
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet", "--done"],
                   input=b"".join(chunks), check=True)


def _refs(repo: Path, prefix: str) -> dict[str, str]:
    out = subprocess.run(["git", "-C", str(repo), "for-each-ref", "--format=%(objectname) "
                          "%(refname)", prefix], check=True, capture_output=True).stdout
    refs = {}
    for line in out.decode().splitlines():
        sha, ref = line.split(" ", 1)
        refs[ref[len(prefix):]] = sha
    return refs


def build_seed(path: Path, clusters: int, *, now: float) -> Fleet:
    """Create the seed repository at `path` with every cluster branch."""
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    names = [cluster_name(i) for i in range(clusters)]
    fleet = Fleet(seed=path, clusters=names)
    chunks: list[bytes] = []
    for name in names:
        files = cluster_files(name, 1)
        chunks.append(b"commit %s\ncommitter %s %d +0000\n" % (
            BRANCHES.cluster(name).encode(), IDENTITY.encode(), int(now))
            + _data(f"render {name}\n\nSource-Commit: {'1' * 40}\n".encode()))
        chunks += [b"M 100644 inline %s\n" % p.encode() + _data(body)
                   for p, body in files.items()]
        chunks.append(b"\n")
    _import(path, chunks)
    fleet.cluster_tips = _refs(path, BRANCHES.cluster(""))
    return fleet


def add_statuses(fleet: Fleet, scenario: str, *, interval: float, tolerance: float,
                 last_beat: dict[str, float]) -> Statuses:
    """Status branches for `scenario`: each cluster's heartbeat-only status, last beaten at
    `last_beat[cluster]` with heartbeat interval `interval` (0 tolerance: the old rule of
    three intervals, as today's agents declare none)."""
    template = _template(interval, tolerance)
    text = yamlio.dump(template.to_dict())
    prefix = f"refs/gitsim/{scenario}/"
    out = Statuses(interval=interval, tolerance=tolerance or 3 * interval,
                   last_beat=dict(last_beat))
    chunks: list[bytes] = []
    for name in fleet.clusters:
        when = isoformat(last_beat[name])
        assert template.heartbeat is not None
        out.statuses[name] = replace(template, cluster=name, heartbeat=replace(
            template.heartbeat, time=when, cluster_id=f"uid-{name}"))
        body = text.replace(_NAME, name).replace(_TIME, when).encode()
        msg = Message(f"{name}: heartbeat", heartbeat_only=True).text().encode()
        chunks.append(b"commit %s%s\ncommitter %s %d +0000\n" % (
            prefix.encode(), name.encode(), IDENTITY.encode(), int(last_beat[name]))
            + _data(msg) + b"M 100644 inline %s\n" % STATUS_FILE.encode() + _data(body)
            + b"\n")
    _import(fleet.seed, chunks)
    out.tips = _refs(fleet.seed, prefix)
    fleet.scenarios[scenario] = out
    return out


def borrow(seed: Path, path: Path, *, refs: dict[str, str] | None = None) -> Path:
    """A bare repository at `path` that reads the seed's objects (alternates, the seed's refs
    hidden) and holds `refs` (full ref name -> commit)."""
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    (path / "objects" / "info" / "alternates").write_text(str(seed / "objects") + "\n")
    for key, value in (("http.receivepack", "true"),
                       # the seed's refs are no business of this repository's clients
                       ("core.alternateRefsCommand", "true")):
        subprocess.run(["git", "-C", str(path), "config", key, value], check=True)
    if refs:
        lines = sorted(f"{sha} {ref}\n" for ref, sha in refs.items())
        lines.sort(key=lambda s: s.split(" ", 1)[1])
        (path / "packed-refs").write_text("# pack-refs with: peeled fully-peeled sorted \n"
                                          + "".join(lines))
    return path


def cluster_refs(fleet: Fleet) -> dict[str, str]:
    return {BRANCHES.cluster(c): sha for c, sha in fleet.cluster_tips.items()}


def status_refs(statuses: Statuses, clusters: list[str]) -> dict[str, str]:
    return {BRANCHES.status(c): statuses.tips[c] for c in clusters}
