"""Leases decoded as a real server decodes them: MicroTimes and integer fields.

Leader election runs on `coordination.k8s.io/v1` Leases, so the fields it compares must read
as on a real cluster. A real server decodes a body into Go types before anything else:
`spec.renewTime` and `spec.acquireTime` are `metav1.MicroTime`, parsed with the layout
`2006-01-02T15:04:05.000000Z07:00` (Go's `time.Parse` wants exactly six fractional digits for
`.000000`; apimachinery pkg/apis/meta/v1/micro_time.go) and written back in UTC with six
digits; `leaseDurationSeconds` and `leaseTransitions` are `*int32`, so a string there is a
decoding error (400) - never stored, where one stored value would stop every client from
listing Leases. What decodes is then validated (422, `validation.object_causes`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from gitfleet.kubesim import status as st

LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICRO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{6})(Z|[+-]\d\d:\d\d)")
_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
# field -> Go type, as the decoder names it in its errors
_SPEC_FIELDS = {"holderIdentity": "string", "leaseDurationSeconds": "int32",
                "acquireTime": "MicroTime", "renewTime": "MicroTime",
                "leaseTransitions": "int32", "strategy": "string", "preferredHolder": "string"}


def decode(obj: dict[str, Any]) -> None:
    """Check the Lease `obj`'s spec as the Go decoder reads it, rewriting its MicroTimes in
    the form a real server answers with; a 400 names the first field that does not decode."""
    spec = obj.get("spec")
    if spec is None:
        return
    if not isinstance(spec, dict):
        raise _cannot(f"json: cannot unmarshal {_json_type(spec)} into Go struct field "
                      "Lease.spec of type v1.LeaseSpec")
    for key, go_type in _SPEC_FIELDS.items():
        value = spec.get(key)
        if value is None:
            continue
        if go_type == "MicroTime":
            spec[key] = _micro_time(value)
        elif go_type == "int32" and (isinstance(value, bool) or not isinstance(value, int)):
            raise _cannot(f"json: cannot unmarshal {_json_type(value)} into Go struct field "
                          f"LeaseSpec.spec.{key} of type int32")
        elif go_type == "int32" and not -(2 ** 31) <= value < 2 ** 31:
            raise _cannot(f"json: cannot unmarshal number {value} into Go struct field "
                          f"LeaseSpec.spec.{key} of type int32")
        elif go_type == "string" and not isinstance(value, str):
            raise _cannot(f"json: cannot unmarshal {_json_type(value)} into Go struct field "
                          f"LeaseSpec.spec.{key} of type string")


def _micro_time(value: Any) -> str:
    if not isinstance(value, str):
        raise _cannot(f"json: cannot unmarshal {_json_type(value)} into Go value of type "
                      "string")
    found = _MICRO.fullmatch(value)
    if found is None:
        seconds = _SECONDS.match(value)
        rest = value[seconds.end():] if seconds else value
        elem = ".000000" if seconds else "2006"
        if seconds and _MICRO.match(value):  # six digits, then something not a zone
            rest, elem = value[_MICRO.match(value).end(2):], "Z07:00"  # type: ignore[union-attr]
        raise _cannot(f'parsing time "{value}" as "{LAYOUT}": cannot parse "{rest}" as '
                      f'"{elem}"')
    try:
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _cannot(f'parsing time "{value}": day out of range') from None
    return stamp.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _cannot(why: str) -> st.ApiError:
    return st.bad_request(f'Lease in version "v1" cannot be handled as a Lease: {why}')
