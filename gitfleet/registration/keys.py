"""Which key a cluster's agent signs with, as the fleet repo says.

The ManagedCluster (`clusters/<name>.yaml` on the source branch) names it in `spec.signingKey`,
copied there from the registration request when the hub approved it. Before a cluster has a
ManagedCluster, the only key known for it is the one its registration request publishes. These
readers serve the pre-receive hook and `gitfleet status`, which read the repository without
loading the whole fleet; the hub takes the keys from the fleet it loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.layout import PUSHED_MODES, Branches
from gitfleet.registration.request import REQUEST_FILE, parse
from gitfleet.state.git import Git


@dataclass(frozen=True)
class ClusterKey:
    """`clusters/<name>.yaml` as far as signing goes: whether it exists, its key line ("" when it
    names none) and why it could not be read ("" when it could)."""

    exists: bool
    line: str = ""
    path: str = ""
    problem: str = ""
    sync_mode: str = "Pull"   # Push and Dual: the hub's push worker writes status too

    @property
    def hub_writes_status(self) -> bool:
        return self.sync_mode in PUSHED_MODES


def key_id(line: str) -> tuple[str, ...]:
    """An SSH public key line without its comment: (type, base64 key)."""
    return tuple(line.split()[:2])


def _key_of(doc: Any) -> str:
    spec = doc.get("spec") if isinstance(doc, dict) else None
    value = spec.get("signingKey") if isinstance(spec, dict) else None
    return value if isinstance(value, str) else ""


def _mode_of(doc: Any) -> str:
    spec = doc.get("spec") if isinstance(doc, dict) else None
    value = spec.get("syncMode") if isinstance(spec, dict) else None
    return value if isinstance(value, str) else "Pull"


def cluster_key(git: Git, rev: str, name: str) -> ClusterKey:
    """The signing key `clusters/<name>.yaml` at `rev` names."""
    for path in (f"clusters/{name}.yaml", f"clusters/{name}.yml"):
        data = git.read_blob(rev, path)
        if data is None:
            continue
        try:
            doc = yamlio.load_one(data, path)
        except InputError as exc:
            return ClusterKey(exists=True, path=path, problem=exc.message)
        return ClusterKey(exists=True, line=_key_of(doc), path=path, sync_mode=_mode_of(doc))
    return ClusterKey(exists=False)


def cluster_keys(git: Git, rev: str) -> dict[str, ClusterKey]:
    """Every cluster file at `rev` by cluster name (unreadable ones carry their problem)."""
    out: dict[str, ClusterKey] = {}
    for path, data in sorted(git.read_files(rev, "clusters/").items()):
        stem = cluster_of(path)
        if stem is not None:
            out[stem] = key_in(path, data)
    return out


def cluster_of(path: str) -> str | None:
    """The cluster `clusters/<name>.yaml` (or .yml) is the ManagedCluster of (None: not one)."""
    stem, dot, ext = path[len("clusters/"):].rpartition(".")
    if not path.startswith("clusters/") or not dot or "/" in stem or ext not in ("yaml", "yml"):
        return None
    return stem


def key_in(path: str, data: bytes) -> ClusterKey:
    """The signing key one ManagedCluster file names (for a reader that caches it by blob)."""
    try:
        doc = yamlio.load_one(data, path)
    except InputError as exc:
        return ClusterKey(exists=True, path=path, problem=exc.message)
    return ClusterKey(exists=True, line=_key_of(doc), path=path, sync_mode=_mode_of(doc))


def requested_key(git: Git, branches: Branches, name: str) -> str:
    """The key the cluster's registration request (the tip of its branch) publishes, or ""."""
    tip = git.resolve(branches.registration(name))
    raw = git.read_blob(tip, REQUEST_FILE) if tip else None
    if raw is None:
        return ""
    try:
        request, _ = parse(raw)
    except InputError:
        return ""
    return request.signing_key
