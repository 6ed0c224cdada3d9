"""What a real server's typed decoding does to a built-in object before it stores it.

Go structs drop nulls, omit empty maps and lists (`omitempty`), canonicalise quantities
(`0.5` CPU is `500m`, `1024Mi` is `1Gi`) and drop fields they do not know. Each is a classic
source of false drift for a naive diff, so kubesim does the same for built-in kinds.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from gitfleet.quantity import quantity_parts

# String-keyed maps (Go map types, omitempty): dropped when empty.
MAP_FIELDS = frozenset({"labels", "annotations", "data", "binaryData", "stringData",
                        "nodeSelector", "matchLabels", "limits", "requests", "capacity",
                        "allocatable", "hard", "parameters", "used", "selector"})
# Lists that are not omitempty in the Go types: kept when empty.
KEPT_LISTS = frozenset({"containers", "rules", "versions", "items", "conditions"})
QUANTITY_MAPS = frozenset({"limits", "requests", "capacity", "allocatable", "hard", "used",
                           "max", "min", "default", "defaultRequest",
                           "maxLimitRequestRatio"})

_COMMON = ("apiVersion", "kind", "metadata")
TOP_LEVEL: dict[str, tuple[str, ...]] = {
    "ConfigMap": ("data", "binaryData", "immutable"),
    "Secret": ("data", "stringData", "type", "immutable"),
    "ServiceAccount": ("secrets", "imagePullSecrets", "automountServiceAccountToken"),
    "Event": ("involvedObject", "reason", "message", "source", "firstTimestamp",
              "lastTimestamp", "count", "type", "eventTime", "series", "action", "related",
              "reportingComponent", "reportingInstance"),
    "Endpoints": ("subsets",),
    "Role": ("rules",),
    "ClusterRole": ("rules", "aggregationRule"),
    "RoleBinding": ("subjects", "roleRef"),
    "ClusterRoleBinding": ("subjects", "roleRef"),
    "StorageClass": ("provisioner", "parameters", "reclaimPolicy", "mountOptions",
                     "allowVolumeExpansion", "volumeBindingMode", "allowedTopologies"),
    "PriorityClass": ("value", "globalDefault", "description", "preemptionPolicy"),
    "ControllerRevision": ("data", "revision"),
}
META_FIELDS = frozenset({"name", "generateName", "namespace", "selfLink", "uid",
                         "resourceVersion", "generation", "creationTimestamp",
                         "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                         "annotations", "ownerReferences", "finalizers", "managedFields"})

_DECIMAL_BY_EXP = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P",
                   18: "E"}
_BINARY_BY_POWER = {1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}


def unknown_fields(kind: str, obj: dict[str, Any]) -> list[str]:
    """Top-level and metadata fields a built-in kind does not have."""
    allowed = TOP_LEVEL.get(kind, ("spec", "status"))
    out = [k for k in obj if k not in _COMMON and k not in allowed]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        out += [f"metadata.{k}" for k in meta if k not in META_FIELDS]
    return out


def drop_unknown(obj: dict[str, Any], paths: list[str]) -> None:
    for path in paths:
        if path.startswith("metadata."):
            obj.get("metadata", {}).pop(path.split(".", 1)[1], None)
        else:
            obj.pop(path, None)


def canonical_quantity(text: str) -> str:
    """The canonical form the API server stores a resource quantity in (text that is not a
    Kubernetes quantity is kept as it is)."""
    try:
        parts = quantity_parts(text) if isinstance(text, str) else None
    except ValueError:
        return text
    if parts is None or (parts.exponent is not None and parts.suffix):
        return text                     # `1e3k`: gitfleet reads it, Kubernetes has no such form
    value = parts.value
    if parts.binary:
        if value.denominator == 1 and abs(value) >= 1024:
            n = int(value)
            power = 0
            while power < 6 and n % 1024 == 0:
                n //= 1024
                power += 1
            if power:
                return f"{n}{_BINARY_BY_POWER[power]}"
        return _decimal(value, exponent_form=False)
    return _decimal(value, exponent_form=parts.exponent is not None)


def _decimal(value: Fraction, *, exponent_form: bool) -> str:
    if value == 0:
        return "0"
    # round up to nano units, as the server does
    nanos = value * 10**9
    if nanos.denominator != 1:
        nanos = Fraction(-((-nanos.numerator) // nanos.denominator))
    n = int(nanos)
    exp = -9
    while n % 1000 == 0 and exp < 18:
        n //= 1000
        exp += 3
    if exponent_form:
        return f"{n}e{exp}" if exp else str(n)
    return f"{n}{_DECIMAL_BY_EXP[exp]}"


def normalize(kind: str, obj: Any, parent: str = "", *, keep_nulls: bool = False) -> Any:
    """Drop nulls and empty omitempty fields, canonicalise quantities (in place).

    `keep_nulls` leaves explicit nulls for an applied configuration, where null means
    "remove this field"."""
    if isinstance(obj, dict):
        for key in list(obj):
            value = obj[key]
            if value is None:
                if not keep_nulls:
                    del obj[key]
                continue
            if parent in QUANTITY_MAPS and isinstance(value, str | int | float) \
                    and not isinstance(value, bool):
                obj[key] = canonical_quantity(str(value))
                continue
            normalize(kind, value, key, keep_nulls=keep_nulls)
            empty_map = isinstance(value, dict) and not value and key in MAP_FIELDS
            empty_list = isinstance(value, list) and not value and key not in KEPT_LISTS
            if empty_map or empty_list:
                del obj[key]
    elif isinstance(obj, list):
        for item in obj:
            normalize(kind, item, parent, keep_nulls=keep_nulls)
    return obj
