"""The replicas of a rendered workload file (`clusters/<c>/<ns>/<desc>/<g>_<Kind>_<ns>_<n>.yaml`).

The render writes these files and the hub's autoscaling reads back how it divided a total.
Only `spec.replicas` is read; anything else in the manifest is Kubernetes' to judge, so this
reader checks the shape it needs and says which file it could not read.
"""

from __future__ import annotations

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.wire.fields import mapping


def rendered_replicas(data: bytes | str, path: str) -> int | None:
    """`spec.replicas` of the rendered manifest `path` (None when it has none); InputError
    naming `path` and the field when the file is not a manifest with a numeric count."""
    doc = mapping(yamlio.load_one(data, path), path, "a rendered workload")
    spec = mapping(doc.get("spec"), path, "spec")
    value = spec.get("replicas")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"spec.replicas must be a number, not {value!r}", path=path)
    return value
