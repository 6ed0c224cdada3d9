"""Request bodies as a real server decodes them: JSON (noting repeated fields, which its
strict decoder reports), YAML where the media type says so, and Kubernetes protobuf for the
kinds `protobuf` reads. Every failure is the 4xx a real server answers."""

from __future__ import annotations

import json
from typing import Any

import yaml

from gitfleet.kubesim import protobuf
from gitfleet.kubesim import status as st


def load(body: bytes, content_type: str) -> Any:
    """The decoded body; 400 when empty or undecodable, 415 for protobuf kubesim cannot read."""
    if not body:
        raise st.bad_request("the request body is empty")
    if protobuf.is_protobuf(content_type):
        return load_protobuf(body)
    try:
        return json.loads(body)
    except ValueError:
        if "yaml" not in content_type:
            raise st.bad_request("the body of the request could not be decoded as JSON") from None
    try:
        return yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise st.bad_request(f"error decoding YAML: {exc}") from None


def load_protobuf(body: bytes) -> Any:
    try:
        return protobuf.decode(body)
    except protobuf.Unsupported as exc:
        raise st.ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                          "unknown format - accepted media types include: application/json, "
                          f"application/yaml (kubesim reads protobuf only for "
                          f"{protobuf.READABLE}, not {exc})") from None
    except (protobuf.ProtobufError, UnicodeDecodeError) as exc:
        raise st.bad_request(f"the body of the request could not be decoded as protobuf: "
                             f"{exc}") from None


def load_noting_duplicates(body: bytes, content_type: str) -> tuple[Any, list[str]]:
    """The body and the fields a JSON body repeats (the last one wins, as in Go)."""
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                repeated.append(key)
            out[key] = value
        return out

    if not body:
        raise st.bad_request("the request body is empty")
    if protobuf.is_protobuf(content_type):
        return load_protobuf(body), []
    try:
        return json.loads(body, object_pairs_hook=pairs), repeated
    except ValueError:
        return load(body, content_type), []


def delete_options(body: bytes, content_type: str) -> dict[str, Any]:
    """A delete's DeleteOptions: none, JSON, or protobuf (client-go's typed clients, Helm)."""
    if not body:
        return {}
    if protobuf.is_protobuf(content_type):
        return dict(load_protobuf(body))
    try:
        loaded = json.loads(body)
    except ValueError:
        raise st.bad_request("could not decode DeleteOptions") from None
    return loaded if isinstance(loaded, dict) else {}
