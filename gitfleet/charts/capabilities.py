"""A cluster's capabilities for `helm template`, from the heartbeat its agent reports.

The heartbeat carries `kubernetesVersion` (the API server's gitVersion) and `apiVersions` (the
group/versions it serves, `v1`, `apps/v1`, ...). A cluster that has not reported yet renders with
`fleet.yaml: kubernetesVersion` and Helm's default API versions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from gitfleet.render.charts import Capabilities

_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def from_heartbeat(heartbeat: Mapping[str, Any]) -> Capabilities | None:
    found = _VERSION.match(str(heartbeat.get("kubernetesVersion") or ""))
    if found is None:
        return None
    apis = heartbeat.get("apiVersions") or []
    listed = tuple(sorted({str(a) for a in apis if isinstance(a, str) and a})) \
        if isinstance(apis, list) else ()
    return Capabilities(f"v{found[1]}.{found[2]}.{found[3]}", listed)


def reported_capabilities(statuses: Mapping[str, Mapping[str, Any]]
                          ) -> dict[str, Capabilities]:
    out = {}
    for name, doc in sorted(statuses.items()):
        caps = from_heartbeat(doc.get("heartbeat") or {})
        if caps is not None:
            out[name] = caps
    return out


def capabilities_digest(capabilities: Mapping[str, Capabilities]) -> str:
    return hashlib.sha256(repr(sorted(capabilities.items())).encode()).hexdigest()[:16]
