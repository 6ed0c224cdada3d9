"""Request bodies in Kubernetes' protobuf encoding, which client-go's typed clients send.

Helm stores its releases through client-go's typed Secret client, which writes
`application/vnd.kubernetes.protobuf`: the magic `k8s\\0`, then a `runtime.Unknown` holding the
type and the object's own message. A real server decodes every built-in kind that way; kubesim
decodes the kinds its clients send so (Secret and ConfigMap, Helm's two release drivers;
Namespace; DeleteOptions on delete) into the JSON a client would have sent, and answers any
other protobuf body with 415, naming the media types it takes. The field numbers follow
`generated.proto` of k8s.io/api core/v1 and k8s.io/apimachinery meta/v1 (Kubernetes 1.31).

Go's generated marshallers write every non-pointer field, empty or not; JSON omits empty ones
(`omitempty`), so an empty scalar decodes to nothing unless the Go field is a pointer (marked
`keep` below), and a zero `Time` to no timestamp.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """A body that is not a well-formed protobuf message of the expected kind."""


class Unsupported(ValueError):
    """A well-formed envelope of a kind kubesim does not decode."""


# message -> field number -> (JSON name, type, keep when empty). Types: "string", "bytes"
# (base64 in JSON), "int", "bool", "time", "fields" (FieldsV1: raw JSON), "map" (string to
# string), "bmap" (string to bytes), "strings" (repeated), or a message name ("*Name" repeated).
_S, _I, _B = "string", "int", "bool"
_MESSAGES: dict[str, dict[int, tuple[str, str, bool]]] = {
    "ObjectMeta": {1: ("name", _S, False), 2: ("generateName", _S, False),
                   3: ("namespace", _S, False), 4: ("selfLink", _S, False),
                   5: ("uid", _S, False), 6: ("resourceVersion", _S, False),
                   7: ("generation", _I, False), 8: ("creationTimestamp", "time", False),
                   9: ("deletionTimestamp", "time", False),
                   10: ("deletionGracePeriodSeconds", _I, True), 11: ("labels", "map", False),
                   12: ("annotations", "map", False),
                   13: ("ownerReferences", "*OwnerReference", False),
                   14: ("finalizers", "strings", False),
                   17: ("managedFields", "*ManagedFieldsEntry", False)},
    "OwnerReference": {1: ("kind", _S, False), 3: ("name", _S, False), 4: ("uid", _S, False),
                       5: ("apiVersion", _S, False), 6: ("controller", _B, True),
                       7: ("blockOwnerDeletion", _B, True)},
    "ManagedFieldsEntry": {1: ("manager", _S, False), 2: ("operation", _S, False),
                           3: ("apiVersion", _S, False), 4: ("time", "time", False),
                           6: ("fieldsType", _S, False), 7: ("fieldsV1", "fields", False),
                           8: ("subresource", _S, False)},
    "Secret": {1: ("metadata", "ObjectMeta", False), 2: ("data", "bmap", False),
               3: ("type", _S, False), 4: ("stringData", "map", False),
               5: ("immutable", _B, True)},
    "ConfigMap": {1: ("metadata", "ObjectMeta", False), 2: ("data", "map", False),
                  3: ("binaryData", "bmap", False), 4: ("immutable", _B, True)},
    "Namespace": {1: ("metadata", "ObjectMeta", False), 2: ("spec", "NamespaceSpec", False)},
    "NamespaceSpec": {1: ("finalizers", "strings", False)},
    "DeleteOptions": {1: ("gracePeriodSeconds", _I, True),
                      2: ("preconditions", "Preconditions", True),
                      3: ("orphanDependents", _B, True), 4: ("propagationPolicy", _S, True),
                      5: ("dryRun", "strings", False),
                      6: ("ignoreStoreReadErrorWithClusterBreakingPotential", _B, True)},
    "Preconditions": {1: ("uid", _S, True), 2: ("resourceVersion", _S, True)},
}
# the kinds decoded at the top of a body: (apiVersion, kind)
DECODED = {("v1", "Secret"), ("v1", "ConfigMap"), ("v1", "Namespace"),
           ("v1", "DeleteOptions"), ("meta.k8s.io/v1", "DeleteOptions")}
READABLE = "v1 Secret, ConfigMap, Namespace and DeleteOptions"


def is_protobuf(content_type: str) -> bool:
    return content_type.split(";")[0].strip() == MEDIA_TYPE


def decode(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body holds, as JSON would have carried it."""
    if not body.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, expected "
                            "prefix [107 56 115 0]")
    envelope = _fields(body[len(MAGIC):])
    type_meta = _fields(_one(envelope, 1, b""))
    api_version = _one(type_meta, 1, b"").decode()
    kind = _one(type_meta, 2, b"").decode()
    if (api_version, kind) not in DECODED:
        raise Unsupported(f"{api_version}, Kind={kind}")
    out = _message(kind, _one(envelope, 2, b""))
    return {"apiVersion": api_version, "kind": kind, **out}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) in order: varints as int, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            out.append((number, data[pos:pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _one(fields: list[tuple[int, int | bytes]], number: int, default: Any) -> Any:
    found = [v for n, v in fields if n == number]
    return found[-1] if found else default


def _message(name: str, data: bytes) -> dict[str, Any]:
    spec = _MESSAGES[name]
    out: dict[str, Any] = {}
    for number, raw in _fields(data):
        if number not in spec:
            continue
        key, kind, keep = spec[number]
        if kind.startswith("*") or kind in ("strings", "map", "bmap"):
            _add(out, key, kind, raw)
            continue
        value = _scalar(kind, raw)
        if value is None or (not keep and value in ("", 0, False, {})):
            out.pop(key, None)
            continue
        out[key] = value
    return out


def _add(out: dict[str, Any], key: str, kind: str, raw: int | bytes) -> None:
    if not isinstance(raw, bytes):
        raise ProtobufError(f"{key}: expected a length-delimited field")
    if kind == "strings":
        out.setdefault(key, []).append(raw.decode())
    elif kind.startswith("*"):
        out.setdefault(key, []).append(_message(kind[1:], raw))
    else:
        entry = _fields(raw)
        value = _one(entry, 2, b"")
        out.setdefault(key, {})[_one(entry, 1, b"").decode()] = \
            base64.b64encode(value).decode() if kind == "bmap" else value.decode()


def _scalar(kind: str, raw: int | bytes) -> Any:
    if kind in (_I, _B):
        if not isinstance(raw, int):
            raise ProtobufError(f"expected a varint for a {kind}")
        if kind == _B:
            return bool(raw)
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if not isinstance(raw, bytes):
        raise ProtobufError(f"expected a length-delimited field for a {kind}")
    if kind == _S:
        return raw.decode()
    if kind == "bytes":
        return base64.b64encode(raw).decode()
    if kind == "time":
        stamp = _fields(raw)
        seconds = _one(stamp, 1, 0)
        if not seconds:
            return None
        return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind == "fields":
        try:
            return json.loads(_one(_fields(raw), 1, b"") or b"{}")
        except ValueError:
            raise ProtobufError("fieldsV1 is not JSON") from None
    return _message(kind, raw)
