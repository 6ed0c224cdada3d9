"""The agent tests' fixtures (a `git daemon` remote, kubesim clusters, agents), for the
end-to-end rollout test."""

from tests.agent.conftest import kubesim, make_agent, remote

__all__ = ["kubesim", "make_agent", "remote"]
