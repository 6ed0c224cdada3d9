"""Asking the hub to register this cluster while it has no cluster branch (SEMANTICS
"Registration"), at most once per `registration_interval`, and remembering the answer."""

from __future__ import annotations

import logging

from gitfleet.agent.round import StepOutcome
from gitfleet.agent.settings import AgentSettings
from gitfleet.agent.signer import AgentSigner
from gitfleet.clock import isoformat
from gitfleet.errors import GitfleetError
from gitfleet.kube.client import KubeClient
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.registration import applicant
from gitfleet.registration.request import Answer, Request
from gitfleet.secrets.keyring import Keyring
from gitfleet.state.git import Git

LOG = logging.getLogger("gitfleet.agent")


class Registrar:
    def __init__(self, settings: AgentSettings, *, kube: KubeClient, git: Git,
                 keyring: Keyring, signer: AgentSigner) -> None:
        self.settings, self.kube, self.git = settings, kube, git
        self.keyring, self.signer = keyring, signer
        self.answer: Answer | None = None   # the hub's last answer (None: none yet)
        self._next = 0.0

    def register(self, now: float, out: StepOutcome) -> None:
        """No branch for this cluster yet: ask to be registered, and say what the hub answered."""
        if now < self._next:
            return
        self._next = now + self.settings.registration_interval
        try:
            version = self.kube.version()
            request = Request(
                name=self.settings.cluster, cluster_id=self.kube.namespace_uid("kube-system"),
                labels=dict(self.settings.cluster_labels), sync_mode=self.settings.sync_mode,
                kubernetes_version=str(version.get("gitVersion", "")),
                platform=str(version.get("platform", "")), requested_at=isoformat(now),
                age_recipient=self.keyring.recipient, signing_key=self.signer.public_line)
            branches = Branches(self.settings.branch_prefix)
            if applicant.submit(self.git, self.settings.repo_url, request, branches=branches,
                                now=now):
                log(LOG, logging.INFO, "registration requested", cluster=self.settings.cluster,
                    cluster_id=request.cluster_id)
            answer = applicant.answer(self.git, self.settings.repo_url, self.settings.cluster,
                                      branches=branches)
        except GitfleetError as exc:
            out.errors.append(f"registration: {exc}")
            return
        self.answer = answer
        if answer is not None:
            level = logging.ERROR if answer.result == "Denied" else logging.INFO
            log(LOG, level, f"registration {answer.result}", cluster=self.settings.cluster,
                message=answer.message)
