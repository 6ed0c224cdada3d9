"""Custom resources checked against their CRD's structural schema, as a real server does:
unknown fields pruned, `default`s filled, then validated (422 with field paths)."""

from __future__ import annotations

from typing import Any

import jsonschema

from gitfleet.kubesim.status import Cause

_TOP = ("apiVersion", "kind", "metadata")


def prune_and_default(schema: dict[str, Any], obj: Any, *, top: bool = False) -> None:
    """Drop fields the schema does not declare and fill declared defaults (in place)."""
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
            return
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if key not in obj and isinstance(sub, dict) and "default" in sub:
                    obj[key] = _copy(sub["default"])
            if not schema.get("x-kubernetes-preserve-unknown-fields"):
                for key in list(obj):
                    if key not in props and not (top and key in _TOP) \
                            and not (schema.get("x-kubernetes-embedded-resource")
                                     and key in _TOP):
                        del obj[key]
            for key, value in obj.items():
                if key in props:
                    prune_and_default(props[key], value)
        elif isinstance(additional, dict):
            for value in obj.values():
                prune_and_default(additional, value)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            prune_and_default(schema["items"], item)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _clean(schema: Any) -> Any:
    """The schema without the parts JSON Schema reads differently (metadata, nullable)."""
    if isinstance(schema, dict):
        out = {k: _clean(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")
               and k not in ("nullable", "format", "default", "example", "externalDocs")}
        if schema.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
        if schema.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        return out
    if isinstance(schema, list):
        return [_clean(s) for s in schema]
    return schema


def validate(schema: dict[str, Any], obj: dict[str, Any]) -> list[Cause]:
    """Validation failures of a custom resource as Status causes."""
    body = {k: v for k, v in obj.items() if k not in _TOP}
    cleaned = _clean(schema)
    if isinstance(cleaned.get("properties"), dict):
        cleaned["properties"] = {k: v for k, v in cleaned["properties"].items()
                                 if k not in _TOP}
    if isinstance(cleaned.get("required"), list):
        cleaned["required"] = [r for r in cleaned["required"] if r not in _TOP]
    causes = []
    validator = jsonschema.Draft7Validator(cleaned)
    for error in sorted(validator.iter_errors(body), key=lambda e: list(e.path)):
        path = ".".join(str(p) if not isinstance(p, int) else f"[{p}]"
                        for p in error.absolute_path).replace(".[", "[")
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else ""
            field = f"{path}.{missing}" if path else missing
            causes.append(Cause("FieldValueRequired", "Required value", field))
        elif error.validator == "type":
            expected = error.validator_value
            causes.append(Cause("FieldValueTypeInvalid",
                                f'Invalid value: "{_kind_of(error.instance)}": {path} in body '
                                f'must be of type {_first(expected)}: "{_kind_of(error.instance)}"',
                                path))
        elif error.validator == "enum":
            allowed = ", ".join(f'"{v}"' for v in error.validator_value)
            causes.append(Cause("FieldValueNotSupported",
                                f'Unsupported value: {_show(error.instance)}: supported values: '
                                f"{allowed}", path))
        else:
            causes.append(Cause("FieldValueInvalid",
                                f"Invalid value: {_show(error.instance)}: {path} in body "
                                f"{error.message}", path))
    return causes


def _first(value: Any) -> str:
    return str(value[0] if isinstance(value, list) else value)


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)
