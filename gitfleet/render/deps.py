"""Karmada `propagateDeps: true`: what a workload needs goes with it.

The ConfigMaps, Secrets, ServiceAccounts and PersistentVolumeClaims that a claimed workload's
pod template names (volumes, projected sources, envFrom, env valueFrom, serviceAccountName,
imagePullSecrets) are added to the same clusters, in the same Description, when they are
templates of the fleet. A dependency that some unit already delivers to that cluster is left
to it (no double delivery); a missing one is a warning, unless the reference is `optional`
or it is the `default` ServiceAccount every namespace has.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gitfleet.model.objects import ObjectKey, Propagation, Template
from gitfleet.render.overriders import POD_SPEC_PATHS
from gitfleet.render.plans import Placement, UnitPlan

# Where the pod spec lives: the workloads the image overrider knows, and CronJobs.
_POD_SPECS: dict[str, tuple[str, ...]] = {
    **POD_SPEC_PATHS, "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}
_CONTAINERS = ("containers", "initContainers", "ephemeralContainers")


def pod_spec(template: Template) -> dict[str, Any] | None:
    path = _POD_SPECS.get(template.kind)
    if path is None:
        return None
    node: Any = template.body
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def references(spec: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """(kind, name, optional) of every object the pod spec names."""
    def named(kind: str, ref: Any, key: str = "name") -> Iterator[tuple[str, str, bool]]:
        if isinstance(ref, dict) and isinstance(ref.get(key), str) and ref[key]:
            yield kind, ref[key], bool(ref.get("optional"))

    for volume in _dicts(spec.get("volumes")):
        yield from named("ConfigMap", volume.get("configMap"))
        yield from named("Secret", volume.get("secret"), "secretName")
        yield from named("PersistentVolumeClaim", volume.get("persistentVolumeClaim"),
                         "claimName")
        projected = volume.get("projected")
        for source in _dicts(projected.get("sources") if isinstance(projected, dict) else None):
            yield from named("ConfigMap", source.get("configMap"))
            yield from named("Secret", source.get("secret"))
    for key in _CONTAINERS:
        for container in _dicts(spec.get(key)):
            for source in _dicts(container.get("envFrom")):
                yield from named("ConfigMap", source.get("configMapRef"))
                yield from named("Secret", source.get("secretRef"))
            for env in _dicts(container.get("env")):
                value_from = env.get("valueFrom")
                if isinstance(value_from, dict):
                    yield from named("ConfigMap", value_from.get("configMapKeyRef"))
                    yield from named("Secret", value_from.get("secretKeyRef"))
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(account, str) and account:
        yield "ServiceAccount", account, account == "default"
    for secret in _dicts(spec.get("imagePullSecrets")):
        yield from named("Secret", secret)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def propagate_deps(plans: list[UnitPlan], policies: Mapping[tuple[str, str, str], Propagation],
                   templates: Mapping[ObjectKey, Template]) -> None:
    """Add the dependencies of the workloads of every `propagateDeps` policy's plan, in place
    (idempotent: a plan passed twice gains nothing the second time)."""
    wanted = [plan for plan in plans if not plan.error and _propagates(plan, policies)]
    if not wanted:
        return
    delivered = {(c, p.template.key) for plan in plans for c, placed in plan.clusters.items()
                 for p in placed}
    for plan in wanted:
        missing: set[str] = set()
        for cluster, placed in sorted(plan.clusters.items()):
            for dep in _dependencies(placed, templates, missing):
                if (cluster, dep.key) not in delivered:
                    placed.append(Placement(dep))
                    delivered.add((cluster, dep.key))
        plan.warnings.extend(sorted(missing))


def _propagates(plan: UnitPlan, policies: Mapping[tuple[str, str, str], Propagation]) -> bool:
    policy = policies.get((plan.kind, plan.namespace, plan.name))
    return plan.subscription is None and policy is not None and \
        policy.spec.get("propagateDeps") is True


def _dependencies(placed: list[Placement], templates: Mapping[ObjectKey, Template],
                  missing: set[str]) -> list[Template]:
    found: dict[ObjectKey, Template] = {}
    for placement in list(placed):
        t = placement.template
        spec = pod_spec(t)
        if spec is None:
            continue
        for kind, name, optional in references(spec):
            key = ObjectKey("", kind, t.namespace, name)
            dep = templates.get(key)
            if dep is not None:
                found.setdefault(key, dep)
            elif not optional:
                missing.add(f"propagateDeps: {t.kind} {t.namespace}/{t.name} needs {kind} "
                            f"{t.namespace}/{name}, which is not a template of the fleet")
    return [found[k] for k in sorted(found)]
