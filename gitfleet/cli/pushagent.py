"""The agent's loop as the hub's push workers run it (`gitfleet.hub.pushworkers`).

Here, where the hub's command is put together, because the hub and the agent never import each
other: `gitfleet hub` hands `AgentPush()` to the push registry, and a worker runs this same
loop (engine, inventory, prune budget, health, drift, status-branch writer) against the
cluster's kubeconfig, with `push_worker` set.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gitfleet.clock import SystemClock
from gitfleet.hub.pushworkers import PushJob
from gitfleet.state.git import Git, init_repo
from gitfleet.wire.status import ClusterStatus, SyncResult

if TYPE_CHECKING:   # the agent (and with it the Kubernetes client: ~1 s of CPU at every
    # start) is imported when a push worker starts, not by every `gitfleet hub`
    from gitfleet.agent.agent import Agent
    from gitfleet.kube.client import KubeClient


class AgentPush:
    """`PushAgents` with the agent's own loop."""

    def agent(self, job: PushJob, kube: KubeClient) -> Agent:
        from gitfleet.agent.agent import Agent, AgentSettings

        s = job.settings
        settings = AgentSettings(
            repo_url=job.repo_url, cluster=job.target.cluster, workdir=job.workdir,
            branch_prefix=job.branches.prefix, interval=s.interval,
            heartbeat_interval=s.heartbeat_interval, app_pusher=True, register=False,
            apply_workers=s.apply_workers, max_prune_share=s.max_prune_share,
            recovery=s.recovery, sync_mode=job.target.mode, push_worker=True,
            own_heartbeat=job.target.own_heartbeat, signing_key=s.signing_key,
            git_transport=s.git_transport)
        return Agent(settings, kube, clock=SystemClock(), git=_repo(job),
                     branch_hint=job.branch_hint)

    def report_broken(self, job: PushJob, message: str) -> None:
        """The sync part of the cluster's status says Failed, with `message`."""
        from gitfleet.agent.statusbranch import StatusBranch

        branch = StatusBranch(_repo(job), job.repo_url, job.branches, job.target.cluster)

        def failed(tip: ClusterStatus | None) -> ClusterStatus:
            base = tip or ClusterStatus(cluster=job.target.cluster)
            return replace(base, sync=replace(base.sync, result=SyncResult.FAILED,
                                              message=message))

        branch.load()
        branch.write(failed(branch.status), when=SystemClock().now(), rebase=failed)


def _repo(job: PushJob) -> Git:
    return init_repo(job.workdir, bare=True, private=True, transport=job.settings.git_transport)
