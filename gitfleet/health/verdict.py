"""What the judge says about one live object, and the few readers every family shares.

A verdict is a health and a sentence a person can act on. The readers take the raw object as
the API server returns it (plain mappings), so the judge needs no typed client and costs a few
dictionary look-ups per object: the agent judges every object it owns on every sync.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gitfleet.wire.status import Health

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Verdict:
    health: Health
    message: str = ""


HEALTHY = Verdict(Health.HEALTHY)


def healthy(message: str = "") -> Verdict:
    return Verdict(Health.HEALTHY, message) if message else HEALTHY


def progressing(message: str) -> Verdict:
    return Verdict(Health.PROGRESSING, message)


def degraded(message: str) -> Verdict:
    return Verdict(Health.DEGRADED, message)


def suspended(message: str) -> Verdict:
    return Verdict(Health.SUSPENDED, message)


def section(obj: Obj, name: str) -> Obj:
    """`spec` or `status` (or any mapping field); an absent or malformed one reads as empty."""
    value = obj.get(name)
    if type(value) is dict:  # what the API gives: skip the slower ABC check
        return value
    return value if isinstance(value, Mapping) else {}


def count(status: Obj, name: str) -> int | None:
    """A counter of the status, or None when the controller did not report it (never 0)."""
    value = status.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def conditions(status: Obj) -> Iterator[Obj]:
    for c in status.get("conditions") or ():
        if type(c) is dict or isinstance(c, Mapping):
            yield c


def condition(status: Obj, kind: str) -> Obj | None:
    """The condition of type `kind`, or None."""
    for c in status.get("conditions") or ():
        if (type(c) is dict or isinstance(c, Mapping)) and c.get("type") == kind:
            return c
    return None


def said(c: Obj, fallback: str = "") -> str:
    """A condition's reason and message as one phrase."""
    reason = str(c.get("reason") or "")
    message = str(c.get("message") or "")
    if reason and message:
        return f"{reason}: {message}"
    return reason or message or fallback


def generation_lag(obj: Obj, what: str) -> Verdict | None:
    """Progressing while the controller has not observed the newest spec; None when it has
    (or when the object has no generation to compare)."""
    generation = section(obj, "metadata").get("generation")
    if not isinstance(generation, int) or isinstance(generation, bool):
        return None
    observed = section(obj, "status").get("observedGeneration")
    if not isinstance(observed, int) or isinstance(observed, bool):
        return progressing(f"waiting for the {what} controller to observe generation "
                           f"{generation}")
    if observed < generation:
        return progressing(f"waiting for the {what} controller to observe generation "
                           f"{generation} (observed {observed})")
    return None


def timestamp(value: Any) -> float | None:
    """An RFC 3339 time as Kubernetes writes it, in seconds since the epoch; None if unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
