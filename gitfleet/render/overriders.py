"""Karmada overriders: one ``overrideRules[].overriders`` block applied to one object.

Karmada's OverridePolicies are taken unchanged, so each overrider keeps its upstream meaning
and the upstream order inside a rule: image, command, args, labels, annotations, field,
plaintext. Anything that cannot be applied raises ``InputError``: the caller reports it for
this cluster and keeps what was last rendered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.render.patches import deep_copy, json_patch

# Where the pod spec lives, per workload kind.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
}
_CONTAINER_LISTS = ("containers", "initContainers")
_OPERATORS = ("add", "remove", "replace")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}")

# The image reference grammar of the distribution project (docker/distribution
# reference/regexp.go, as documented there): [domain/]path[:tag][@digest].
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = (rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:.]+\])"
           r"(?::[0-9]+)?")
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::{_TAG.pattern})?(?:@{_DIGEST.pattern})?")
_NAME_MAX = 255


def is_image_reference(image: str) -> bool:
    """Whether ``image`` is a valid reference by the distribution grammar (name ≤ 255)."""
    match = _REFERENCE.fullmatch(image)
    return match is not None and len(match.group("name")) <= _NAME_MAX


class InvalidImage(InputError):
    """An imageOverrider whose result is not an image reference: the image is kept."""


@dataclass(frozen=True)
class Image:
    """An image reference cut into the parts an imageOverrider can change."""

    registry: str
    repository: str
    tag: str
    digest: str

    @classmethod
    def parse(cls, image: str) -> Image:
        """Split ``[registry/]repository[:tag][@digest]``.

        The first path part is the registry only if it has a ``.`` or ``:`` or is
        ``localhost`` (as Docker reads references), so ``library/nginx`` has none.
        """
        rest, _, digest = image.partition("@")
        registry = ""
        first, slash, remainder = rest.partition("/")
        if slash and ("." in first or ":" in first or first == "localhost"):
            registry, rest = first, remainder
        repository, tag = rest, ""
        if ":" in rest:
            repository, _, tag = rest.rpartition(":")
        return cls(registry, repository, tag, digest)

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}" if self.registry else self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    def with_tag_or_digest(self, value: str) -> Image:
        """Set a tag or a digest, whichever ``value`` is, dropping the other (as Karmada)."""
        if _TAG.fullmatch(value):
            return replace(self, tag=value, digest="")
        if _DIGEST.fullmatch(value):
            return replace(self, tag="", digest=value)
        raise InvalidImage(f"imageOverrider: {value!r} is neither an image tag nor a digest")


def override_image(image: str, overrider: Mapping[str, Any]) -> str:
    """One imageOverrider on one image string.

    ``add`` appends ``value`` to the component (so on an image without a tag it sets the
    tag), ``remove`` clears it, ``replace`` sets it. For ``Tag`` the component is the tag,
    or the digest when there is no tag; the new value becomes a tag or a digest by its form.
    """
    component = overrider.get("component")
    operator = _operator(overrider, "imageOverrider")
    value = str(overrider.get("value") or "")
    parts = Image.parse(image)
    if component == "Registry":
        registry = {"add": parts.registry + value, "remove": "", "replace": value}[operator]
        return str(replace(parts, registry=registry))
    if component == "Repository":
        repository = {"add": parts.repository + value, "remove": "",
                      "replace": value}[operator]
        return str(replace(parts, repository=repository))
    if component == "Tag":
        if operator == "remove":
            cleared = (replace(parts, tag="") if parts.tag else replace(parts, digest=""))
            return str(cleared)
        current = parts.tag or parts.digest
        return str(parts.with_tag_or_digest(current + value if operator == "add" else value))
    raise InputError(f"imageOverrider: component must be Registry, Repository or Tag, "
                     f"not {component!r}")


_Applier = Callable[[dict[str, Any], list[Any], list[str]], None]


def _text(value: Any) -> str:
    """A YAML scalar as the string Kubernetes would have been given (``true``, not ``True``)."""
    return value if isinstance(value, str) else json.dumps(value)


def _operator(overrider: Mapping[str, Any], what: str,
              allowed: tuple[str, ...] = _OPERATORS) -> str:
    operator = overrider.get("operator")
    if operator not in allowed:
        raise InputError(f"{what}: operator must be one of {', '.join(allowed)}, "
                         f"not {operator!r}")
    return str(operator)


def _pod_containers(obj: dict[str, Any]) -> Iterable[dict[str, Any]]:
    path = POD_SPEC_PATHS.get(str(obj.get("kind")))
    if path is None:
        return
    node: Any = obj
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return
    for key in _CONTAINER_LISTS:
        containers = node.get(key)
        if isinstance(containers, list):
            yield from (c for c in containers if isinstance(c, dict))


def _pointer(obj: Any, pointer: str, what: str) -> tuple[Any, Any]:
    """The container and key a JSON pointer names; the last step need not exist yet."""
    if not pointer.startswith("/"):
        raise InputError(f"{what}: path {pointer!r} must start with '/'")
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]
    node = obj
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise InputError(f"{what}: path {pointer} does not exist")
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise InputError(f"{what}: path {pointer} does not exist")
        return node, int(last)
    if not isinstance(node, dict):
        raise InputError(f"{what}: path {pointer} does not exist")
    return node, last


def _checked_image(image: str, overrider: Mapping[str, Any], warnings: list[str]) -> str:
    """The overridden image, or ``image`` itself (with a warning) when the result would not
    be a valid reference: a cluster keeps a runnable image rather than get one it cannot pull."""
    try:
        result = override_image(image, overrider)
    except InvalidImage as exc:
        warnings.append(f"{exc.message}; image {image!r} left unchanged")
        return image
    if not is_image_reference(result):
        warnings.append(f"imageOverrider: {result!r} (from {image!r}) is not a valid image "
                        "reference; image left unchanged")
        return image
    return result


def _apply_images(obj: dict[str, Any], overriders: list[Any], warnings: list[str]) -> None:
    for overrider in overriders:
        predicate = overrider.get("predicate") or {}
        if predicate.get("path"):
            parent, key = _pointer(obj, str(predicate["path"]), "imageOverrider")
            image = parent[key] if isinstance(parent, list) else parent.get(key)
            if not isinstance(image, str):
                raise InputError(f"imageOverrider: {predicate['path']} is not an image string")
            parent[key] = _checked_image(image, overrider, warnings)
            continue
        for container in _pod_containers(obj):
            if isinstance(container.get("image"), str):
                container["image"] = _checked_image(container["image"], overrider, warnings)


def _command_args(field: str) -> _Applier:
    what = f"{field}Overrider"

    def apply(obj: dict[str, Any], overriders: list[Any], warnings: list[str]) -> None:
        for overrider in overriders:
            operator = _operator(overrider, what, ("add", "remove"))
            values = [_text(v) for v in overrider.get("value") or []]
            for container in _pod_containers(obj):
                if container.get("name") != overrider.get("containerName"):
                    continue
                current = [_text(v) for v in container.get(field) or []]
                if operator == "add":
                    container[field] = current + values
                elif field in container:
                    container[field] = [v for v in current if v not in values]
    return apply


def _label_like(field: str) -> _Applier:
    what = f"{field}Overrider"

    def apply(obj: dict[str, Any], overriders: list[Any], warnings: list[str]) -> None:
        for overrider in overriders:
            operator = _operator(overrider, what)
            value = overrider.get("value") or {}
            if not isinstance(value, dict):
                raise InputError(f"{what}: value must be a map of strings")
            metadata = obj.setdefault("metadata", {})
            current = metadata.get(field)
            if not isinstance(current, dict):
                if operator != "add":
                    continue
                current = metadata[field] = {}
            for key, item in value.items():
                if operator == "add":
                    current[key] = _text(item)
                elif key in current:
                    if operator == "replace":
                        current[key] = _text(item)
                    else:
                        del current[key]
    return apply


def _field_ops(ops: list[Any], what: str) -> list[dict[str, Any]]:
    result = []
    for op in ops:
        operator = _operator(op, what)
        entry = {"op": operator, "path": str(op.get("subPath") or "")}
        if operator != "remove":
            entry["value"] = op.get("value")
        result.append(entry)
    return result


def _apply_fields(obj: dict[str, Any], overriders: list[Any], warnings: list[str]) -> None:
    for overrider in overriders:
        pointer = str(overrider.get("fieldPath") or "")
        what = f"fieldOverrider {pointer}"
        json_ops, yaml_ops = overrider.get("json") or [], overrider.get("yaml") or []
        if json_ops and yaml_ops:
            raise InputError(f"{what}: give json or yaml operations, not both")
        parent, key = _pointer(obj, pointer, what)
        text = parent[key] if isinstance(parent, list) else parent.get(key)
        if not isinstance(text, str):
            raise InputError(f"{what}: the field does not exist or is not a string")
        if json_ops:
            try:
                doc = json.loads(text)
            except ValueError as exc:
                raise InputError(f"{what}: the field is not JSON: {exc}") from None
            doc = _patch(doc, _field_ops(json_ops, what), what)
            parent[key] = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        elif yaml_ops:
            doc = yamlio.load_one(text, what)
            parent[key] = yamlio.dump(_patch(doc, _field_ops(yaml_ops, what), what))


def _patch(doc: Any, ops: list[dict[str, Any]], what: str) -> Any:
    try:
        return json_patch(doc, ops, name=what, in_place=True)
    except LookupError as exc:
        raise InputError(f"{what}: {exc.args[0]}") from None


def _apply_plaintext(obj: dict[str, Any], overriders: list[Any], warnings: list[str]
                     ) -> None:
    ops = []
    for overrider in overriders:
        operator = _operator(overrider, "plaintext")
        entry = {"op": operator, "path": str(overrider.get("path") or "")}
        if operator != "remove":
            entry["value"] = overrider.get("value")
        ops.append(entry)
    patched = _patch(obj, ops, "plaintext")
    if not isinstance(patched, dict):
        raise InputError("plaintext: the operations replace the whole object with a "
                         f"{type(patched).__name__}")
    if patched is not obj:  # a whole-document replace
        obj.clear()
        obj.update(patched)


_ORDER: tuple[tuple[str, _Applier], ...] = (
    ("imageOverrider", _apply_images),
    ("commandOverrider", _command_args("command")),
    ("argsOverrider", _command_args("args")),
    ("labelsOverrider", _label_like("labels")),
    ("annotationsOverrider", _label_like("annotations")),
    ("fieldOverrider", _apply_fields),
    ("plaintext", _apply_plaintext),
)


def apply_overriders(obj: dict[str, Any], overriders: Mapping[str, Any],
                     warnings: list[str] | None = None) -> dict[str, Any]:
    """Apply one rule's overriders to a copy of ``obj`` in Karmada's fixed order.

    - ``imageOverrider``: every container and init container image of a Pod, Deployment,
      ReplicaSet, DaemonSet, StatefulSet or Job, or only the image at ``predicate.path``
      (which must exist). Other kinds without a predicate are left alone. A result that is
      not a valid image reference leaves that image unchanged and adds to ``warnings``.
    - ``commandOverrider`` / ``argsOverrider``: the named container (of the same kinds);
      ``add`` appends, ``remove`` drops every entry equal to one given.
    - ``labelsOverrider`` / ``annotationsOverrider`` (as Karmada): ``add`` sets each key,
      overwriting an existing one; ``replace`` changes only keys that exist and ``remove``
      deletes only keys that exist (whatever their value), so neither adds a key.
    - ``fieldOverrider``: ``fieldPath`` names a string holding JSON (``json`` operations) or
      YAML (``yaml`` operations); each ``subPath`` is a JSON patch op; the result is written
      back in the same format (JSON compact).
    - ``plaintext``: JSON patch ops (``path``, ``operator``, ``value``), all or nothing.

    Raises ``InputError`` when an operation cannot be applied (missing path, bad operator,
    unparsable field); ``obj`` is never changed.
    """
    result: dict[str, Any] = deep_copy(obj)
    found: list[str] = []
    for key, apply in _ORDER:
        entries = overriders.get(key)
        if entries:
            if not isinstance(entries, list):
                raise InputError(f"{key} must be a list")
            apply(result, entries, found)
    if warnings is not None:
        warnings.extend(found)
    return result
