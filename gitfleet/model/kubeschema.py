"""Templates checked against the Kubernetes API schema of their kind, before anything renders.

A typo (`containres`) or a wrong type in a template would otherwise reach every cluster and
fail there, once per cluster, long after the commit. Built-in kinds are checked against the
OpenAPI schemas that the `kubernetes-validate` package ships per Kubernetes minor version (its
"strict" variant: unknown fields are errors); the version is `fleet.yaml: kubernetesVersion`,
by default the newest the package knows. An apiVersion that version no longer serves
(`extensions/v1beta1` Ingress) is an error naming what serves the kind now. A custom resource
is checked against the `openAPIV3Schema` of a CustomResourceDefinition in the fleet when there
is one, and otherwise only structurally (what the loader already does).

Each distinct template content is checked once per process (cached by digest): a hub renders
the same templates every round. The verdicts also travel with the hub's parse cache
(`export_results`, `preload_results`), so a process that starts next (a cold `hub --once`)
neither checks the unchanged templates again nor reads the schemas at all.

jsonschema is imported at the first template checked, and the schema files are found without
importing `kubernetes-validate` (whose package imports jsonschema too): a process that only
asks which groups are built in, or restarts from the hub's parse cache, pays for neither.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitfleet.model.objects import ObjectKey, Template, group_of
from gitfleet.model.problems import Problem

if TYPE_CHECKING:
    import jsonschema

_PACKAGE = "kubernetes_validate"
_SCHEMA_DIR = "kubernetes-json-schema"
_DEFINITIONS = "_definitions.json"
_VERSION_DIR = re.compile(r"v(\d+)\.(\d+)\.\d+-local-strict")
_WANTED = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")
_MAX_ERRORS = 5
_CACHE_LIMIT = 50_000


@dataclass(frozen=True)
class _Version:
    """One Kubernetes minor version the package ships schemas for."""

    minor: tuple[int, int]
    directory: str

    @property
    def name(self) -> str:
        return f"{self.minor[0]}.{self.minor[1]}"


@functools.cache
def _schema_root() -> Path:
    """The package's schema folder, found without running the package's `__init__`."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"No module named {_PACKAGE!r}", name=_PACKAGE)
    return Path(next(iter(spec.submodule_search_locations))) / _SCHEMA_DIR


@functools.cache
def known_versions() -> tuple[_Version, ...]:
    """The Kubernetes minor versions with schemas, oldest first."""
    root = _schema_root()
    found = []
    for entry in root.iterdir():
        match = _VERSION_DIR.fullmatch(entry.name)
        if match:
            found.append(_Version((int(match[1]), int(match[2])), entry.name))
    return tuple(sorted(found, key=lambda v: v.minor))


def pick_version(wanted: str) -> tuple[_Version, str]:
    """The schema version for `fleet.yaml: kubernetesVersion` ('' = newest) and a warning
    ('' if none): a version newer than the package knows uses the newest, an older one the
    oldest."""
    versions = known_versions()
    if not wanted:
        return versions[-1], ""
    match = _WANTED.fullmatch(wanted.strip())
    if match is None:
        return versions[-1], (f"kubernetesVersion {wanted!r} is not a version like 1.30; "
                              f"templates are checked against Kubernetes {versions[-1].name}")
    minor = (int(match[1]), int(match[2]))
    fitting = [v for v in versions if v.minor <= minor]
    if not fitting:
        return versions[0], (f"kubernetesVersion {wanted} is older than the schemas gitfleet "
                             f"has; templates are checked against Kubernetes {versions[0].name}")
    return fitting[-1], ""


class _Schemas:
    """The definitions of one Kubernetes version, indexed by group/version/kind."""

    def __init__(self, version: _Version) -> None:
        self.version = version
        path = _schema_root() / version.directory / _DEFINITIONS
        self.defs: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
        self.by_gvk: dict[tuple[str, str, str], str] = {}
        self.versions_of: dict[str, list[str]] = {}  # kind -> apiVersions serving it
        self.groups: set[str] = set()
        for name, definition in self.defs.items():
            for gvk in definition.get("x-kubernetes-group-version-kind") or ():
                group, ver, kind = gvk.get("group", ""), gvk["version"], gvk["kind"]
                if not _is_object_kind(definition, kind):
                    continue
                self.by_gvk[(group, ver, kind)] = name
                self.versions_of.setdefault(kind, []).append(f"{group}/{ver}" if group else ver)
                self.groups.add(group)
        self._validators: dict[str, jsonschema.Draft202012Validator] = {}

    def validator(self, name: str) -> jsonschema.Draft202012Validator:
        found = self._validators.get(name)
        if found is None:
            import jsonschema

            root = {"$defs": self.defs, "$ref": f"#/$defs/{name}"}
            found = self._validators[name] = jsonschema.Draft202012Validator(root)
        return found

    def is_builtin_group(self, group: str) -> bool:
        """Whether `group` belongs to Kubernetes itself: a CRD's group needs a dot, so an
        undotted one (`extensions`) is built-in, and a dotted one is if this version serves
        any kind of it."""
        return "." not in group or group in self.groups


def is_builtin_group(group: str, kubernetes_version: str = "") -> bool:
    """Whether `group` is one of Kubernetes' own (at that version): its kinds' scopes are
    known; a custom group's are known only from a CRD."""
    if "." not in group:        # what _Schemas.is_builtin_group answers without the schemas
        return True
    version, _ = pick_version(kubernetes_version)
    return _schemas(version.directory).is_builtin_group(group)


def _is_object_kind(definition: Mapping[str, Any], kind: str) -> bool:
    """A top-level kind (not a List, not an options/event type without metadata)."""
    props = definition.get("properties") or {}
    return "metadata" in props and not kind.endswith("List")


@functools.cache
def _schemas(directory: str) -> _Schemas:
    for v in known_versions():
        if v.directory == directory:
            return _Schemas(v)
    raise LookupError(directory)


_RESULTS: dict[tuple[str, str], tuple[str, ...]] = {}


_USED: set[tuple[str, str]] = set()     # verdicts checked or looked up since the last export


def export_results() -> dict[str, dict[str, list[str]]]:
    """The verdicts of the templates checked since the last export (the snapshots loaded
    meanwhile, failed templates included), as JSON-shaped data: per schema version, per
    template (and CRD) digest, the problems found (none for most)."""
    out: dict[str, dict[str, list[str]]] = {}
    for directory, key in sorted(_USED):
        messages = _RESULTS.get((directory, key))
        if messages is not None:
            out.setdefault(directory, {})[key] = list(messages)
    _USED.clear()
    return out


def preload_results(entries: Mapping[str, Any]) -> int:
    """Take back what `export_results` gave (verdicts already held are kept); returns how
    many were taken. Anything not in that shape is a ValueError, and nothing is taken."""
    taken: dict[tuple[str, str], tuple[str, ...]] = {}
    for directory, verdicts in entries.items():
        if not isinstance(verdicts, dict):
            raise ValueError(f"not a schema check entry: {directory!r}")
        for key, messages in verdicts.items():
            if not (isinstance(messages, list) and all(isinstance(m, str) for m in messages)):
                raise ValueError(f"not a schema check entry: {key!r}")
            taken[(str(directory), str(key))] = tuple(messages)
    if len(_RESULTS) + len(taken) > _CACHE_LIMIT:
        return 0
    for cache_key, messages in taken.items():
        _RESULTS.setdefault(cache_key, messages)
    return len(taken)


def check_templates(templates: Mapping[ObjectKey, Template], kubernetes_version: str = ""
                    ) -> tuple[list[tuple[ObjectKey, Problem]], list[Problem]]:
    """The templates that fail their kind's schema (each with one problem naming every field
    at fault), and warnings about the version itself. Called by the loader once every
    template (and so every CRD) is read."""
    version, note = pick_version(kubernetes_version)
    warnings = [Problem("fleet.yaml", None, "FleetSettings", note)] if note else []
    crds = _crds(templates.values())
    failed = []
    for key, t in templates.items():
        messages = _check(version.directory, t, crds)
        if messages:
            who = f"{t.kind}/{t.namespace + '/' if t.namespace else ''}{t.name}"
            failed.append((key, Problem(t.origin.path, t.origin.line, who,
                                        "; ".join(messages))))
    return failed, warnings


def _check(directory: str, t: Template, crds: Mapping[tuple[str, str], Template]
           ) -> tuple[str, ...]:
    group = group_of(t.api_version)
    crd = crds.get((group, t.kind))
    basis = crd.digest if crd is not None else ""
    cache_key = (directory, f"{t.digest}:{basis}")
    if t.digest:
        _USED.add(cache_key)
        if cache_key in _RESULTS:
            return _RESULTS[cache_key]
    schemas = _schemas(directory)   # read (~2 MB of JSON) at the first template not cached
    # Not checked: SOPS metadata (travels with an encrypted file) and status (trimmed before
    # anything is applied: an exported object's status is no error of the template).
    body = {k: v for k, v in t.body.items()
            if k != "status" and not (k == "sops" and isinstance(v, dict))}
    if schemas.is_builtin_group(group):
        result = _check_builtin(schemas, body, group, t.api_version, t.kind)
    elif crd is not None:
        result = _check_custom(body, t.api_version, crd)
    else:
        result = ()
    if t.digest:
        if len(_RESULTS) > _CACHE_LIMIT:
            _RESULTS.clear()
            _USED.intersection_update({cache_key})
        _RESULTS[cache_key] = result
    return result


def _check_builtin(schemas: _Schemas, body: Mapping[str, Any], group: str, api_version: str,
                   kind: str) -> tuple[str, ...]:
    version = api_version.rsplit("/", 1)[-1]
    name = schemas.by_gvk.get((group, version, kind))
    if name is None:
        k8s = schemas.version.name
        served = schemas.versions_of.get(kind)
        if served:
            best = _preferred(served, group)
            return (f"apiVersion {api_version} of {kind} is not served by Kubernetes {k8s}; "
                    f"use {best}",)
        return (f"Kubernetes {k8s} serves no kind {kind} in {api_version}",)
    return _errors(schemas.validator(name), body, secret=kind == "Secret")


_VERSION_ORDER = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def _preferred(served: list[str], group: str) -> str:
    """The apiVersion to suggest: the kind's own group if it still has one, its most stable
    version (v2 > v1 > v1beta2 > v1beta1 > alpha), as Kubernetes orders versions."""
    def rank(api_version: str) -> tuple[int, int, int, int]:
        g = group_of(api_version)
        match = _VERSION_ORDER.fullmatch(api_version.rsplit("/", 1)[-1])
        if match is None:
            return (g == group, -1, 0, 0)
        stability = {None: 2, "beta": 1, "alpha": 0}[match[2]]
        return (g == group, stability, int(match[1]), int(match[3] or 0))
    return max(served, key=rank)


def _errors(validator: jsonschema.Draft202012Validator, body: Any, *, secret: bool = False
            ) -> tuple[str, ...]:
    # A missing required field is left to the API server: SEMANTICS asks for unknown fields
    # and wrong types, and partial objects (a Deployment without a selector) are common in
    # fleets whose overrides complete them per cluster.
    found = sorted((e for e in validator.iter_errors(body) if e.validator != "required"),
                   key=lambda e: [str(p) for p in e.absolute_path])
    messages: list[str] = []
    for error in found:
        for message in _describe(error, secret=secret):
            if message not in messages:
                messages.append(message)
    if len(messages) > _MAX_ERRORS:
        messages = [*messages[:_MAX_ERRORS], f"and {len(messages) - _MAX_ERRORS} more"]
    return tuple(messages)


def _describe(error: jsonschema.ValidationError, *, secret: bool = False) -> Iterator[str]:
    """One message per problem, naming the path and the value; never a Secret's value
    (errors reach errors.yaml, logs and the dashboard: SEMANTICS, "Secrets")."""
    where = _path(error.absolute_path)
    if secret and where.startswith(_SECRET_VALUES):
        if error.validator == "type":
            wanted = error.validator_value
            wanted = [w for w in wanted if w != "null"] if isinstance(wanted, list) else [wanted]
            yield f"{where}: the value (not shown: a Secret's) is not {' or '.join(wanted)}"
        else:
            yield f"{where}: the value (not shown: a Secret's) fails {error.validator!r}"
        return
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list((error.schema.get("properties") or {}) if isinstance(error.schema, dict)
                     else ())
        for extra in sorted(set(error.instance) - set(known)):
            at = f"{where}.{extra}" if where else str(extra)
            close = difflib.get_close_matches(str(extra), known, n=1, cutoff=0.6)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            yield f"{at}: unknown field{hint}"
        return
    if error.validator in ("oneOf", "anyOf", "allOf") and error.context and \
            all(sub.validator == "required" for sub in error.context):
        return  # every alternative only lacks a required field: left to the API server
    if error.validator == "type":
        wanted = error.validator_value
        wanted = [w for w in wanted if w != "null"] if isinstance(wanted, list) else [wanted]
        yield f"{where or '(object)'}: {_shown(error.instance)} is not {' or '.join(wanted)}"
        return
    if error.validator == "oneOf" and isinstance(error.schema, dict):
        kinds = [t for alt in error.schema.get("oneOf") or () if isinstance(alt, dict)
                 for t in _types(alt.get("type")) if t != "null"]
        if kinds:
            yield f"{where or '(object)'}: {_shown(error.instance)} is not {' or '.join(kinds)}"
            return
    yield f"{where or '(object)'}: {error.message[:200]}"


_SECRET_VALUES = ("data", "stringData", "metadata.annotations")


def _types(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value] if isinstance(value, str) else []


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


_FIELD = re.compile(r"^([A-Za-z0-9_$@/.\-]+(?:\[\d+\][A-Za-z0-9_$@/.\-]*)*): ")


def first_field(message: str) -> tuple[str | int, ...]:
    """The JSON path of the first field a problem message names (`spec.template.spec.
    containres: unknown field` -> ("spec", "template", "spec", "containres")), or () when it
    names none; the loader turns it into the field's line. Keys holding dots split wrongly and
    then point at their parent, which is still the right neighbourhood."""
    match = _FIELD.match(message)
    if match is None:
        return ()
    parts: list[str | int] = []
    for token in re.findall(r"\[(\d+)\]|([^.\[\]]+)", match[1]):
        parts.append(int(token[0]) if token[0] else token[1])
    return tuple(parts)


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# -- custom resources ---------------------------------------------------------------------


def _crds(templates: Iterable[Template]) -> dict[tuple[str, str], Template]:
    found = {}
    for t in templates:
        if t.kind == "CustomResourceDefinition" and t.api_version == "apiextensions.k8s.io/v1":
            spec = t.body.get("spec")
            if not isinstance(spec, dict):
                continue
            names = spec.get("names")
            if isinstance(names, dict) and isinstance(names.get("kind"), str):
                found[(str(spec.get("group", "")), names["kind"])] = t
    return found


def _check_custom(body: Mapping[str, Any], api_version: str, crd: Template) -> tuple[str, ...]:
    version = api_version.rsplit("/", 1)[-1]
    spec = crd.body.get("spec") or {}
    for entry in spec.get("versions") or ():
        if not isinstance(entry, dict) or entry.get("name") != version:
            continue
        if entry.get("served") is False:
            return (f"apiVersion {api_version} is not served by CustomResourceDefinition "
                    f"{crd.name}",)
        block = entry.get("schema")
        schema = block.get("openAPIV3Schema") if isinstance(block, dict) else None
        if not isinstance(schema, dict):
            return ()
        import jsonschema

        try:
            return _errors(_crd_validator(crd.digest, version, json.dumps(schema)), body)
        except (jsonschema.SchemaError, re.error, TypeError, ValueError) as exc:
            return (f"the openAPIV3Schema of CustomResourceDefinition {crd.name} ({version}) "
                    f"cannot check it: {str(exc).splitlines()[0][:200]}",)
    served = [e.get("name") for e in spec.get("versions") or () if isinstance(e, dict)]
    return (f"apiVersion {api_version} is not a version of CustomResourceDefinition "
            f"{crd.name} (it has {', '.join(str(s) for s in served)})",)


@functools.lru_cache(maxsize=256)
def _crd_validator(digest: str, version: str, schema_text: str
                   ) -> jsonschema.Draft202012Validator:
    import jsonschema

    root = _from_openapi(json.loads(schema_text), root=True)
    jsonschema.Draft202012Validator.check_schema(root)
    return jsonschema.Draft202012Validator(root)


_OPENAPI_KEPT = frozenset({
    "type", "properties", "required", "items", "additionalProperties", "enum", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "allOf", "anyOf", "oneOf", "not", "multipleOf",
})


def _from_openapi(schema: Any, *, root: bool = False) -> Any:
    """A CRD's structural OpenAPI v3 schema as JSON Schema, with the API server's rules:
    an object with `properties` takes no other fields (they would be pruned or, with strict
    field validation, refused) unless `x-kubernetes-preserve-unknown-fields`; `nullable`
    admits null; `x-kubernetes-int-or-string` admits both; the root always admits apiVersion,
    kind and metadata."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _OPENAPI_KEPT:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: _from_openapi(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _from_openapi(value)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [_from_openapi(v) for v in value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            bound = schema.get("minimum" if key == "exclusiveMinimum" else "maximum")
            if value and bound is not None:
                out[key] = bound
        else:
            out[key] = value
    for key in ("exclusiveMinimum", "exclusiveMaximum"):
        if key in out and isinstance(schema.get(key), bool):
            out.pop("minimum" if key == "exclusiveMinimum" else "maximum", None)
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if root:
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
        if props["metadata"].get("type") == "object" and "properties" not in props["metadata"]:
            props["metadata"] = {"type": "object"}
    if "properties" in out and "additionalProperties" not in out and \
            not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out
