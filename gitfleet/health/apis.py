"""APIService and CustomResourceDefinition: is the API served?

An APIService is Healthy when Available (gitops-engine). A CRD is Healthy once Established;
NamesAccepted false, or Established false for any reason but Installing, is Degraded (kstatus);
a non-structural schema (`NonStructuralSchema=True`) is Degraded (Argo CD's customization).
"""

from __future__ import annotations

from gitfleet.health.verdict import (
    Obj,
    Verdict,
    condition,
    degraded,
    healthy,
    progressing,
    said,
    section,
)


def apiservice(obj: Obj, now: float | None) -> Verdict:
    available = condition(section(obj, "status"), "Available")
    if available is None:
        return progressing("waiting for the aggregator to check the service")
    if available.get("status") == "True":
        return healthy()
    return progressing(f"not available: {said(available, 'no reason given')}")


def crd(obj: Obj, now: float | None) -> Verdict:
    status = section(obj, "status")
    ending = condition(status, "Terminating")
    if ending is not None and ending.get("status") == "True":
        return progressing(f"being deleted: {said(ending)}")
    names = condition(status, "NamesAccepted")
    if names is not None and names.get("status") == "False":
        return degraded(f"names not accepted: {said(names)}")
    established = condition(status, "Established")
    if established is not None:
        if established.get("status") == "True":
            schema = condition(status, "NonStructuralSchema")
            if schema is not None and schema.get("status") == "True":
                return degraded(f"schema violations: {said(schema)}")
            return healthy()
        if established.get("status") == "False" and established.get("reason") != "Installing":
            return degraded(f"not established: {said(established)}")
    return progressing("waiting for the API server to establish the CRD")
