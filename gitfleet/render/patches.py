"""Clusternet overrides: one ``spec.overrides[]`` entry of a Localization or Globalization.

The override files are taken unchanged from Clusternet, so each type keeps its upstream
meaning; where upstream silently drops a JSON patch whose path is missing, gitfleet keeps
the object unpatched as well but says so in a warning the caller attaches to the cluster.
Nothing here mutates its input: every result is a fresh copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonpatch
import jsonpointer

from gitfleet import yamlio
from gitfleet.errors import InputError

JSON_PATCH = "JSONPatch"
MERGE_PATCH = "MergePatch"
FIELD_JSON_PATCH = "FieldJSONPatch"
FIELD_MERGE_PATCH = "FieldMergePatch"
HELM = "Helm"
TYPES = (JSON_PATCH, MERGE_PATCH, FIELD_JSON_PATCH, FIELD_MERGE_PATCH, HELM)

# Fields of a HelmChart that a chart override may not change (as upstream).
_CHART_KEPT = ("chart", "targetNamespace")


class PatchError(InputError):
    """An override that cannot be applied: unknown type, unparsable value, bad target."""


@dataclass(frozen=True)
class PatchOutcome:
    """The result of one override.

    ``obj`` is the new object (for a HelmChart: the HelmChart itself), ``values`` the new
    Helm values (``None`` unless the object is a HelmChart), ``warnings`` what the user should
    hear about without the render failing (an unpatched JSON patch, an ignored override).
    """

    obj: dict[str, Any]
    warnings: tuple[str, ...] = ()
    values: dict[str, Any] | None = None


def deep_copy(value: Any) -> Any:
    """Copy plain JSON-like data (dicts, lists, scalars); several times faster than deepcopy."""
    if isinstance(value, dict):
        return {key: deep_copy(item) if isinstance(item, _CONTAINERS) else item
                for key, item in value.items()}
    if isinstance(value, list):
        return [deep_copy(item) if isinstance(item, _CONTAINERS) else item for item in value]
    return value


_CONTAINERS = (dict, list)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: ``null`` deletes, objects merge, anything else replaces.

    Returns a new value; neither argument is changed and the result shares nothing with them.
    """
    if not isinstance(patch, dict):
        return deep_copy(patch)
    base: dict[str, Any] = target if isinstance(target, dict) else {}
    result: dict[str, Any] = {}
    for key, value in base.items():
        if key not in patch:
            result[key] = deep_copy(value) if isinstance(value, _CONTAINERS) else value
        elif patch[key] is not None:
            result[key] = merge_patch(value, patch[key])
    for key, value in patch.items():
        if key not in base and value is not None:
            result[key] = merge_patch(None, value)
    return result


def helm_merge(base: Mapping[str, Any] | None, overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Helm values files merged as `helm template -f a -f b` merges them (Helm 3's
    ``mergeMaps``, helm/helm pkg/cli/values/options.go): a mapping merges into a mapping,
    anything else replaces, and a ``null`` *stays* as ``key: null``.

    Keeping the null is the point: Helm's own coalesce with the chart's ``values.yaml`` is
    what deletes a key that the user values set to null, chart default included. A JSON merge
    patch would drop the key here, and the chart default would come back.
    Returns a new mapping that shares nothing with its arguments.
    """
    result: dict[str, Any] = {key: deep_copy(value) for key, value in (base or {}).items()}
    for key, value in overlay.items():
        current = result.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            result[key] = helm_merge(current, value)
        else:
            result[key] = deep_copy(value)
    return result


def parse_value(value: Any, *, name: str) -> Any:
    """An override's ``value``: JSON or YAML text, or data already structured by the loader."""
    if not isinstance(value, str):
        return deep_copy(value)
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return yamlio.load_one(value, f"value of override {name!r}")
    except InputError as exc:
        raise PatchError(f"override {name!r}: value is neither JSON nor YAML: {exc.message}",
                         obj=name) from None


def json_patch(doc: Any, operations: Any, *, name: str, in_place: bool = False) -> Any:
    """Apply RFC 6902 ``operations`` to a copy of ``doc`` (or to ``doc`` itself when
    ``in_place``, for a caller that owns it and drops it on failure).

    Raises ``PatchError`` for a malformed patch and ``LookupError`` when a path it names does
    not exist (or a ``test`` fails): the caller decides whether that is a warning or an error.
    """
    if isinstance(operations, dict):
        operations = [operations]
    if not isinstance(operations, list):
        raise PatchError(f"override {name!r}: a JSON patch must be a list of operations",
                         obj=name)
    try:
        patch = jsonpatch.JsonPatch(deep_copy(operations))
        return patch.apply(doc if in_place else deep_copy(doc), in_place=True)
    except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPatchTestFailed,
            jsonpointer.JsonPointerException) as exc:
        raise LookupError(str(exc)) from None
    except (jsonpatch.InvalidJsonPatch, TypeError, ValueError, KeyError) as exc:
        raise PatchError(f"override {name!r}: invalid JSON patch: {exc}", obj=name) from None


def _pointer_parts(pointer: str, *, name: str) -> list[str]:
    if not pointer.startswith("/"):
        raise PatchError(f"override {name!r}: fieldPath {pointer!r} must start with '/'",
                         obj=name)
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _field_text(obj: Any, parts: list[str]) -> Any:
    node = obj
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise LookupError("/" + "/".join(parts))
    return node


def _field_patch(obj: dict[str, Any], override: Mapping[str, Any], patch: Any, *,
                 name: str, kind: str) -> dict[str, Any]:
    pointer = str(override.get("fieldPath") or "")
    parts = _pointer_parts(pointer, name=name)
    try:
        text = _field_text(obj, parts)
    except LookupError:
        # Unlike a JSON patch path, a field patch names the field it rewrites: if it is not
        # there the override cannot mean anything for this object (an error, as upstream).
        raise PatchError(f"override {name!r}: fieldPath {pointer} does not exist",
                         obj=name) from None
    if not isinstance(text, str):
        raise PatchError(f"override {name!r}: fieldPath {pointer} does not hold a string",
                         obj=name)
    if not text.strip():  # upstream leaves an empty field alone; so does gitfleet, aloud
        raise LookupError(f"field {pointer} is empty")
    try:
        field, was = json.loads(text), "json"
    except ValueError:
        try:
            field = yamlio.load_one(text, f"field {pointer}")
        except InputError as exc:
            raise PatchError(f"override {name!r}: field {pointer} holds neither JSON nor YAML: "
                             f"{exc.message}", obj=name) from None
        was = "yaml"
    if not isinstance(field, (dict, list)):
        raise PatchError(f"override {name!r}: field {pointer} holds no JSON or YAML document "
                         f"(a plain {type(field).__name__})", obj=name)
    wanted = str(override.get("fieldFormat") or was).lower()
    if wanted not in ("json", "yaml"):
        raise PatchError(f"override {name!r}: fieldFormat must be json or yaml, not {wanted!r}",
                         obj=name)
    if kind == FIELD_JSON_PATCH:
        field = json_patch(field, patch, name=name)
    else:
        field = merge_patch(field, patch)
    # Indented by four as upstream, but keys keep their order (upstream sorts them).
    new_text = (json.dumps(field, indent=4, ensure_ascii=False) if wanted == "json"
                else yamlio.dump(field))
    result: dict[str, Any] = deep_copy(obj)
    parent = _field_text(result, parts[:-1])
    parent[int(parts[-1]) if isinstance(parent, list) else parts[-1]] = new_text
    return result


def _chart_patch(chart: dict[str, Any], patch: Any) -> dict[str, Any]:
    result: dict[str, Any] = merge_patch(chart, patch)
    raw_old, raw_new = chart.get("spec"), result.get("spec")
    old_spec: dict[str, Any] = raw_old if isinstance(raw_old, dict) else {}
    spec: dict[str, Any] = raw_new if isinstance(raw_new, dict) else {}
    for key in _CHART_KEPT:
        if key in old_spec:
            spec[key] = deep_copy(old_spec[key])
        else:
            spec.pop(key, None)
    if spec or "spec" in chart:
        result["spec"] = spec
    return result


def apply_override(obj: dict[str, Any], override: Mapping[str, Any], *,
                   is_helm_chart: bool = False,
                   helm_values: dict[str, Any] | None = None) -> PatchOutcome:
    """Apply one Clusternet override to ``obj`` (and, for a HelmChart, to its values).

    - ``JSONPatch``: RFC 6902. A path that does not exist (or a failing ``test``) leaves the
      target unpatched and yields a warning naming the override.
    - ``MergePatch``: RFC 7386.
    - ``FieldJSONPatch`` / ``FieldMergePatch``: ``fieldPath`` (a JSON pointer) names a string
      holding JSON or YAML; it is parsed, patched and written back in ``fieldFormat`` (json
      or yaml, any case; default: the format it was in). JSON is written indented by four,
      keys in order. A missing field, or one that holds no JSON or YAML mapping or list, is a
      ``PatchError``; a missing path inside the field, or an empty field, is a warning like
      a JSON patch's missing path (the object is left unpatched, as upstream).
    - ``Helm``: the value is merged into the Helm values as Helm merges values files
      (``helm_merge``: maps merge, lists and scalars replace, later wins; a ``null`` is kept
      so that Helm deletes the key, chart default included). With ``overrideChart: true``
      it is a merge patch on the HelmChart itself, except ``spec.chart`` and
      ``spec.targetNamespace``, which keep their values.
      On an object that is not a HelmChart it is ignored with a warning.

    As upstream, for a HelmChart (``is_helm_chart``) the other types patch the Helm values,
    not the HelmChart object, and an override whose value is empty changes nothing. Unknown
    types and unparsable values raise ``PatchError``.
    """
    name = str(override.get("name") or "<unnamed>")
    kind = override.get("type")
    if kind not in TYPES:
        raise PatchError(f"override {name!r}: unknown type {kind!r} (one of {', '.join(TYPES)})",
                         obj=name)
    raw = override.get("value")
    values = deep_copy(helm_values) if is_helm_chart and helm_values is not None else (
        {} if is_helm_chart else None)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return PatchOutcome(deep_copy(obj), (), values)
    patch = parse_value(raw, name=name)

    if kind == HELM:
        if not is_helm_chart:
            return PatchOutcome(deep_copy(obj), (
                f"override {name!r}: type Helm applies to HelmChart feeds only; ignored",), None)
        if override.get("overrideChart"):
            if not isinstance(patch, dict):
                raise PatchError(f"override {name!r}: a chart override must be a mapping",
                                 obj=name)
            return PatchOutcome(_chart_patch(obj, patch), (), values)
        if patch is not None and not isinstance(patch, dict):
            raise PatchError(f"override {name!r}: Helm values must be a mapping", obj=name)
        return PatchOutcome(deep_copy(obj), (), helm_merge(values, patch or {}))

    target: dict[str, Any] = values if values is not None else obj
    try:
        if kind == JSON_PATCH:
            patched = json_patch(target, patch, name=name)
        elif kind == MERGE_PATCH:
            patched = merge_patch(target, patch)
        else:
            patched = _field_patch(target, override, patch, name=name, kind=kind)
    except LookupError as exc:
        # jsonpointer quotes the whole document in its message; keep what names the path
        reason = str(exc.args[0]).split(" in {", 1)[0].split(" in [", 1)[0][:200]
        warning = f"override {name!r} ({kind}) left the object unpatched: {reason}"
        patched = deep_copy(target)
        return _outcome(obj, patched, values, (warning,))
    if not isinstance(patched, dict):
        raise PatchError(f"override {name!r}: the patch replaces the whole object with a "
                         f"{type(patched).__name__}", obj=name)
    return _outcome(obj, patched, values, ())


def _outcome(obj: dict[str, Any], patched: dict[str, Any], values: dict[str, Any] | None,
             warnings: tuple[str, ...]) -> PatchOutcome:
    if values is None:
        return PatchOutcome(patched, warnings, None)
    return PatchOutcome(deep_copy(obj), warnings, patched)


def strip_server_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Drop what a server owns: ``metadata.managedFields``, ``uid``, ``resourceVersion``
    and ``status``; they must never be applied from a template.

    Returns a new top-level mapping and metadata; deeper values are shared with ``obj``.
    """
    result = {key: value for key, value in obj.items() if key != "status"}
    metadata = result.get("metadata")
    if isinstance(metadata, dict):
        result["metadata"] = {key: value for key, value in metadata.items()
                              if key not in ("managedFields", "uid", "resourceVersion")}
    return result


# Fields a server fills in. Templates are often exported from a live cluster (`kubectl get -o
# yaml`); applying these would fail or fight the server, so they are trimmed before overrides.
_TRIMMED_METADATA = ("creationTimestamp", "uid", "resourceVersion", "generation", "selfLink",
                     "managedFields")
_JOB_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
_JOB_TEMPLATE_LABELS = (*_JOB_UID_LABELS, "batch.kubernetes.io/job-name")


def server_fields(obj: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    """The paths of ``obj`` that trimming removes (see ``trim_server_fields``); no copy made,
    so `validate` can ask it of every template cheaply."""
    found: list[tuple[str, ...]] = []
    if "status" in obj:
        found.append(("status",))
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        found.extend(("metadata", key) for key in _TRIMMED_METADATA if key in meta)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return tuple(found)
    kind, api_version = obj.get("kind"), str(obj.get("apiVersion", ""))
    if kind == "Service" and api_version == "v1":
        if "clusterIP" in spec and spec["clusterIP"] != "None":
            found.append(("spec", "clusterIP"))
        ips = spec.get("clusterIPs")
        if "clusterIPs" in spec and not (isinstance(ips, list) and "None" in ips):
            found.append(("spec", "clusterIPs"))
    elif kind == "Job" and api_version.startswith("batch/"):
        selector = spec.get("selector")
        labels = selector.get("matchLabels") if isinstance(selector, dict) else None
        if isinstance(labels, dict):
            found.extend(("spec", "selector", "matchLabels", key)
                         for key in _JOB_UID_LABELS if key in labels)
        template = spec.get("template")
        tmeta = template.get("metadata") if isinstance(template, dict) else None
        if isinstance(tmeta, dict):
            if "creationTimestamp" in tmeta:
                found.append(("spec", "template", "metadata", "creationTimestamp"))
            tlabels = tmeta.get("labels")
            if isinstance(tlabels, dict):
                found.extend(("spec", "template", "metadata", "labels", key)
                             for key in _JOB_TEMPLATE_LABELS if key in tlabels)
    return tuple(found)


def trim_server_fields(obj: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Remove what a server populates, as SEMANTICS "Trimming" lists; return the trimmed copy
    and the paths removed (dotted, for messages).

    Removed: ``metadata`` creationTimestamp, uid, resourceVersion, generation, selfLink,
    managedFields; ``status``; a Service's ``spec.clusterIP`` / ``clusterIPs`` unless
    ``None`` (headless is a choice); a Job's controller-uid selector labels, the controller-uid
    and job-name labels of its pod template and the template's creationTimestamp (a Job
    selector left empty goes too: the server generates it). Unlike upstream a Service's
    ``nodePort`` and ``healthCheckNodePort`` are kept: in a fleet repo they are what a person
    wrote. ``obj`` is never changed.
    """
    result: dict[str, Any] = deep_copy(obj)
    paths = server_fields(obj)
    for path in paths:
        node: Any = result
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]
    spec = result.get("spec")
    if any(p[:3] == ("spec", "selector", "matchLabels") for p in paths) and \
            isinstance(spec, dict):
        selector = spec["selector"]
        if not selector.get("matchLabels"):
            selector.pop("matchLabels", None)
            if not selector:
                del spec["selector"]
    return result, tuple(".".join(p) for p in paths)
