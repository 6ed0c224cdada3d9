"""gitfleet: deploy to many Kubernetes clusters with Git as the only control plane."""

__version__ = "0.1.0"
