"""The agent's answers to plan requests (SEMANTICS "Plans"): a part beside the sync that never
applies anything and never holds a sync up.

When does it look? Where the hub's tip document lists the plan requests waiting for this cluster
(gitfleet.wire.tips `plans`; the agent's `TipFollower` reads it), the reviewer looks when the
document lists one it has not looked at, within one tip poll of the request, and never
otherwise: no Git request while no plan waits. Without such a document (no tips, an older hub,
a tip server away or untrusted) it looks at its own interval (`--plan-interval`), as before.
Either way a look fetches this cluster's plan requests and answers (one `git fetch` of
the two per-cluster prefixes, `gitfleet.layout.Branches.plans`, whose glob refspecs a protocol
v2 server filters: the cost of a no-op fetch, never the whole ref list `ls-remote` would
download), and answers each request that is not answered yet and not expired: its signature
is checked (a key
of the hub or a plan key the agent trusts; with neither configured any request is answered, as
any cluster commit is applied), its tree read as the sync reads a cluster commit, and tried on
the cluster with `gitfleet.agent.dryrun`. The answer is one commit holding `plan.yaml`
(`gitfleet.wire.plans.PlanAnswer`), signed with the agent's key like its status, pushed to
`<prefix>/plan-answers/<cluster>/<id>` only if nobody answered first. A request that cannot be
planned (not signed, unreadable, the API server away) is answered too, `planned: false` with
the reason, so the person waiting learns why; an expired one is left for the TTL to remove.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitfleet.agent.desired import DesiredState, parse_cluster_tree
from gitfleet.agent.dryrun import DryRunApi, DryRunSettings, try_candidate
from gitfleet.agent.round import FOREVER, Round
from gitfleet.clock import Clock, SystemClock
from gitfleet.errors import GitfleetError, InputError, RefConflict
from gitfleet.kube.errors import ApiError, Unreachable
from gitfleet.layout import Branches
from gitfleet.logs import log
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.objects import trailers_of
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.plans import (
    ANSWER_FILE,
    CLUSTER_TRAILER,
    PLAN_TRAILER,
    Act,
    PlanAnswer,
    PlanRequest,
)

LOG = logging.getLogger("gitfleet.agent.plans")
REQUEST_TRAILER = "Gitfleet-Plan-Request"
# this cluster's plan requests and answers as last fetched (a mirror: pruned with the remote)
_REQUESTS = "refs/gitfleet-plans/requests/"
_ANSWERS = "refs/gitfleet-plans/answers/"


@dataclass(frozen=True)
class PlanReviewSettings:
    repo_url: str
    cluster: str
    branch_prefix: str = "gitfleet"
    interval: float = 10.0                  # seconds between looks for new requests (without a
    #                                         tip document listing them; else between retries)
    # signatures accepted on a request: the hub's keys and the plan keys (None: any request)
    trusted: TrustedKeys | None = None
    dry_run: DryRunSettings | None = None   # None: the defaults for `cluster`

    def trial(self) -> DryRunSettings:
        return self.dry_run or DryRunSettings(cluster=self.cluster)


@dataclass
class Reviewed:
    """What the last step did (for tests and logs)."""

    answered: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class PlanReviewer:
    """Answers one cluster's plan requests; `step()` does one round and says when to run next."""

    def __init__(self, settings: PlanReviewSettings, kube: DryRunApi, git: Git, *,
                 identities: Callable[[], Sequence[Any]] | None = None,
                 signer: Callable[[], SigningKey | None] | None = None,
                 clock: Clock | None = None,
                 notices: Callable[[], frozenset[str] | None] | None = None) -> None:
        self.settings = settings
        self.kube = kube
        # a Git of the agent's repository (its own instance: `signer` sets whom it signs as;
        # without `signer`, as the Git's own signer says)
        self.git = git
        self.signer = signer
        self.identities = identities
        self.clock = clock or SystemClock()
        self.branches = Branches(settings.branch_prefix)
        # the plan ids the tip document lists (None: no usable document lists them; the
        # TipFollower's `plans`)
        self.notices = notices
        self._seen: set[tuple[str, str]] = set()    # (id, request commit) answered or tried
        self._looked: frozenset[str] = frozenset()  # ids a look found or was told of
        self._next = 0.0          # without a listing: the next look
        self._retry = 0.0         # with one: no look before this (after a failed look)
        self._told = False        # look_now() was called
        self._listing: bool | None = None   # whether a tip document lists plans (for the log)
        self.last = Reviewed()

    def due(self) -> float:
        """Seconds until the next look (0: now; FOREVER: when a tip document lists a new
        request)."""
        now = self.clock.now()
        listed = self._listed()
        if self._told:
            return 0.0
        if listed is None:
            return max(0.0, self._next - now)
        if listed <= self._looked:
            return FOREVER
        return max(0.0, self._retry - now)

    def look_now(self) -> None:
        """Make the next look due at once (something said a request is waiting); the agent's
        next round starts it."""
        self._told = True

    def _listed(self) -> frozenset[str] | None:
        listed = self.notices() if self.notices is not None else None
        listing = listed is not None
        if listing != self._listing and (listing or self._listing is not None):
            if listing:
                log(LOG, logging.INFO, "plan requests: the tip document lists them; looked "
                    "for when it lists a new one", cluster=self.settings.cluster)
            else:
                log(LOG, logging.INFO, "plan requests: no tip document lists them; looked for "
                    "every --plan-interval", cluster=self.settings.cluster,
                    interval=f"{self.settings.interval:g}s")
        self._listing = listing
        return listed

    def step(self) -> float:
        """Answer what waits; the seconds until the next look."""
        wait = self.due()
        if wait > 0:
            return wait
        now = self.clock.now()
        told = self._listed() or frozenset()
        self._told = False
        self._next = now + self.settings.interval
        out = self.last = Reviewed()
        cluster = self.settings.cluster
        requests_at, answers_at = self.branches.plans(cluster), self.branches.plan_answers(cluster)
        try:   # a glob refspec: the server sends only this cluster's refs (protocol v2)
            self.git.fetch(self.settings.repo_url, [f"+{requests_at}*:{_REQUESTS}*",
                                                    f"+{answers_at}*:{_ANSWERS}*"], prune=True)
        except GitfleetError as exc:
            out.errors.append(f"fetch plans: {exc}")
            log(LOG, logging.DEBUG, "cannot fetch plan requests", cluster=cluster, error=str(exc))
            self._retry = now + self.settings.interval
            return self.settings.interval
        answered = {ref.removeprefix(_ANSWERS) for ref in self.git.refs(_ANSWERS)}
        found, failed = set(), set()
        for ref, sha in sorted(self.git.refs(_REQUESTS).items()):
            plan_id = ref.removeprefix(_REQUESTS)
            found.add(plan_id)
            if plan_id in answered or "/" in plan_id or (plan_id, sha) in self._seen:
                continue
            if len(self._seen) > 1024:
                self._seen.clear()
            self._seen.add((plan_id, sha))
            try:
                answer = self._judge(plan_id, sha, now)
                if answer is not None:
                    self._push(plan_id, sha, answer, now)
                    out.answered.append(plan_id)
            except GitfleetError as exc:
                self._seen.discard((plan_id, sha))      # tried again at the next look
                failed.add(plan_id)
                out.errors.append(f"plan {plan_id}: {exc}")
                log(LOG, logging.WARNING, "cannot answer plan request", cluster=cluster,
                    plan=plan_id, error=str(exc))
        # a new set, never changed in place: due() may read it from the tip poller's thread
        looked = self._looked if len(self._looked) < 4096 else frozenset()
        self._looked = (looked | told | found) - failed
        self._retry = now + self.settings.interval if failed else 0.0
        return self.due()

    def _judge(self, plan_id: str, sha: str, now: float) -> PlanAnswer | None:
        cluster = self.settings.cluster
        trailers = trailers_of(self.git.run("cat-file", "commit", sha))

        def refused(reason: str) -> PlanAnswer:
            log(LOG, logging.WARNING, "plan request not planned", cluster=cluster, plan=plan_id,
                reason=reason)
            return PlanAnswer(plan_id, cluster, sha, now, planned=False, reason=reason)

        trusted = self.settings.trusted
        if trusted is not None:
            verdict = self.git.verify_commit(sha, trusted)
            if not verdict.ok:   # not even parsed: its files could be crafted
                return refused(f"plan request {sha[:12]} refused: {verdict.reason}")
        try:
            request = PlanRequest.of_trailers(trailers, f"plan request {sha[:12]}")
        except InputError as exc:
            return refused(str(exc))
        if request.cluster != cluster or request.plan != plan_id:
            return refused(f"plan request {sha[:12]} is for {request.cluster}/{request.plan}, "
                           f"not {cluster}/{plan_id}")
        if request.expired(now):
            log(LOG, logging.INFO, "plan request expired; not answered", cluster=cluster,
                plan=plan_id)
            return None
        candidate = parse_cluster_tree(self.git.read_files(sha), cluster_commit=sha,
                                       source_commit=request.source_commit,
                                       identities=self.identities)
        current = self._parent_state(sha)
        try:
            found = try_candidate(self.kube, candidate, settings=self.settings.trial(),
                                  current=current)
        except (Unreachable, ApiError) as exc:
            return refused(f"the API server could not be asked: {exc}")
        return PlanAnswer(plan_id, cluster, sha, now, planned=True,
                          reason="; ".join(candidate.errors), unchanged=found.unchanged,
                          actions=found.actions)

    def _parent_state(self, sha: str) -> DesiredState | None:
        """The cluster tree the request was planned over (its parent), for drift."""
        parents = self.git.run("rev-list", "--parents", "-n", "1", sha).decode().split()[1:]
        if not parents:
            return None
        return parse_cluster_tree(self.git.read_files(parents[0]), cluster_commit=parents[0],
                                  identities=self.identities)

    def _push(self, plan_id: str, sha: str, answer: PlanAnswer, now: float) -> None:
        cluster = self.settings.cluster
        counts = {a: sum(1 for x in answer.actions if x.action is a) for a in Act}
        summary = ", ".join(f"{n} {a}" for a, n in counts.items() if n) or "no change"
        subject = f"{cluster}: plan {plan_id}: " + (summary if answer.planned else "not planned")
        body = answer.reason if not answer.planned else ""
        trailers = [f"{PLAN_TRAILER}: {plan_id}", f"{CLUSTER_TRAILER}: {cluster}",
                    f"{REQUEST_TRAILER}: {sha}"]
        text = subject + "\n\n" + (body + "\n\n" if body else "") + "\n".join(trailers) + "\n"
        if self.signer is not None:
            self.git.signer = self.signer()     # the agent's key, as it signs its status
        tree = self.git.write_tree({ANSWER_FILE: answer.to_yaml()})
        commit = self.git.commit(tree, [], text, when=now)
        try:
            self.git.push(self.settings.repo_url,
                          [RefUpdate(self.branches.plan_answer(cluster, plan_id), commit, None)])
        except RefConflict:
            log(LOG, logging.INFO, "plan already answered", cluster=cluster, plan=plan_id)
            return
        log(LOG, logging.INFO, "plan answered", cluster=cluster, plan=plan_id,
            planned=answer.planned, actions=summary)


class PlanAnswers:
    """The agent's part for plans (a `gitfleet.agent.round.Reactor`): when the reviewer's look
    is due it starts it in a thread of its own, so the round that triggers it, and every sync
    after it, never waits for a dry run (`background`; the agent's --once answers in the round
    itself). `poke()` (the tip poller, when its document lists plan requests) starts a due
    look at once, without a round: a round would cost a no-op sync."""

    def __init__(self, reviewer: PlanReviewer, *, background: bool = True) -> None:
        self.reviewer = reviewer
        self.background = background
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._running = False     # a look's thread runs (set and cleared under the lock)
        self._again = False       # poked while it ran

    def react(self, round_: Round) -> float:
        if not self.background:
            wait = self.reviewer.due()
            return wait if wait > 0 else self.reviewer.step()
        if self._start():
            return self.reviewer.settings.interval
        return self.reviewer.due()

    def poke(self) -> None:
        """Start the look now if one is due (from any thread)."""
        if self.background:
            self._start()

    def _start(self) -> bool:
        """Start a due look; True while one runs."""
        with self._lock:
            if self._running:
                self._again = True
                return True
            if self.reviewer.due() > 0:
                return False
            self._running, self._again = True, False
            self._thread = threading.Thread(target=self._look, name="gitfleet-plans",
                                            daemon=True)
            self._thread.start()
            return True

    def _look(self) -> None:
        while True:
            try:
                self.reviewer.step()
            except GitfleetError as exc:    # one bad look never ends the part
                log(LOG, logging.WARNING, "plan review failed",
                    cluster=self.reviewer.settings.cluster, error=str(exc))
            with self._lock:     # poked meanwhile with a new request listed: look again
                if not self._again or self.reviewer.due() > 0:
                    self._running = False
                    return
                self._again = False

    def close(self, timeout: float = 30.0) -> None:
        """Wait for a look under way (an answer half pushed is pushed)."""
        if self._thread is not None:
            self._thread.join(timeout)
