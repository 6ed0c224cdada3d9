"""`/openapi/v2` as kubectl reads it: the gnostic `openapi.v2.Document` protobuf.

client-go's discovery asks for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
and decodes nothing else. The message types are declared here, with gnostic's field numbers
(github.com/google/gnostic, openapiv2/OpenAPIv2.proto), for the parts a schema document uses:
definitions, and per schema its type, format, description, required, properties, items,
additionalProperties, allOf, $ref and vendor extensions (x-kubernetes-*, as YAML). The
`protobuf` library encodes them.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # as asked for
CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # as answered

_F = descriptor_pb2.FieldDescriptorProto
_STRING, _BOOL, _MESSAGE = _F.TYPE_STRING, _F.TYPE_BOOL, _F.TYPE_MESSAGE
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

# message -> (field name, number, type, label, message type)
_MESSAGES: dict[str, list[tuple[str, int, int, int, str]]] = {
    "Document": [("swagger", 1, _STRING, _ONE, ""), ("info", 2, _MESSAGE, _ONE, "Info"),
                 ("paths", 8, _MESSAGE, _ONE, "Paths"),
                 ("definitions", 9, _MESSAGE, _ONE, "Definitions")],
    "Info": [("title", 1, _STRING, _ONE, ""), ("version", 2, _STRING, _ONE, "")],
    "Paths": [("vendor_extension", 1, _MESSAGE, _MANY, "NamedAny")],
    "Definitions": [("additional_properties", 1, _MESSAGE, _MANY, "NamedSchema")],
    "NamedSchema": [("name", 1, _STRING, _ONE, ""), ("value", 2, _MESSAGE, _ONE, "Schema")],
    "NamedAny": [("name", 1, _STRING, _ONE, ""), ("value", 2, _MESSAGE, _ONE, "Any")],
    "Any": [("yaml", 2, _STRING, _ONE, "")],
    "Properties": [("additional_properties", 1, _MESSAGE, _MANY, "NamedSchema")],
    "TypeItem": [("value", 1, _STRING, _MANY, "")],
    "ItemsItem": [("schema", 1, _MESSAGE, _MANY, "Schema")],
    "AdditionalPropertiesItem": [("schema", 1, _MESSAGE, _ONE, "Schema"),
                                 ("boolean", 2, _BOOL, _ONE, "")],
    "Schema": [("_ref", 1, _STRING, _ONE, ""), ("format", 2, _STRING, _ONE, ""),
               ("title", 3, _STRING, _ONE, ""), ("description", 4, _STRING, _ONE, ""),
               ("required", 19, _STRING, _MANY, ""),
               ("additional_properties", 21, _MESSAGE, _ONE, "AdditionalPropertiesItem"),
               ("type", 22, _MESSAGE, _ONE, "TypeItem"),
               ("items", 23, _MESSAGE, _ONE, "ItemsItem"),
               ("all_of", 24, _MESSAGE, _MANY, "Schema"),
               ("properties", 25, _MESSAGE, _ONE, "Properties"),
               ("vendor_extension", 31, _MESSAGE, _MANY, "NamedAny")],
}


@functools.cache
def _classes() -> dict[str, Any]:
    proto = descriptor_pb2.FileDescriptorProto(name="gitfleet/openapiv2.proto",
                                               package="openapi.v2", syntax="proto3")
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field, number, kind, label, type_name in fields:
            entry = message.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                entry.type_name = f".openapi.v2.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(
        f"openapi.v2.{name}")) for name in _MESSAGES}


def _schema(schema: dict[str, Any], out: Any) -> None:
    for key, value in schema.items():
        if key == "$ref":
            out._ref = value
        elif key in ("format", "title", "description") and isinstance(value, str):
            setattr(out, key, value)
        elif key == "required" and isinstance(value, list):
            out.required.extend(str(v) for v in value)
        elif key == "type":
            out.type.value.extend([value] if isinstance(value, str) else list(value))
        elif key == "items" and isinstance(value, dict):
            _schema(value, out.items.schema.add())
        elif key == "allOf" and isinstance(value, list):
            for sub in value:
                _schema(sub, out.all_of.add())
        elif key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                named = out.properties.additional_properties.add(name=name)
                _schema(sub, named.value)
        elif key == "additionalProperties":
            if isinstance(value, dict):
                _schema(value, out.additional_properties.schema)
            elif isinstance(value, bool):
                out.additional_properties.boolean = value
        elif key.startswith("x-"):
            out.vendor_extension.add(name=key).value.yaml = yaml.safe_dump(
                value, default_flow_style=False)


def encode(document: dict[str, Any]) -> bytes:
    """The swagger document (as `openapi.swagger` builds it) as gnostic protobuf."""
    classes = _classes()
    doc = classes["Document"]()
    doc.swagger = str(document.get("swagger", "2.0"))
    info = document.get("info") or {}
    doc.info.title = str(info.get("title", ""))
    doc.info.version = str(info.get("version", ""))
    doc.paths.SetInParent()
    for name, schema in (document.get("definitions") or {}).items():
        _schema(schema, doc.definitions.additional_properties.add(name=name).value)
    data: bytes = doc.SerializeToString()
    return data
