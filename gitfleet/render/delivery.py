"""Templates that nothing delivers: said, never dropped in silence.

A template under `templates/` that no Subscription feeds and no Karmada policy claims (nor
brings along as a dependency) reaches no cluster. That is often a slip — a feed naming the
wrong namespace, a policy whose selector misses — so every such template is a warning, one
per file (or kustomize folder), naming the objects. CustomResourceDefinitions are left out: a
CRD in the fleet also tells gitfleet a custom kind's schema and scope, without being delivered.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from gitfleet.model.loader import Fleet
from gitfleet.model.objects import ObjectKey, Propagation, Template
from gitfleet.model.problems import Problem
from gitfleet.render.deps import pod_spec, references
from gitfleet.render.plans import resolve_feed

NOT_DELIVERED = "not delivered to any cluster"


def delivered_keys(fleet: Fleet, claims: Mapping[ObjectKey, Propagation]) -> set[ObjectKey]:
    """The templates some unit takes: fed by a Subscription (placed or not), claimed by a
    Karmada policy, or named by the pod template of a workload a `propagateDeps` policy claims.
    A function of the whole fleet and its claims, so an incremental render says the same."""
    keys = set(claims)
    for sub in fleet.subscriptions:
        for feed in sub.feeds:
            found = resolve_feed(feed, sub.namespace, fleet.templates)
            if found is not None:
                keys.add(found.key)
    for key, policy in claims.items():
        if policy.spec.get("propagateDeps") is not True:
            continue
        template = fleet.templates.get(key)
        spec = pod_spec(template) if template is not None else None
        for kind, name, _ in references(spec) if spec is not None else ():
            keys.add(ObjectKey("", kind, key.namespace, name))
    return keys


def undelivered_warnings(templates: Mapping[ObjectKey, Template],
                         delivered: Collection[ObjectKey], *,
                         policies_broken: bool = False) -> list[Problem]:
    """One warning per file holding templates that nothing delivers."""
    if policies_broken:
        return []   # a policy that could not be read may deliver them: nothing to say yet
    by_file: dict[str, list[Template]] = {}
    for key, t in sorted(templates.items()):
        if key in delivered or t.kind == "CustomResourceDefinition":
            continue
        by_file.setdefault(t.origin.path, []).append(t)
    out = []
    for path, ts in sorted(by_file.items()):
        names = ", ".join(_name(t) for t in ts[:5])
        more = f" and {len(ts) - 5} more" if len(ts) > 5 else ""
        first = ts[0]
        out.append(Problem(path, first.origin.line if len(ts) == 1 else None, _name(first),
                           f"{NOT_DELIVERED}: no Subscription feeds and no propagation policy "
                           f"selects {names}{more}"))
    return out


def policies_broken(fleet: Fleet) -> bool:
    """Whether a file that may hold policies could not be read (then what delivers a template
    is not known)."""
    return any(not p.startswith("clusters/") for p in fleet.broken_paths)


def is_undelivered(problem: Problem) -> bool:
    return problem.message.startswith(NOT_DELIVERED + ":")


def _name(t: Template) -> str:
    return f"{t.kind}/{t.namespace + '/' if t.namespace else ''}{t.name}"

