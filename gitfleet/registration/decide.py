"""The hub's side of registration: judge every request branch, answer it, and approve.

A name already held by another clusterId is Denied, as is a clusterId already registered under
another name. With `registration.approval: auto` an approval commits `clusters/<name>.yaml` to
the source branch; with `manual` (the default) it prepares `<prefix>/approvals/<name>` (the
source branch plus that file) for review and answers Pending until the file is on the source
branch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gitfleet.errors import InputError
from gitfleet.layout import Branches
from gitfleet.model.loader import Fleet
from gitfleet.registration.keys import key_id
from gitfleet.registration.request import (
    REQUEST_FILE,
    Answer,
    Request,
    cluster_file,
    document,
    now_text,
    parse,
)
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.signing import TrustedKeys


@dataclass(frozen=True)
class Decision:
    name: str
    answer: Answer
    updates: tuple[RefUpdate, ...]


def judge(request: Request, fleet: Fleet, *, approval: str) -> Answer:
    """What the hub answers to `request`, given the fleet as it is on the source branch."""
    digest = request.digest()
    existing = fleet.clusters.get(request.name)
    if existing is not None:
        if existing.cluster_id and existing.cluster_id != request.cluster_id:
            return Answer("Denied", f"the name {request.name} is taken by cluster "
                          f"{existing.cluster_id}", digest)
        if existing.signing_key and request.signing_key and \
                key_id(existing.signing_key) != key_id(request.signing_key):
            # Approving would change nothing: the hub keeps trusting the key in the file.
            return Answer("Denied", f"clusters/{request.name}.yaml names another "
                          "spec.signingKey; to rotate this agent's key, put its new public "
                          "key there", digest)
        return Answer("Approved", f"registered as clusters/{request.name}.yaml", digest)
    for other in fleet.clusters.values():
        if other.cluster_id and other.cluster_id == request.cluster_id:
            return Answer("Denied", f"cluster {request.cluster_id} is already registered as "
                          f"{other.name}", digest)
    if approval == "auto":
        return Answer("Approved", f"registered as clusters/{request.name}.yaml", digest)
    return Answer("Pending", f"waiting for review: merge branch "
                  f"{{prefix}}/approvals/{request.name} or run `gitfleet approve "
                  f"{request.name}`", digest)


def request_signature_problem(git: Git, commit: str, request: Request, fleet: Fleet) -> str:
    """Why the request `commit` is not signed as it must be ("" when it is): by the cluster's
    `spec.signingKey` when its ManagedCluster has one, else by the key the request publishes.
    A request that publishes no key, for a cluster without one, is not checked (older agents)."""
    existing = fleet.clusters.get(request.name)
    expected = (existing.signing_key if existing is not None and existing.signing_key
                else request.signing_key)
    if not expected:
        return ""
    where = (f"clusters/{request.name}.yaml spec.signingKey" if expected != request.signing_key
             else "the request's spec.signingKey")
    try:
        keys = TrustedKeys.from_text(expected, origin=where)
    except InputError as exc:
        return f"{where} is unusable: {exc.message}"
    verdict = git.verify_commit(commit, keys)
    if verdict.ok:
        return ""
    return (f"the request commit {commit[:12]} is not signed by {where} "
            f"({', '.join(keys.fingerprints)}): {verdict.reason}")


def add_file_commit(git: Git, parent: str, path: str, data: bytes, message: str, *,
                    when: float) -> str:
    """A commit on `parent` whose tree is the parent's plus one file (other trees reused)."""
    blob = git.run("hash-object", "-w", "--stdin", input=data).decode().strip()
    folder, _, name = path.rpartition("/")
    sub = _tree_with(git, f"{parent}:{folder}" if folder else f"{parent}^{{tree}}", name,
                     f"100644 blob {blob}")
    root = _tree_with(git, f"{parent}^{{tree}}", folder, f"040000 tree {sub}") if folder else sub
    return git.commit(root, [parent], message, when=when)


def _tree_with(git: Git, tree: str, name: str, entry: str) -> str:
    """`tree` (a tree-ish that may not exist) with the entry `name` set to `entry`."""
    lines = []
    if git.run("rev-parse", "--verify", "-q", tree, check=False).strip():
        lines = [line for line in git.run("ls-tree", tree).decode().splitlines()
                 if line.split("\t", 1)[1] != name]
    lines.append(f"{entry}\t{name}")
    return git.run("mktree", input=("\n".join(lines) + "\n").encode()).decode().strip()


@dataclass(frozen=True)
class Filed:
    """One registration branch as it reads: its request and the hub's answer, or why the
    request cannot be read (`problem`)."""

    name: str
    ref: str
    tip: str
    request: Request | None
    answer: Answer | None
    problem: str = ""


def filed_requests(git: Git, branches: Branches) -> Iterator[Filed]:
    """Every registration branch that holds a request file, by name."""
    prefix = branches.registration("")
    for ref, tip in sorted(git.refs(prefix).items()):
        raw = git.read_blob(tip, REQUEST_FILE)
        if raw is None:
            continue
        name = ref[len(prefix):]
        try:
            request, answer = parse(raw, f"{ref}:{REQUEST_FILE}")
        except InputError as exc:
            yield Filed(name, ref, tip, None, None, exc.message)
            continue
        yield Filed(name, ref, tip, request, answer)


def process(git: Git, fleet: Fleet, *, source_ref: str, source_commit: str, branches: Branches,
            now: float) -> list[Decision]:
    """Judge every registration branch whose request has no answer for its current spec."""
    decisions = []
    for filed in filed_requests(git, branches):
        name, ref, tip, request, answer = (filed.name, filed.ref, filed.tip, filed.request,
                                           filed.answer)
        if request is None:
            bad = Answer("Denied", f"invalid request: {filed.problem}", "", now_text(now))
            decisions.append(Decision(name, bad, ()))
            continue
        if answer is not None and answer.request_digest == request.digest() and \
                answer.result != "Pending":
            continue
        verdict = judge(request, fleet, approval=fleet.settings.registration_approval)
        if verdict.result != "Denied" and (answer is None
                                           or answer.request_digest != request.digest()):
            # the tip is the agent's new request (the hub answers each one in the round it
            # sees it): it must be signed by the key it asks to be known by
            problem = request_signature_problem(git, tip, request, fleet)
            if problem:
                verdict = Answer("Denied", problem, request.digest())
        verdict = Answer(verdict.result, verdict.message.replace("{prefix}", branches.prefix),
                         verdict.request_digest, now_text(now))
        if answer is not None and (answer.result, answer.message, answer.request_digest) == \
                (verdict.result, verdict.message, verdict.request_digest):
            continue
        updates: list[RefUpdate] = []
        answered = git.commit(git.write_tree({REQUEST_FILE: document(request, verdict)}),
                              [tip], f"registration {name}: {verdict.result}\n\n"
                              f"{verdict.message}\n", when=now)
        updates.append(RefUpdate(ref, answered, tip))
        path = f"clusters/{name}.yaml"
        if verdict.result == "Approved" and name not in fleet.clusters:
            commit = add_file_commit(git, source_commit, path, cluster_file(request),
                                     f"Register cluster {name}\n\nclusterId: "
                                     f"{request.cluster_id}\nApproved-By: gitfleet hub "
                                     "(registration.approval: auto)\n", when=now)
            updates.append(RefUpdate(source_ref, commit, source_commit))
        elif verdict.result == "Pending":
            approval_ref = branches.approval(name)
            current = git.resolve(approval_ref)
            if current is None:
                commit = add_file_commit(git, source_commit, path, cluster_file(request),
                                         f"Register cluster {name}\n\nclusterId: "
                                         f"{request.cluster_id}\n", when=now)
                updates.append(RefUpdate(approval_ref, commit, None))
        decisions.append(Decision(name, verdict, tuple(updates)))
    return decisions


def approve(git: Git, name: str, *, source_ref: str, branches: Branches, now: float,
            approver: str = "") -> list[RefUpdate]:
    """The ref updates that approve `name`: its cluster file on the source branch, the request
    answered Approved, the approval branch removed."""
    source = git.resolve(source_ref)
    if source is None:
        raise InputError(f"no source branch {source_ref}")
    ref = branches.registration(name)
    tip = git.resolve(ref)
    raw = git.read_blob(tip, REQUEST_FILE) if tip else None
    if tip is None or raw is None:
        raise InputError(f"no registration request for {name} ({ref})")
    request, _ = parse(raw, f"{ref}:{REQUEST_FILE}")
    path = f"clusters/{name}.yaml"
    if git.read_blob(source, path) is not None:
        raise InputError(f"{path} already exists on {source_ref}")
    who = f"\nApproved-By: {approver}" if approver else ""
    commit = add_file_commit(git, source, path, cluster_file(request),
                             f"Register cluster {name}\n\nclusterId: {request.cluster_id}{who}\n",
                             when=now)
    answer = Answer("Approved", f"registered as {path}", request.digest(), now_text(now))
    answered = git.commit(git.write_tree({REQUEST_FILE: document(request, answer)}), [tip],
                          f"registration {name}: Approved\n", when=now)
    updates = [RefUpdate(source_ref, commit, source), RefUpdate(ref, answered, tip)]
    approval_ref = branches.approval(name)
    approval_tip = git.resolve(approval_ref)
    if approval_tip is not None:
        updates.append(RefUpdate(approval_ref, None, approval_tip))
    return updates
