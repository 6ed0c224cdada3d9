"""Dependencies between applications: `gitfleet.io/depends-on: <ns>/<name>,...` on a
Subscription or propagation policy (a "unit").

A unit is named as its Descriptions are: `<namespace>/<name>`, a ClusterPropagationPolicy
`_cluster/<name>` (never with `@helm`). The hub writes the list into each Description as
`dependsOn`; the agent holds a Description until every Description of those units in its
cluster is healthy. A unit that names no unit of the fleet, or a cycle, is an error here, so
`validate` refuses it before any cluster could wait forever.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gitfleet.layout import CLUSTER_SCOPE_DIR
from gitfleet.model.objects import Origin

ANNOTATION = "gitfleet.io/depends-on"


def parse(value: object) -> tuple[tuple[str, ...], list[str]]:
    """The unit names of an annotation value, and what is wrong with it."""
    names: list[str] = []
    problems = []
    for part in str(value or "").split(","):
        name = part.strip()
        if not name:
            continue
        if name.endswith("@helm"):
            name = name.removesuffix("@helm")
        if name.count("/") != 1 or not all(name.split("/")):
            problems.append(f"{ANNOTATION}: {name!r} is not a unit (<namespace>/<name>, or "
                            f"{CLUSTER_SCOPE_DIR}/<name> for a ClusterPropagationPolicy)")
            continue
        if name not in names:
            names.append(name)
    return tuple(names), problems


def unit_name(namespace: str, name: str) -> str:
    return f"{namespace or CLUSTER_SCOPE_DIR}/{name}"


def check(units: Mapping[str, tuple[tuple[str, ...], Origin, str]]
          ) -> Iterable[tuple[Origin, str, str]]:
    """(origin, who, message) for each unknown unit named and each unit on a cycle.
    `units`: unit name -> (the units it depends on, where it is defined, its kind/ns/name)."""
    for unit, (deps, origin, who) in sorted(units.items()):
        for dep in deps:
            if dep == unit:
                yield origin, who, f"{ANNOTATION}: {unit} depends on itself"
            elif dep not in units:
                yield origin, who, (f"{ANNOTATION}: no Subscription or propagation policy "
                                    f"{dep} in the fleet")
    state: dict[str, int] = {}   # 1 on the path, 2 done
    reported: set[str] = set()

    def visit(unit: str, path: list[str]) -> Iterable[tuple[Origin, str, str]]:
        state[unit] = 1
        path.append(unit)
        for dep in units[unit][0]:
            if dep not in units or dep == unit:
                continue
            if state.get(dep) == 1:
                cycle = path[path.index(dep):] + [dep]
                for member in cycle[:-1]:
                    if member not in reported:
                        reported.add(member)
                        yield units[member][1], units[member][2], (
                            f"{ANNOTATION}: a cycle: {' -> '.join(cycle)}")
            elif dep not in state:
                yield from visit(dep, path)
        path.pop()
        state[unit] = 2

    for unit in sorted(units):
        if unit not in state:
            yield from visit(unit, [])
