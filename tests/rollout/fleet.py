"""A fleet under a RolloutPolicy, a hub on a fake clock, and agents' reports written as real
status commits: what the rollout tests share."""

from __future__ import annotations

from pathlib import Path

import yaml

from gitfleet.clock import FakeClock, isoformat
from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.store import open_store
from gitfleet.wire.status import (
    ClusterStatus,
    DescriptionStatus,
    Heartbeat,
    Phase,
    SyncResult,
    SyncStatus,
)
from tests.hub.fleet import commit, edit, example_repo, git

POLICY = "policies/rollout.yaml"
API = "templates/api/api.yaml"
CLUSTERS = ("staging", "prod-east", "prod-west")       # canary, early, rest


def policy(*, on_failure: str = "Pause", bake: str = "10m", timeout: str = "15m",
           max_unavailable: str = "100%") -> str:
    return f"""apiVersion: gitfleet.io/v1alpha1
kind: RolloutPolicy
metadata:
  name: api
spec:
  selector: {{matchLabels: {{app: api}}}}
  waves:
  - {{name: canary, clusterAffinity: {{matchLabels: {{env: staging}}}}, bake: {bake}}}
  - {{name: early, clusterAffinity: {{matchLabels: {{region: us-east}}}}, bake: {bake}}}
  - {{name: rest}}
  maxUnavailable: "{max_unavailable}"
  healthTimeout: {timeout}
  onFailure: {on_failure}
"""


class RolloutFleet:
    """The worked example with the `api` Subscription (all three clusters) under a policy."""

    def __init__(self, tmp_path: Path, **policy_args: str) -> None:
        self.repo = example_repo(tmp_path / "fleet")
        self.git = Git(self.repo)
        self.clock = FakeClock()
        self.hub = self.new_hub()
        self.hub.run_once()                          # everything deployed before the policy
        edit(self.repo, "policies/api/subscription.yaml", "  namespace: api\n",
             "  namespace: api\n  labels: {app: api}\n")
        commit(self.repo, "govern api by a rollout", {POLICY: policy(**policy_args)})
        self.run()

    def new_hub(self) -> Hub:
        return Hub(open_store(str(self.repo)), settings=HubSettings(interval=15),
                   clock=self.clock)

    def run(self, rounds: int = 2) -> None:
        for _ in range(rounds):
            self.hub.run_once()

    def image(self, tag: str) -> str:
        text = (self.repo / API).read_text()
        old = text.split("image: ", 1)[1].split("\n", 1)[0]
        edit(self.repo, API, f"image: {old}", f"image: ghcr.io/example/api:{tag}")
        return commit(self.repo, f"api {tag}")

    def head(self, cluster: str) -> str:
        sha = self.git.resolve(Branches().cluster(cluster))
        assert sha is not None
        return sha

    def api_image(self, cluster: str) -> str | None:
        """The api image the cluster branch holds (what its agent would apply)."""
        data = self.git.read_blob(Branches().cluster(cluster),
                                  "api/api/apps_Deployment_api_api.yaml")
        if data is None:
            return None
        doc = yaml.safe_load(data)
        return str(doc["spec"]["template"]["spec"]["containers"][0]["image"].rsplit(":", 1)[1])

    def images(self) -> dict[str, str | None]:
        return {c: self.api_image(c) for c in CLUSTERS}

    def report(self, cluster: str, phase: Phase = Phase.SUCCESS, *, applied: bool = True,
               ready: bool = True) -> None:
        """The cluster's agent reports its branch's commit applied, api in `phase`."""
        status = ClusterStatus(
            cluster=cluster,
            heartbeat=Heartbeat(time=isoformat(self.clock.now()), interval_seconds=60,
                                livez=ready, readyz=ready, nodes_ready=1),
            sync=SyncStatus(cluster_commit=self.head(cluster) if applied else "",
                            time=isoformat(self.clock.now()), result=SyncResult.SYNCED),
            descriptions=(DescriptionStatus(namespace="api", name="api", phase=phase),))
        ref = Branches().status(cluster)
        old = self.git.resolve(ref)
        tree = self.git.write_tree({"status.yaml": status.to_yaml().encode()})
        new = self.git.commit(tree, [old] if old else [], "status", when=self.clock.now())
        self.git.update_refs([RefUpdate(ref, new, old)])

    def report_all(self, phase: Phase = Phase.SUCCESS) -> None:
        for c in CLUSTERS:
            self.report(c, phase)

    def rollout(self) -> dict:
        data = self.git.read_blob("refs/heads/gitfleet/state", "rollouts.yaml")
        assert data is not None
        doc = yaml.safe_load(data)
        (found,) = [r for r in doc["rollouts"] if r["policy"] == "api"]
        return dict(found)

    def states(self) -> dict[str, str]:
        return {c["name"]: c["state"] for c in self.rollout()["clusters"]}


def git_log(repo: Path, ref: str) -> list[str]:
    return git(repo, "log", "--format=%B%x00", ref).split("\0")
