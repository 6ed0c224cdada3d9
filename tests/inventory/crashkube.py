"""A cluster twin whose process "dies" after a chosen number of writes, for crash tests.

Every write (apply, merge patch, delete) counts; when the armed count is reached the write
raises `Crash` instead of happening, as a SIGKILL between two requests would leave things.
`snapshot`/`restore` copy the cluster so one history can be crashed at every write in turn.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tests.agent.memkube import MemKube


class Crash(BaseException):
    """The process died here (BaseException: nothing in the agent may catch it)."""


class CrashKube(MemKube):
    def __init__(self) -> None:
        super().__init__()
        self.crash_after: int | None = None
        self.done = 0

    def arm(self, writes: int | None) -> None:
        self.crash_after, self.done = writes, 0

    def _write(self) -> None:
        if self.crash_after is not None and self.done >= self.crash_after:
            self.crash_after = None
            raise Crash
        self.done += 1

    def apply(self, body: Mapping[str, Any], *, force: bool = True,
              field_manager: str | None = None) -> dict[str, Any]:
        self._write()
        return super().apply(body, force=force, field_manager=field_manager)

    def merge_patch(self, api_version: str, kind: str, namespace: str, name: str,
                    patch: Mapping[str, Any]) -> dict[str, Any] | None:
        self._write()
        return super().merge_patch(api_version, kind, namespace, name, patch)

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        self._write()
        return super().delete(api_version, kind, namespace, name)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return copy.deepcopy(self.objects)

    def restore(self, objects: Mapping[str, dict[str, Any]]) -> None:
        self.objects = copy.deepcopy(dict(objects))
        self.calls.clear()
        self.arm(None)

    def configmaps(self, namespace: str) -> dict[str, dict[str, Any]]:
        return {o["metadata"]["name"]: o for o in self.objects.values()
                if o["kind"] == "ConfigMap" and o["metadata"].get("namespace") == namespace}
