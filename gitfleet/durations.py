"""Durations as people write them: Go-style text (`90s`, `1m30s`, `500ms`, `2h`) or seconds.

One parser for the whole package (command-line flags, `fleet.yaml`, policies), built on
`durationpy`, the Go `time.ParseDuration` format that Kubernetes tools use.
"""

from __future__ import annotations

import argparse
import datetime
import math

import durationpy


def parse_duration(text: str | float | int) -> float:
    """`15s`, `500ms`, `1m30s`, `1h` (or a number of seconds) -> seconds (>= 0)."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 15s, 1m30s, 1h)")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        stripped = text.strip()
        try:
            if not stripped or stripped[0] in "+-" or stripped[-1].isdigit():
                raise ValueError(stripped)  # Go wants a unit on every number but a bare 0
            seconds = durationpy.from_str(stripped).total_seconds()
        except Exception:  # durationpy raises its own exception types
            raise ValueError(
                f"not a duration: {text!r} (use e.g. 500ms, 15s, 1m30s, 1h)") from None
    if not math.isfinite(seconds):
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 15s, 1m30s, 1h)")
    if seconds < 0:
        raise ValueError(f"not a duration: {text!r} (durations cannot be negative)")
    return seconds


def format_duration(seconds: float) -> str:
    """Seconds -> Go-style text (`1m30s`), the inverse of `parse_duration`."""
    text: str = durationpy.to_str(datetime.timedelta(seconds=seconds))
    return text


def duration_arg(text: str) -> float:
    """An argparse `type=` for duration flags (Go-style, or plain seconds): a usage error, not a
    traceback, when wrong."""
    try:
        return parse_duration(float(text) if _is_number(text) else text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
