"""CronJob schedules checked as the API server checks them (robfig/cron's standard parser).

A schedule the server cannot parse is refused at write time with the parser's own words
(`expected exactly 5 fields, found 1: [hourly]`), so a typo fails the apply instead of a
CronJob that never runs. Five fields (minute hour day-of-month month day-of-week) with
`*`, `?`, ranges, steps, lists and month/day names, or a descriptor (`@daily`, `@every 1h`);
`TZ=`/`CRON_TZ=` belong in `spec.timeZone`.
"""

from __future__ import annotations

import re

_NONE: dict[str, int] = {}
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
          (0, 59, _NONE), (0, 23, _NONE), (1, 31, _NONE),
           (1, 12, {m: i + 1 for i, m in enumerate(
               ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                "dec"))}),
           (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri",
                                               "sat"))}))
_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily",
                          "@midnight", "@hourly"})
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


def schedule_error(schedule: str) -> str:
    """Why the server refuses `schedule` ('' when it parses)."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        return "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    if text.startswith("@"):
        if text in _DESCRIPTORS:
            return ""
        if text.startswith("@every "):
            every = text[len("@every "):]
            return "" if _DURATION.match(every) else \
                f"failed to parse duration {text}: time: invalid duration \"{every}\""
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    for field, (low, high, names) in zip(fields, _BOUNDS, strict=True):
        for expr in field.split(","):
            error = _range_error(expr, low, high, names)
            if error:
                return error
    return ""


def _number(text: str, names: dict[str, int]) -> tuple[int, str]:
    if text.lower() in names:
        return names[text.lower()], ""
    try:
        value = int(text, 10) if re.fullmatch(r"[+-]?[0-9]+", text) else int("x")
    except ValueError:
        return 0, f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": ' \
                  "invalid syntax"
    if value < 0:
        return 0, f"negative number ({value}) not allowed: {text}"
    return value, ""


def _range_error(expr: str, low: int, high: int, names: dict[str, int]) -> str:
    range_and_step = expr.split("/")
    if len(range_and_step) > 2:
        return f"too many slashes: {expr}"
    low_high = range_and_step[0].split("-")
    if len(low_high) > 2:
        return f"too many hyphens: {expr}"
    if low_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start, error = _number(low_high[0], names)
        if error:
            return error
        end = start
        if len(low_high) == 2:
            end, error = _number(low_high[1], names)
            if error:
                return error
    if len(range_and_step) == 2:
        step, error = _number(range_and_step[1], names)
        if error:
            return error
        if step == 0:
            return f"step of range should be a positive number: {expr}"
        if len(low_high) == 1 and low_high[0] not in ("*", "?"):
            end = high
    if start < low:
        return f"beginning of range ({start}) below minimum ({low}): {expr}"
    if end > high:
        return f"end of range ({end}) above maximum ({high}): {expr}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {expr}"
    return ""
