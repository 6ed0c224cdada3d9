"""The agent fixtures (git daemon remote, kubesim clusters, agents) shared with tests/agent."""

from tests.agent.conftest import kubesim, make_agent, remote  # noqa: F401
