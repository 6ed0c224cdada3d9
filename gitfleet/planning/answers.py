"""The agents' answers to a plan, collected while the person (or the CI job) waits, and the
removal of expired plans.

Answers are fetched with one glob refspec per look (`<prefix>/plan-answers/*/<id>`: the server
sends only the answers' refs), or, once at most `EXACT` clusters are missing, one refspec per
missing cluster (the server then lists only the answers not collected yet, not every answer
again at each look); read together, and believed only when signed by the cluster's
key where the fleet names one (`spec.signingKey` of its ManagedCluster, as the hub folds
status): an answer anyone else wrote is reported as not planned, with the reason. A cluster
asked that has not answered when the wait ends is not planned ("no answer within N s"), never
left out.

`expired` removes every plan request and answer whose id says it expired (the ids start with
their expiry, `gitfleet.wire.plans.plan_id`), in one atomic push; refs under the plan
prefixes whose names are no plan id are someone else's and stay.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gitfleet.clock import Clock, SystemClock
from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.model.loader import Fleet
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.objects import tree_entries
from gitfleet.state.signing import TrustedKeys, verify_commit_body
from gitfleet.wire.plans import ANSWER_FILE, PlanAnswer, expiry_of

_LOCAL = "refs/gitfleet-plan-answers/"
POLL = 0.5      # seconds between looks while waiting, at least
PACE = 2.0      # ... and at least this many times the last look's fetch: a busy Git server
#                 (1,000 agents pushing answers) is not kept busier by the collector's looks
EXACT = 100     # at most this many clusters missing: one refspec each (only they are listed)


@dataclass(frozen=True)
class Outcome:
    """One asked cluster's outcome: its answer, or why there is none."""

    cluster: str
    answer: PlanAnswer | None = None
    missing: str = ""         # why there is no (believable) answer

    @property
    def planned(self) -> bool:
        return self.answer is not None and self.answer.planned

    @property
    def reason(self) -> str:
        if self.answer is None:
            return self.missing
        return self.answer.reason


def collect(git: Git, url: str, *, plan: str, asked: Sequence[str], fleet: Fleet,
            wait: float, clock: Clock | None = None,
            on_answer: Callable[[Outcome], None] | None = None) -> dict[str, Outcome]:
    """Wait up to `wait` seconds for every asked cluster's answer to `plan`."""
    clock = clock or SystemClock()
    branches = Branches(fleet.settings.branch_prefix)
    prefix = branches.plan_answers()
    deadline = clock.now() + wait
    found: dict[str, Outcome] = {}
    todo = set(asked)
    local = f"{_LOCAL}{plan}/"
    while True:
        began = time.monotonic()
        git.fetch(url, _refspecs(prefix, plan, local, todo))
        took = time.monotonic() - began
        new = {ref.removeprefix(local): sha for ref, sha in git.refs(local).items()}
        new = {c: sha for c, sha in new.items() if c in todo}
        if new:
            files = _answer_files(git, list(new.values()))
            for cluster, sha in sorted(new.items()):
                outcome = _read(cluster, sha, plan, fleet, files.get(sha))
                found[cluster] = outcome
                todo.discard(cluster)
                if on_answer is not None:
                    on_answer(outcome)
        if not todo or clock.now() >= deadline:
            break
        clock.sleep(min(max(POLL, PACE * took), max(0.0, deadline - clock.now())))
    for cluster in sorted(todo):
        found[cluster] = Outcome(cluster, missing=f"no answer within {wait:g} s (is the "
                                 "cluster's agent running, and does it trust the plan key?)")
    return dict(sorted(found.items()))


def _refspecs(prefix: str, plan: str, local: str, todo: set[str]) -> list[str]:
    """What a look fetches: the plan's answers of every cluster (one glob: the server lists
    only the answers' refs), or, when few are missing, those clusters' answers only. A glob
    ending in the plan id never fails for an answer not there yet, as an exact ref would."""
    if not todo or len(todo) > EXACT:
        return [f"+{prefix}*/{plan}:{local}*"]
    return [f"+{prefix}{cluster}/{plan}*:{local}{cluster}*" for cluster in sorted(todo)]


def _answer_files(git: Git, commits: list[str]) -> dict[str, tuple[bytes, bytes | None]]:
    """commit -> (its body, its plan.yaml), in three `cat-file` calls for any number."""
    bodies = git.read_objects(commits)
    trees = {sha: body.split(b"\n", 1)[0].removeprefix(b"tree ").decode()
             for sha, body in bodies.items()}
    tree_bodies = git.read_objects(trees.values())
    blob_of = {tree: dict(tree_entries(body)).get(ANSWER_FILE.encode())
               for tree, body in tree_bodies.items()}
    blobs = git.read_objects(b for b in blob_of.values() if b)
    return {sha: (body, blobs.get(blob_of.get(trees[sha]) or ""))
            for sha, body in bodies.items()}


def _read(cluster: str, sha: str, plan: str, fleet: Fleet,
          found: tuple[bytes, bytes | None] | None) -> Outcome:
    if found is None:
        return Outcome(cluster, missing=f"answer {sha[:12]} could not be read")
    body, raw = found
    known = fleet.clusters.get(cluster)
    line = known.signing_key if known is not None else ""
    if line:
        try:
            keys = TrustedKeys.from_text(line, origin=f"clusters/{cluster}.yaml")
        except InputError as exc:
            return Outcome(cluster, missing=f"the cluster's signing key is unreadable: {exc}")
        verdict = verify_commit_body(body, keys)
        if not verdict.ok:
            return Outcome(cluster, missing=f"answer {sha[:12]} not signed by the cluster's "
                           f"key: {verdict.reason}")
    if raw is None:
        return Outcome(cluster, missing=f"answer {sha[:12]} holds no {ANSWER_FILE}")
    try:
        answer = PlanAnswer.from_yaml(raw, f"{ANSWER_FILE} of {sha[:12]}")
    except InputError as exc:
        return Outcome(cluster, missing=str(exc))
    if answer.cluster != cluster or answer.plan != plan:
        return Outcome(cluster, missing=f"answer {sha[:12]} is for {answer.cluster}/"
                       f"{answer.plan}")
    return Outcome(cluster, answer=answer)


def expired(git: Git, url: str, *, now: float, prefix: str) -> list[str]:
    """Remove the expired plan requests and answers from `url`; the refs removed."""
    branches = Branches(prefix)
    heads = (branches.plans(), branches.plan_answers())
    refs = git.ls_remote(url, [f"{h}*" for h in heads])
    gone = []
    for ref, sha in sorted(refs.items()):
        head = next((h for h in heads if ref.startswith(h)), None)
        if head is None:
            continue
        cluster, _, plan = ref[len(head):].partition("/")
        when = expiry_of(plan) if cluster and plan and "/" not in plan else None
        if when is not None and when <= now:
            gone.append(RefUpdate(ref, None, sha))
    git.push(url, gone)
    return [u.ref for u in gone]
