"""The size limits of a real API server and its etcd, so that what is too big for a cluster is
too big for kubesim too (an agent that only ever met an unlimited store would find out in
production).

Three boundaries, each answered as the real server answers (Kubernetes 1.31, etcd 3.5):

* the request body of a write (create, update, patch, delete) over 3 MiB
  (`MaxRequestBodyBytes`): 413 `RequestEntityTooLarge`,
  `Request entity too large: limit is 3145728`, before anything is decoded;
* validation (422 `Invalid`): a ConfigMap's `data` + `binaryData` values over 1 MiB
  (`[]: Too long: may not be more than 1048576 bytes`), a Secret's `data` likewise
  (`data: Too long: ...`), annotations over 256 KiB (`metadata.annotations: Too long: ...`);
  servers before 1.30 worded these `must have at most N bytes`;
* etcd's request limit (`--max-request-bytes`, 1.5 MiB by default) on the stored object:
  500 with no reason, `etcdserver: request is too large` (the API server passes etcd's error
  through; kubernetes/kubernetes#112152). etcd counts the protobuf encoding; kubesim counts the
  compact JSON it stores, which is close for objects made of strings and a little larger for
  deeply nested ones.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from gitfleet.kubesim.status import ApiError, Cause

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024        # apiserver MaxRequestBodyBytes
MAX_DATA_BYTES = 1024 * 1024                    # core.MaxSecretSize (ConfigMap and Secret)
MAX_ANNOTATIONS_BYTES = 256 * 1024              # TotalAnnotationSizeLimitB
ETCD_MAX_REQUEST_BYTES = 1536 * 1024            # etcd --max-request-bytes default

BODY_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def too_long(path: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be more than {limit} bytes", path)


def body_error(verb: str, body: bytes) -> ApiError | None:
    """The 413 a write with a body over the limit gets, or None."""
    if verb in BODY_VERBS and len(body) > MAX_REQUEST_BODY_BYTES:
        return ApiError(413, "RequestEntityTooLarge",
                        f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}")
    return None


def annotation_causes(annotations: Any) -> list[Cause]:
    if not isinstance(annotations, dict):
        return []
    total = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    return [too_long("metadata.annotations", MAX_ANNOTATIONS_BYTES)] \
        if total > MAX_ANNOTATIONS_BYTES else []


def _decoded_len(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value))   # reported as illegal base64 by the data checks


def data_causes(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """A ConfigMap's or Secret's values over 1 MiB (keys do not count, as upstream)."""
    if kind == "ConfigMap":
        data, binary = obj.get("data"), obj.get("binaryData")
        total = sum(len(str(v).encode()) for v in data.values()) \
            if isinstance(data, dict) else 0
        total += sum(_decoded_len(v) for v in binary.values()) \
            if isinstance(binary, dict) else 0
        return [too_long("[]", MAX_DATA_BYTES)] if total > MAX_DATA_BYTES else []
    if kind == "Secret":
        data = obj.get("data")
        total = sum(_decoded_len(v) for v in data.values()) if isinstance(data, dict) else 0
        return [too_long("data", MAX_DATA_BYTES)] if total > MAX_DATA_BYTES else []
    return []


def stored_size(key: str, obj: dict[str, Any]) -> int:
    return len(key.encode()) + len(json.dumps(obj, separators=(",", ":")).encode())


def storage_error(key: str, obj: dict[str, Any]) -> ApiError | None:
    """etcd's refusal of an object too large to store, or None."""
    if stored_size(key, obj) > ETCD_MAX_REQUEST_BYTES:
        return ApiError(500, "", "etcdserver: request is too large")
    return None
