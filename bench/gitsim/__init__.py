"""gitsim: what N clusters cost one Git server, measured with the agent's real Git code.

Why: Git is gitfleet's control plane, so the Git host's budget (requests/s, pushes/s, bytes/s)
is a product promise (issue 24). A 2-core machine cannot run 10,000 real agents, so the harness
measures each request type's server cost at each repository size against real servers
(`git daemon`, nginx + `git http-backend`), measures what one real agent's step loop offers per
second on a virtual clock, runs real-time load where it fits, and combines them in a model
(`model.py`, docs/git-budget.md). Every figure it prints says whether it was measured or computed.

    python -m bench.gitsim --clusters 1000,3000,10000
"""
