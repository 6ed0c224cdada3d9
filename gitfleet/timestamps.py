"""RFC 3339 UTC times to and from epoch seconds, as Kubernetes and gitfleet's files write them.

Pure (no clock): the wire formats and the render core convert times without reading one.
"""

from __future__ import annotations

from datetime import UTC, datetime


def isoformat(ts: float) -> str:
    """RFC 3339 UTC, second precision: what Kubernetes and our status files use."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
