"""A cluster's capabilities for `helm template`, from the heartbeat its agent reports.

The heartbeat carries `kubernetesVersion` (the API server's gitVersion) and `apiVersions` (the
group/versions it serves, `v1`, `apps/v1`, ...). A cluster that has not reported yet renders with
`fleet.yaml: kubernetesVersion` and Helm's default API versions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from gitfleet.render.charts import Capabilities
from gitfleet.wire.status import ClusterStatus, Heartbeat

_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def from_heartbeat(heartbeat: Heartbeat) -> Capabilities | None:
    found = _VERSION.match(heartbeat.kubernetes_version)
    if found is None:
        return None
    listed = tuple(sorted({a for a in heartbeat.api_versions if a}))
    return Capabilities(f"v{found[1]}.{found[2]}.{found[3]}", listed)


def reported_capabilities(statuses: Mapping[str, ClusterStatus]) -> dict[str, Capabilities]:
    out = {}
    for name, status in sorted(statuses.items()):
        caps = from_heartbeat(status.heartbeat) if status.heartbeat is not None else None
        if caps is not None:
            out[name] = caps
    return out


def capabilities_digest(capabilities: Mapping[str, Capabilities]) -> str:
    return hashlib.sha256(repr(sorted(capabilities.items())).encode()).hexdigest()[:16]
