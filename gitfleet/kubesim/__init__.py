"""kubesim: an embedded Kubernetes API server on loopback for the demo and the tests.

`KubeSim` serves discovery, CRUD, list/watch, server-side apply with field ownership,
defaults, validation and a small controller loop to the official `kubernetes` client and to
kubectl, exactly as a real API server would answer them.
"""

from gitfleet.kubesim.sim import KubeSim

__all__ = ["KubeSim"]
