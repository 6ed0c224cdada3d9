"""A `KubeClient` from a kubeconfig's text: how the hub's push workers reach member clusters.

The hub holds one kubeconfig per Push cluster (a folder or a Secret, never Git); each is read
as bytes and turned into a client here, so the official client's configuration loading stays
inside `gitfleet.kube`. A kubeconfig that does not parse or names no usable server is an
`InputError` whose message says what is wrong, never a traceback: the push worker reports it
on that cluster's status and the other clusters carry on.
"""

from __future__ import annotations

from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from gitfleet.errors import InputError
from gitfleet.kube.client import KubeClient, KubeSettings


def client_from_kubeconfig(text: bytes, *, source: str,
                           settings: KubeSettings | None = None) -> KubeClient:
    """A client for the current context of the kubeconfig `text` (read from `source`)."""
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"kubeconfig does not parse: {getattr(exc, 'problem', exc)}",
                         path=source, line=mark.line + 1 if mark is not None else None) from None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise InputError("not a kubeconfig (no clusters)", path=source)
    cfg = k8s.Configuration()
    try:
        k8s_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
            config_dict=doc, client_configuration=cfg)
    except (k8s_config.ConfigException, ValueError, TypeError, KeyError, AttributeError,
            OSError) as exc:
        raise InputError(f"kubeconfig is not usable: {exc}", path=source) from None
    if not cfg.host:
        raise InputError("kubeconfig names no server for its current context", path=source)
    cfg.retries = False  # the push worker retries with its own backoff
    return KubeClient(k8s.ApiClient(cfg), settings)
