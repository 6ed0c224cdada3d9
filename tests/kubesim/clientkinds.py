"""The built-in resource types of the Kubernetes version kubesim claims, derived from the
official Python client (its API classes: each operation's path, method and answer type) and
the OpenAPI definitions of that minor version (which kinds exist in it).

kubesim may not import the client (`gitfleet.kube` owns it), so the table it serves,
`gitfleet/kubesim/builtinkinds.py`, is written by this module and checked against it by
`test_builtinkinds.py`: a newer client or another claimed version shows up as a failing test,
never as a kind silently missing. Regenerate with (through a temporary file: the module
imports kubesim)

    python -m tests.kubesim.clientkinds > /tmp/kinds.py
    mv /tmp/kinds.py gitfleet/kubesim/builtinkinds.py
"""

from __future__ import annotations

import importlib.util
import json
import re
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from gitfleet.kubesim.discovery import KUBE_VERSION
from gitfleet.model.kubeschema import known_versions

# Beta versions a default-configured server of the claimed minor serves. New betas are off by
# default since 1.24 (KEP-3136); flowcontrol v1beta3 predates that rule and is served until
# its removal in 1.32.
DEFAULT_BETAS = frozenset({("flowcontrol.apiserver.k8s.io", "v1beta3")})

_PATH = re.compile(r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))/"
                   r"(?P<ns>namespaces/\{namespace\}/)?(?P<plural>[a-z0-9]+)"
                   r"(?:/\{name\}(?:/(?P<sub>[a-z]+))?)?$")
_VERBS = {("GET", False): "list", ("POST", False): "create",
          ("DELETE", False): "deletecollection", ("GET", True): "get",
          ("PUT", True): "update", ("PATCH", True): "patch", ("DELETE", True): "delete"}
ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update",
       "watch")
_MODEL_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)*?V\d+(?:alpha\d+|beta\d+)?(?=[A-Z])")


class Kind(NamedTuple):
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: tuple[str, ...]


def _operations() -> list[tuple[str, str, str | None, bool]]:
    """(path, method, answer model, takes a `watch` parameter) of every client operation, read
    from the source of its API classes (importing them all costs seconds)."""
    out = []
    spec = importlib.util.find_spec("kubernetes")
    assert spec is not None and spec.origin is not None
    folder = Path(spec.origin).parent / "client" / "api"
    for source in sorted(folder.iterdir()):
        if not source.name.endswith("_api.py"):
            continue
        methods = {}
        for chunk in source.read_text(encoding="utf-8").split("\n    def ")[1:]:
            methods[chunk[:chunk.index("(")]] = chunk
        for name, chunk in methods.items():
            if not (name.startswith("_") and name.endswith("_serialize")):
                continue
            op = name[1:-len("_serialize")]
            found = re.search(r"method='(\w+)',\s*resource_path='([^']+)'", chunk)
            if found is None:
                continue
            answer = re.search(r"'200': \"(\w+)\"", methods.get(f"{op}_with_http_info", ""))
            head = methods.get(op, "").split(") ->", 1)[0]
            out.append((found.group(2), found.group(1), answer.group(1) if answer else None,
                        re.search(r"\bwatch:", head) is not None))
    return out


def client_kinds() -> dict[tuple[str, str, str], Kind]:
    """(group, version, kind) -> what the client knows of it."""
    found: dict[tuple[str, str, str], dict] = {}
    for path, method, answer, watch in _operations():
        m = _PATH.match(path)
        if not m:
            continue
        key = (m["group"] or "", m["core"] or m["version"], m["plural"])
        entry = found.setdefault(key, {"ns": False, "verbs": set(), "subs": set(), "kind": ""})
        if m["sub"]:
            entry["subs"].add(m["sub"])
            continue
        named = "{name}" in path
        entry["ns"] |= bool(m["ns"])
        verb = _VERBS[(method, named)]
        entry["verbs"].add(verb)
        if verb == "list" and watch:
            entry["verbs"].add("watch")
        if answer and not answer.endswith("List") and answer not in ("V1Status", "object"):
            entry["kind"] = _MODEL_PREFIX.sub("", answer)
    out = {}
    for (group, version, plural), e in found.items():
        if e["kind"]:
            out[(group, version, e["kind"])] = Kind(
                group, version, e["kind"], plural, e["ns"], tuple(sorted(e["verbs"])),
                tuple(sorted(e["subs"])))
    return out


def definition_kinds() -> dict[tuple[str, str, str], bool]:
    """(group, version, kind) of the top-level kinds of the claimed minor version -> whether
    its schema has a `status`."""
    minor = (int(KUBE_VERSION["major"]), int(KUBE_VERSION["minor"]))
    directory = [v for v in known_versions() if v.minor <= minor][-1].directory
    path = resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema", directory, "_definitions.json")
    out = {}
    for schema in json.loads(path.read_text(encoding="utf-8"))["$defs"].values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            out[(gvk.get("group", ""), gvk["version"], gvk["kind"])] = \
                "status" in (schema.get("properties") or {})
    return out


def served() -> list[Kind]:
    """The kinds a default-configured server of the claimed version serves: its GA versions and
    `DEFAULT_BETAS`, each as the client describes it (or, for a version the client no longer
    has, as it describes the same kind in another version of the group)."""
    known = client_kinds()
    by_group_kind = {(k.group, k.kind): k for k in known.values() if _ga(k.version)}
    out = []
    for (group, version, kind), has_status in sorted(definition_kinds().items()):
        if not _ga(version) and (group, version) not in DEFAULT_BETAS:
            continue
        found = known.get((group, version, kind)) or by_group_kind.get((group, kind))
        if found is None:  # not a resource of its own (Scale, Eviction, TokenRequest, ...)
            continue
        # the subresources kubesim serves: a status where this version's kind has one
        subresources = tuple(s for s in found.subresources if s != "status" or has_status)
        out.append(found._replace(version=version, subresources=subresources))
    return out


def _ga(version: str) -> bool:
    return re.fullmatch(r"v\d+", version) is not None


def module_text() -> str:
    rows = []
    for k in served():
        verbs = "ALL" if k.verbs == ALL else repr(k.verbs)
        rows.append(f"    ({k.group!r}, {k.version!r}, {k.kind!r}, {k.plural!r},\n"
                    f"     {k.namespaced!r}, {verbs}, {k.subresources!r}),")
    return ("# ruff: noqa: E501\n"
            f'"""Built-in resource types of Kubernetes {KUBE_VERSION["major"]}.'
            f'{KUBE_VERSION["minor"]}, as a default-configured server serves them.\n\n'
            "Generated by `python -m tests.kubesim.clientkinds` from the official client's API\n"
            "classes and the OpenAPI definitions of that version; do not edit by hand.\n"
            '"""\n\n'
            f"ALL = {ALL!r}\n\n"
            "# group, version, kind, plural, namespaced, verbs, subresources\n"
            "KINDS: tuple[tuple[str, str, str, str, bool, tuple[str, ...], tuple[str, ...]], "
            "...] = (\n" + "\n".join(rows) + "\n)\n")


if __name__ == "__main__":
    print(module_text(), end="")
