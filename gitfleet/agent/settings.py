"""How one agent (or one of the hub's push workers) is configured: the values its command line
and the push-worker registry set, read by every part of the round (`gitfleet.agent.round`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gitfleet.agent.engine import EngineSettings
from gitfleet.backoff import Backoff
from gitfleet.model.heartbeats import DEFAULT_JITTER
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.state.transport import GitTransport


@dataclass(frozen=True)
class AgentSettings:
    repo_url: str
    cluster: str
    workdir: Path
    branch_prefix: str = "gitfleet"
    interval: float = 10.0
    # None: the fleet's (cluster.yaml `agent:`; FALLBACK_HEARTBEAT before the first cluster
    # branch); a number overrides the fleet's (see docs/heartbeats.md)
    heartbeat_interval: float | None = None
    heartbeat_jitter: float = DEFAULT_JITTER
    collect_interval: float = 15.0  # metrics of autoscaled workloads (gitfleet.agent.metrics)
    progress_interval: float = 1.0
    recovery: bool = False
    app_pusher: bool = False
    create_namespaces: bool = True
    max_prune_share: float = 0.5
    allow_mass_prune: bool = False
    apply_workers: int = 4
    repair_debounce: float = 0.05
    register: bool = True  # ask the hub for registration while the cluster has no branch
    cluster_labels: dict[str, str] = field(default_factory=dict)
    sync_mode: str = "Pull"
    registration_interval: float = 30.0
    # Fetches and status pushes back off alike; capped at 10 s so a remote that comes back is
    # synced from (and reported to) within 10 s of its return.
    git_backoff: Backoff = field(default_factory=lambda: Backoff(base=1.0, maximum=10.0))
    kube_backoff: Backoff = field(default_factory=lambda: Backoff(base=1.0, maximum=60.0))
    age_key_file: Path | None = None  # age identity for SOPS files (gitfleet.secrets)
    # The hub's push worker (gitfleet.hub.pushworkers) runs this same loop with push_worker:
    # it applies in Push and Dual mode (the registry runs it only while that is allowed) and
    # never registers; own_heartbeat False leaves heartbeats to the cluster's agent (the
    # worker then writes only the sync part of the status branch).
    push_worker: bool = False
    own_heartbeat: bool = True
    signing_key_file: Path | None = None  # signs status + registration (else the Secret)
    # a key in memory instead: a push worker signs the status it writes with the hub's key
    signing_key: SigningKey | None = None
    trusted_hub_keys: TrustedKeys | None = None  # apply only commits signed by one of these
    # how Git reaches the remote: token, SSH key, known_hosts, CA (gitfleet.state.transport)
    git_transport: GitTransport | None = None

    def engine_settings(self) -> EngineSettings:
        return EngineSettings(cluster=self.cluster, create_namespaces=self.create_namespaces,
                              max_prune_share=self.max_prune_share,
                              allow_mass_prune=self.allow_mass_prune, recovery=self.recovery,
                              apply_workers=self.apply_workers)
