"""The end-to-end health tests run a real agent against kubesim, with the agent tests' fixtures
(a Git remote served by `git daemon`, kubesim clusters, agents on a fake clock)."""

from tests.agent.conftest import kubesim, make_agent, remote

__all__ = ["kubesim", "make_agent", "remote"]
