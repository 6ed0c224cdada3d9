"""Rendered objects, each built once per distinct variant and shared by every cluster that gets it.

A variant is a template plus the ordered list of steps applied to it (replica count, Clusternet
overrides, Karmada overriders). Clusters that receive the same steps share one object, one YAML
text and one hash: the cost of a render grows with the number of distinct variants, not with
clusters x objects.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.layout import object_file
from gitfleet.model.objects import KarmadaOverride, ObjectKey, OverrideSet, Template
from gitfleet.render.overriders import apply_overriders
from gitfleet.render.patches import (
    PatchError,
    apply_override,
    deep_copy,
    strip_server_fields,
    trim_server_fields,
)
from gitfleet.secrets.detect import is_sops, sealed_problem
from gitfleet.wire.preservation import ANNOTATION as PRESERVATION_ANNOTATION


@dataclass(frozen=True)
class SetReplicas:
    """Replica division: replace the template's replica path with `count`."""

    path: str
    count: int

    @property
    def key(self) -> tuple[Any, ...]:
        return ("replicas", self.path, self.count)


@dataclass(frozen=True)
class ClusternetStep:
    """One Globalization or Localization (at the version in force for this Description)."""

    oset: OverrideSet

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.oset.kind, self.oset.namespace, self.oset.name, self.oset.digest)


@dataclass(frozen=True)
class KarmadaStep:
    """One rule of a Karmada OverridePolicy or ClusterOverridePolicy."""

    policy: KarmadaOverride
    rule: int

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.policy.kind, self.policy.namespace, self.policy.name, self.policy.digest,
                self.rule)


@dataclass(frozen=True)
class Preserve:
    """Failover state preservation (gitfleet.wire.preservation), applied after every
    override: the rules as an annotation for the agent to report, and the values preserved
    from an evicted copy as labels."""

    rules: str                                  # the annotation's JSON ('' for none)
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> tuple[Any, ...]:
        return ("preserve", self.rules, self.labels)


Step = SetReplicas | ClusternetStep | KarmadaStep | Preserve
VALUES_POINTER = "/spec/values/"     # where a HelmChart's replica path points into its values


@dataclass(frozen=True)
class Variant:
    """A rendered object: its body, YAML text, hash and file name (or the error it hit)."""

    template: Template
    body: dict[str, Any] | None
    text: bytes
    hash: str
    file: str
    warnings: tuple[str, ...]
    error: str = ""
    namespace: str = ""  # where the object lands: the template's, unless an override moved it

    @functools.cached_property
    def key(self) -> ObjectKey:
        """What the object is in the cluster (the namespace an override chose)."""
        t = self.template.key
        return t if t.namespace == self.namespace else \
            ObjectKey(t.group, t.kind, self.namespace, t.name)


def _set_pointer(obj: dict[str, Any], pointer: str, value: Any) -> None:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
    node: Any = obj
    for p in parts[:-1]:
        nxt = node.get(p) if isinstance(node, dict) else None
        if not isinstance(nxt, dict):
            nxt = {}
            node[p] = nxt
        node = nxt
    node[parts[-1]] = value


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _check_identity(template: Template, obj: dict[str, Any], who: str) -> None:
    """Overrides may change anything but what identifies the object (its file, its owner).

    The namespace of a namespaced object may change (upstream allows it); where it lands is
    then checked like any object's (claimed twice in one cluster is an error)."""
    changed = _identity_change(template, obj)
    if changed:
        raise InputError(f"{who} must not change what identifies the object: {changed}")
    meta = obj.get("metadata")
    namespace = meta.get("namespace", "") if isinstance(meta, dict) else ""
    if namespace == template.namespace:
        return
    if not template.namespace:
        raise InputError(f"{who} must not give the cluster-scoped {template.kind} a namespace "
                         f"({namespace!r})")
    if not isinstance(namespace, str) or not _DNS_LABEL.fullmatch(namespace):
        raise InputError(f"{who} sets metadata.namespace to {namespace!r}, which is not a "
                         "namespace name (a DNS label)")


def _identity_change(template: Template, obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    found = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
             "metadata.name": meta.get("name")}
    wanted = {"apiVersion": template.api_version, "kind": template.kind,
              "metadata.name": template.name}
    return ", ".join(f"{k} became {found[k]!r} (template: {wanted[k]!r})"
                     for k in wanted if found[k] != wanted[k])


class VariantCache:
    """Builds variants on demand; one build per distinct (template, steps)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], Variant] = {}
        self.built = 0

    def get(self, template: Template, steps: Sequence[Step]) -> Variant:
        key = (template.key, template.digest, tuple(s.key for s in steps))
        variant = self._cache.get(key)
        if variant is None:
            variant = self._build(template, steps)
            self._cache[key] = variant
            self.built += 1
        return variant

    def _build(self, template: Template, steps: Sequence[Step]) -> Variant:
        sops = is_sops(template.body)
        if sops:  # passed through unchanged, never decrypted (secrets/)
            sealed = sealed_problem(template.body, namespace=template.namespace,
                                    overridden=bool(steps))
            if sealed:
                file = object_file(template.api_version, template.kind, template.namespace,
                                   template.name)
                return Variant(template, None, b"", "", file, (), error=sealed)
        # A SOPS file is not trimmed: its MAC covers every value.
        obj: dict[str, Any] = (deep_copy(template.body) if sops
                               else trim_server_fields(template.body)[0])
        meta = obj.setdefault("metadata", {})
        if sops and not meta.get("namespace"):
            pass   # under the MAC as written: the agent sets it after decryption
        elif template.namespace:
            meta["namespace"] = template.namespace
        else:
            meta.pop("namespace", None)
        values: dict[str, Any] | None = None
        if template.is_helm_chart:
            values = deep_copy((obj.get("spec") or {}).get("values") or {})
        warnings: list[str] = []
        file = object_file(template.api_version, template.kind, template.namespace,
                           template.name)
        try:
            for step in steps:
                if isinstance(step, SetReplicas):
                    if values is not None and step.path.startswith(VALUES_POINTER):
                        # a HelmChart divided through `gitfleet.io/replicas-path` pointing
                        # into its values: the count is a value the chart renders with
                        _set_pointer(values, step.path.removeprefix(VALUES_POINTER), step.count)
                    else:
                        _set_pointer(obj, step.path, step.count)
                elif isinstance(step, Preserve):
                    meta = obj.setdefault("metadata", {})
                    if step.rules:
                        meta.setdefault("annotations", {})[PRESERVATION_ANNOTATION] = step.rules
                    if step.labels:
                        meta.setdefault("labels", {}).update(dict(step.labels))
                elif isinstance(step, ClusternetStep):
                    who = f"{step.oset.kind} {step.oset.namespace + '/' if step.oset.namespace else ''}{step.oset.name}"  # noqa: E501
                    for override in step.oset.overrides:
                        try:
                            outcome = apply_override(obj, override,
                                                     is_helm_chart=template.is_helm_chart,
                                                     helm_values=values)
                        except PatchError as exc:
                            raise InputError(f"{who}: {exc.message}") from None
                        obj = outcome.obj
                        _check_identity(template, obj, f"{who} override "
                                        f"{override.get('name', '')!r}")
                        if outcome.values is not None:
                            values = outcome.values
                        warnings.extend(f"{who}: {w}" for w in outcome.warnings)
                else:
                    rule_target, overriders = step.policy.rules[step.rule]
                    who = f"{step.policy.kind} {step.policy.namespace + '/' if step.policy.namespace else ''}{step.policy.name} overrideRules[{step.rule}]"  # noqa: E501
                    found: list[str] = []
                    try:
                        obj = apply_overriders(obj, overriders, found)
                    except InputError as exc:
                        raise InputError(f"{who}: {exc.message}") from None
                    warnings.extend(f"{who}: {w}" for w in found)
                    _check_identity(template, obj, who)
        except InputError as exc:
            return Variant(template, None, b"", "", file, tuple(warnings), error=exc.message)
        if template.is_helm_chart and values:
            obj.setdefault("spec", {})["values"] = values
        obj = strip_server_fields(obj)
        # A SOPS file that names no namespace is listed where the template is placed: the
        # agent puts it there after decryption (its MAC covers the file as written).
        namespace = str(obj.get("metadata", {}).get("namespace", "")) or \
            (template.namespace if sops else "")
        if namespace != template.namespace:
            file = object_file(template.api_version, template.kind, namespace, template.name)
        digest = hashlib.sha256(yamlio.canonical_json(obj).encode()).hexdigest()
        text = yamlio.dump(obj).encode()
        return Variant(template, obj, text, f"sha256:{digest}", file, tuple(warnings),
                       namespace=namespace)
