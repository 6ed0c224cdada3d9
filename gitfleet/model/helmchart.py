"""Every upstream HelmChart field, read in a rendered-manifest world.

The hub renders charts with `helm template` and agents apply the objects; there is no release
in the clusters. Each field of Clusternet's HelmChart therefore gets its nearest meaning here,
or is refused by name with the reason (docs/helm.md lists them all):

- repo, chart, version, targetNamespace, createNamespace, values, chartPullSecret, plainHTTP,
  skipCRDs, disableHooks: as upstream (the hub resolves, fetches and renders).
- wait, waitForJob: always so: a Description's phase is Success only once every object is
  healthy (a Job complete); `false` cannot be had and is a warning.
- timeoutSeconds: recorded with the chart in description.yaml (a warning says the agent does
  not yet turn a Description to Failure after it).
- replaceCRDs: always so: CRDs are applied and updated like any object; `false` is a warning.
- replace: nothing to do (no release records to replace); `true` is a warning.
- atomic, upgradeAtomic, force: refused when true (see REFUSED for why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REFUSED = {
    "atomic": "gitfleet never rolls a cluster back by itself: a chart that does not render "
              "keeps the last good Description, and reverting the commit is the rollback (Git "
              "is the release history); a RolloutPolicy with onFailure: Pause stops a bad "
              "version from spreading",
    "upgradeAtomic": "gitfleet never rolls a cluster back by itself: reverting the commit is "
                     "the rollback (Git is the release history)",
    "force": "agents apply with server-side apply and never delete and re-create an object "
             "to update it (helm's --force); an immutable field is changed by renaming the "
             "object",
}

WARNED_WHEN = {
    ("wait", False): "has no effect: the Description's phase always waits for every object "
                     "to be healthy",
    ("waitForJob", False): "has no effect: the Description's phase always waits for its Jobs "
                           "to complete",
    ("replaceCRDs", False): "has no effect: the CRDs of crds/ are applied and updated like any "
                            "object (skipCRDs leaves them out)",
    ("replace", True): "has no effect: there are no release records in the clusters, so no "
                       "release name to reuse",
}

TIMEOUT_NOTE = ("is recorded in description.yaml; the agent does not yet turn the Description "
                "to Failure when it runs out (its phase stays Progressing)")


def problems(spec: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(field, message, is_warning) for each field the render cannot honour as written."""
    found = []
    for name, reason in REFUSED.items():
        if spec.get(name) is True:
            found.append((name, f"`spec.{name}: true` is not supported: {reason}", False))
    for (name, value), text in WARNED_WHEN.items():
        if name in spec and spec[name] is value:
            found.append((name, f"`spec.{name}: {str(value).lower()}` {text}", True))
    if "timeoutSeconds" in spec:
        found.append(("timeoutSeconds", f"`spec.timeoutSeconds` {TIMEOUT_NOTE}", True))
    return found
