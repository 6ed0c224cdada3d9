"""Chart versions: Helm's constraint syntax resolved with a maintained semver library.

`version` empty means the newest release (pre-releases only when asked for, as Helm); an exact
version is taken as it is; anything else is a range (`^1.2`, `~1.2.3`, `>=1.0, <2`, `1.x`),
resolved by node-semver (Helm's commas between ANDed terms become spaces).

node-semver compiles ~60 regular expressions when imported (~30 ms): it is imported where a
chart's version is resolved, so a command or a fleet without HelmCharts never pays for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitfleet.charts.errors import ChartError


def pick(constraint: str, versions: Iterable[str], *, what: str) -> str:
    """The newest of `versions` that `constraint` allows; an error names what was there."""
    import nodesemver

    available = [v for v in versions if nodesemver.valid(v, loose=True)]
    wanted = constraint.strip()
    if wanted and nodesemver.valid(wanted.lstrip("v"), loose=False) and "," not in wanted:
        exact = [v for v in available if v.lstrip("v") == wanted.lstrip("v")]
        if exact:
            return exact[0]
        raise ChartError(f"{what}: no version {wanted} (available: {_listed(available)})")
    spec = wanted.replace(",", " ") or "*"
    try:
        nodesemver.Range(spec, loose=True)
    except (ValueError, TypeError):
        raise ChartError(f"{what}: version {wanted!r} is neither a version nor a semver "
                         "range") from None
    found = nodesemver.max_satisfying(available, spec, loose=True)
    if found is None:
        raise ChartError(f"{what}: no version matches {wanted or 'latest'!r} (available: "
                         f"{_listed(available)})")
    return str(found)


def _listed(versions: list[str]) -> str:
    if not versions:
        return "none"
    import nodesemver

    ordered = list(nodesemver.rsort(list(versions), loose=True))
    return ", ".join(ordered[:5]) + (" ..." if len(ordered) > 5 else "")
