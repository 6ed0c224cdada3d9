"""Fixtures of the trust tests: the agent tests' real Git remote, kubesim clusters and agents."""

from tests.agent.conftest import kubesim, make_agent, remote  # noqa: F401  (fixtures)
