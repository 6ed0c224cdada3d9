"""How built-in lists and maps merge: associative keys, sets and atomic values.

Server-side apply and strategic merge patch both need to know that containers are keyed by
name, container ports by containerPort and protocol, and that a label selector is replaced
whole. A real server reads this from its OpenAPI schema; kubesim keeps the few rules that
the kinds fleets deploy rely on. Lists and maps not named here are atomic / granular, as for
custom resources without list annotations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Names = tuple[str, ...]

_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})
_BY_NAME = frozenset({"env", "volumes", "imagePullSecrets", "resourceClaims",
                      "schedulingGates"})
_ATOMIC_SELECTORS = frozenset({"selector", "podSelector", "namespaceSelector", "labelSelector",
                               "roleRef", "scaleTargetRef"})


@dataclass(frozen=True)
class ListRule:
    """How one list merges: 'map' with keys (and defaults for missing key fields),
    'set' of scalars, or 'atomic' (replaced whole). `patch_key` is the strategic-merge key."""

    kind: str
    keys: tuple[str, ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()
    patch_key: str = ""


ATOMIC = ListRule("atomic")
SET = ListRule("set", patch_key="$set")


def _in_container(names: Names) -> bool:
    return any(n in _CONTAINER_LISTS for n in names)


def list_rule(kind: str, names: Names) -> ListRule:
    """The merge rule of the list at field path `names` (field names only) in `kind`."""
    last = names[-1] if names else ""
    if last in _CONTAINER_LISTS:
        return ListRule("map", ("name",), patch_key="name")
    if last == "ports":
        if _in_container(names[:-1]):
            return ListRule("map", ("containerPort", "protocol"), (("protocol", "TCP"),),
                            patch_key="containerPort")
        if kind == "Service" and names == ("spec", "ports"):
            return ListRule("map", ("port", "protocol"), (("protocol", "TCP"),),
                            patch_key="port")
        return ATOMIC
    if last in _BY_NAME:
        return ListRule("map", ("name",), patch_key="name")
    if last == "volumeMounts":
        return ListRule("map", ("mountPath",), patch_key="mountPath")
    if last == "volumeDevices":
        return ListRule("map", ("devicePath",), patch_key="devicePath")
    if last == "hostAliases":
        return ListRule("map", ("ip",), patch_key="ip")
    if last == "topologySpreadConstraints":
        return ListRule("map", ("topologyKey", "whenUnsatisfiable"),
                        patch_key="topologyKey")
    if last == "ownerReferences" and names == ("metadata", "ownerReferences"):
        return ListRule("map", ("uid",), patch_key="uid")
    if last == "finalizers" and names in (("metadata", "finalizers"), ("spec", "finalizers")):
        return SET
    if last == "conditions":
        return ListRule("map", ("type",), patch_key="type")
    if kind == "CustomResourceDefinition" and names == ("spec", "versions"):
        return ListRule("map", ("name",))
    return ATOMIC


def map_is_atomic(kind: str, names: Names) -> bool:
    """True where a map is replaced whole (label selectors, role refs)."""
    if not names or names[-1] not in _ATOMIC_SELECTORS:
        return False
    return not (kind in ("Service", "ReplicationController") and names == ("spec", "selector"))


def item_key(rule: ListRule, item: Any) -> dict[str, Any]:
    """The associative key of a list item, with defaults filled for missing key fields."""
    defaults = dict(rule.defaults)
    if not isinstance(item, dict):
        return {}
    return {k: item.get(k, defaults.get(k)) for k in rule.keys
            if k in item or k in defaults}
