"""gitfleet: deploy to many Kubernetes clusters with Git as the only control plane."""

# The one place the release's version is written: pyproject.toml reads it (its `dynamic`
# version), `gitfleet --version`, the agents' heartbeats, the hub's `Renderer` trailer and the
# push workers' `hub-push-worker/<version>` take it from here. CHANGELOG.md says what changed.
__version__ = "0.2.0"
