"""Discovery: from (apiVersion, kind) to the REST path of a resource, cached per group-version.

Only the group-versions the agent uses are asked for (one GET each), not the whole server, and
a miss is asked again once, because a CRD applied a moment ago makes a new kind servable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gitfleet.kube.errors import ApiError, NotServed


@dataclass(frozen=True)
class ApiResource:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def base(self) -> str:
        if "/" in self.api_version:
            return f"/apis/{self.api_version}"
        return f"/api/{self.api_version}"

    def collection(self, namespace: str = "") -> str:
        """The path to list or create in; all namespaces when `namespace` is empty."""
        if self.namespaced and namespace:
            return f"{self.base()}/namespaces/{quote(namespace)}/{self.plural}"
        return f"{self.base()}/{self.plural}"

    def item(self, namespace: str, name: str) -> str:
        return f"{self.collection(namespace)}/{quote(name)}"


Fetch = Callable[[str], Mapping[str, Any] | None]


class Resolver:
    """Caches each group-version's resource list; `fetch(path)` returns None on 404."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._cache: dict[str, dict[str, ApiResource]] = {}
        self._lock = threading.Lock()

    def _load(self, api_version: str) -> dict[str, ApiResource]:
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        doc = self._fetch(path)
        kinds: dict[str, ApiResource] = {}
        for item in (doc or {}).get("resources") or ():
            name = str(item.get("name", ""))
            if "/" in name:
                continue
            kinds[str(item.get("kind"))] = ApiResource(
                api_version=api_version, kind=str(item.get("kind")), plural=name,
                namespaced=bool(item.get("namespaced")))
        with self._lock:
            self._cache[api_version] = kinds
        return kinds

    def resolve(self, api_version: str, kind: str) -> ApiResource:
        with self._lock:
            known = self._cache.get(api_version)
        if known is not None and kind in known:
            return known[kind]
        try:
            fresh = self._load(api_version)
        except ApiError as exc:
            if exc.status == 404:
                raise NotServed(api_version, kind) from None
            raise
        if kind not in fresh:
            raise NotServed(api_version, kind)
        return fresh[kind]

    def forget(self, api_version: str) -> None:
        with self._lock:
            self._cache.pop(api_version, None)
