"""The pre-receive check: every commit a push adds to a gitfleet branch is signed by its writer.

- `status/<c>`: by cluster c's key — `spec.signingKey` of `clusters/<c>.yaml` on the source
  branch; before c has a ManagedCluster, the key its registration request publishes. A
  ManagedCluster without a key: accepted with a warning (the hub folds it with one too).
- `registrations/<c>`: by c's key, or the hub's (its answers); a first request (no key known
  for c yet) by the key that very request publishes, so nobody can file a request in another
  key's name.
- the source branch: no render of its new tip may delete more of a cluster than
  `fleet.yaml: guards.maxDeletions` allows, unless a pushed commit approves
  (`gitfleet.hooks.guard`, docs/guards.md).
- the hub's branches: by a hub key (`--hub-key` at install; without one they are not checked,
  and every push says so).

Pre-receive is all or nothing: one refused ref refuses the push, and the pusher reads why for
each ref. The hook fails closed: anything it cannot read is a refusal naming what.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitfleet.errors import InputError
from gitfleet.hooks.install import HookConfig
from gitfleet.hooks.policy import Owner, Target, classify
from gitfleet.layout import Branches
from gitfleet.registration.keys import cluster_key, requested_key
from gitfleet.registration.request import REQUEST_FILE, parse
from gitfleet.state.git import ZERO_SHA, Git
from gitfleet.state.receiving import new_commits
from gitfleet.state.signing import TrustedKeys, split_signature


@dataclass(frozen=True)
class Update:
    """One line of the hook's input: `<old> <new> <ref>`."""

    old: str
    new: str
    ref: str

    @property
    def deletes(self) -> bool:
        return self.new == ZERO_SHA


@dataclass(frozen=True)
class Ruling:
    """The verdict on one ref: refused (`message` says why) or accepted (`message` warns or
    is empty)."""

    ref: str
    ok: bool
    message: str = ""


def parse_updates(text: str) -> list[Update]:
    updates = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3:
            raise InputError(f"not a pre-receive input line: {line!r}")
        updates.append(Update(*parts))
    return updates


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


class Checker:
    """Judges the updates of one push against the repository as it is before the push."""

    def __init__(self, git: Git, config: HookConfig, *, config_path: str = "") -> None:
        self.git = git
        self.config = config
        self.branches = Branches(config.branch_prefix)
        self.hub_keys = config.trusted_hub_keys(origin=config_path or "hub keys")
        self.plan_keys = config.trusted_plan_keys(origin=config_path or "plan keys")
        self.source = f"refs/heads/{config.source_branch}"
        self._bodies: dict[str, bytes] = {}

    def check(self, updates: Sequence[Update]) -> list[Ruling]:
        targets = [(u, classify(u.ref, self.branches)) for u in updates]
        # the hub's branches share one key: their new commits are listed and read at once
        # (a render moves thousands of cluster branches in one push)
        hub = [u for u, t in targets if t.owner in (Owner.HUB, Owner.APPROVAL)
               and not u.deletes]
        self._hub_added = new_commits(self.git, [u.new for u in hub],
                                      since=[u.old for u in hub] + self._source_tip()
                                      ) if self.hub_keys else []
        self._bodies = self.git.read_objects(self._hub_added)
        rulings = []
        for update, target in targets:
            try:
                rulings.append(self._rule(update, target))
            except InputError as exc:
                rulings.append(Ruling(update.ref, False, exc.message))
        return rulings

    def _source_tip(self) -> list[str]:
        """The source branch's tip, as a list to exclude: an approval branch is the source
        branch plus the hub's commit, and the source branch's history is people's, governed by
        review (and `hub --require-signed-source`), not by this hook."""
        tip = self.git.resolve(self.source)
        return [tip] if tip else []

    def _added_by(self, update: Update, *, hub: bool = False) -> list[str]:
        """The commits this update adds to its ref (newest first), their bodies read."""
        since = [update.old, *(self._source_tip() if hub else ())]
        added = new_commits(self.git, [update.new], since=since)
        missing = [sha for sha in added if sha not in self._bodies]
        self._bodies.update(self.git.read_objects(missing))
        return added

    def _rule(self, update: Update, target: Target) -> Ruling:
        ref = update.ref
        if ref == self.source and not update.deletes:
            # only a source push needs the renderer: importing it is most of a hook process's
            # start, which every plan answer and heartbeat would pay for
            from gitfleet.hooks.guard import refusal

            why = refusal(self.git, self.branches, update.new)
            return Ruling(ref, not why, why)
        if target.owner is Owner.OUTSIDE:
            return Ruling(ref, True)
        if target.owner is Owner.UNKNOWN:
            return Ruling(ref, False, f"{_short(ref)} is not a branch gitfleet writes; nothing "
                          f"but gitfleet's own branches may be under "
                          f"refs/heads/{self.branches.prefix}/")
        if update.deletes:
            if target.owner in (Owner.APPROVAL, Owner.PLAN, Owner.PLAN_ANSWER):
                return Ruling(ref, True)     # removed once merged, or once expired
            return Ruling(ref, False, f"deleting {_short(ref)} is refused: gitfleet never "
                          "deletes it, and a deletion carries no signature to check")
        if target.owner in (Owner.HUB, Owner.APPROVAL):
            if not self.hub_keys:
                return Ruling(ref, True, "hub branches are not checked: the hook has no hub "
                              "key (gitfleet hooks install --hub-key FILE)")
            return self._hub(update)
        if target.owner is Owner.STATUS:
            return self._status(update, target.cluster)
        if target.owner is Owner.PLAN:
            return self._plan(update, target.cluster)
        if target.owner is Owner.PLAN_ANSWER:
            keys, where = self._cluster_keys(target.cluster)
            if keys is None:
                return Ruling(ref, True, f"plan answer not checked: {where}")
            return self._signed(update, keys, where, self._added_by(update))
        return self._registration(update, target.cluster)

    def _plan(self, update: Update, cluster: str) -> Ruling:
        """A plan request: signed by the hub's key or a plan key. Its parent is the cluster
        branch commit it was planned over (the hub's), so that history is not judged again."""
        keys = self.hub_keys.merged(self.plan_keys)
        if not keys:
            return Ruling(update.ref, True, "plan requests are not checked: the hook has no "
                          "hub or plan key (gitfleet hooks install --plan-key FILE)")
        tip = self.git.resolve(self.branches.cluster(cluster))
        added = new_commits(self.git, [update.new], since=[update.old, *([tip] if tip else [])])
        self._bodies.update(self.git.read_objects([s for s in added if s not in self._bodies]))
        return self._signed(update, keys, "the hub's key or a plan key", added)

    def _hub(self, update: Update) -> Ruling:
        for sha in self._hub_added:
            payload, armored = split_signature(self._bodies[sha])
            if not self.hub_keys.check(payload, armored).ok:
                break
        else:
            return Ruling(update.ref, True)    # every commit the hub's branches gain is signed
        return self._signed(update, self.hub_keys, "the hub's key",
                            self._added_by(update, hub=True))

    def _signed(self, update: Update, keys: TrustedKeys, whose: str,
                added: Sequence[str]) -> Ruling:
        for sha in added:
            payload, armored = split_signature(self._bodies[sha])
            verdict = keys.check(payload, armored)
            if not verdict.ok:
                return Ruling(update.ref, False, f"commit {sha[:12]} is {verdict.reason}; "
                              f"{_short(update.ref)} takes only commits signed by {whose} "
                              f"({', '.join(keys.fingerprints)})")
        return Ruling(update.ref, True)

    def _cluster_keys(self, cluster: str) -> tuple[TrustedKeys | None, str]:
        """The key cluster c signs with and where it comes from; (None, why) when the
        ManagedCluster names none. A Push or Dual cluster's status is written by the hub's
        push worker too: there the hub's key is accepted as well."""
        found = cluster_key(self.git, self.source, cluster)
        if found.problem:
            raise InputError(f"{found.path} on {self.config.source_branch} cannot be read: "
                             f"{found.problem}")
        if found.exists and found.line:
            where = f"cluster {cluster}'s key ({found.path} spec.signingKey)"
            keys = TrustedKeys.from_text(found.line, origin=f"{found.path} spec.signingKey")
            if found.hub_writes_status and self.hub_keys:
                keys = keys.merged(self.hub_keys)
                where += f" or, in {found.sync_mode} mode, the hub's key"
            return keys, where
        if found.exists:
            return None, f"{found.path} has no spec.signingKey"
        line = requested_key(self.git, self.branches, cluster)
        if line:
            return (TrustedKeys.from_text(line, origin=f"registration request of {cluster}"),
                    f"the key cluster {cluster}'s registration request publishes")
        raise InputError(f"cluster {cluster} is not in the fleet (no clusters/{cluster}.yaml on "
                         f"{self.config.source_branch}) and its registration request publishes "
                         "no signing key")

    def _status(self, update: Update, cluster: str) -> Ruling:
        keys, where = self._cluster_keys(cluster)
        if keys is None:
            return Ruling(update.ref, True, f"status not checked: {where}")
        added = self._added_by(update)
        if not added and update.old != ZERO_SHA and update.new != update.old:
            return Ruling(update.ref, False, f"{_short(update.ref)} may not be moved back to "
                          f"an older commit ({update.new[:12]}): the agent only adds")
        return self._signed(update, keys, where, added)

    def _registration(self, update: Update, cluster: str) -> Ruling:
        found = cluster_key(self.git, self.source, cluster)
        if found.problem:
            raise InputError(f"{found.path} on {self.config.source_branch} cannot be read: "
                             f"{found.problem}")
        known = (TrustedKeys.from_text(found.line, origin=f"{found.path} spec.signingKey")
                 if found.line else None)
        added = self._added_by(update)
        if not added and update.old != ZERO_SHA and update.new != update.old:
            return Ruling(update.ref, False, f"{_short(update.ref)} may not be moved back to "
                          f"an older commit ({update.new[:12]})")
        for sha in added:
            payload, armored = split_signature(self._bodies[sha])
            if self.hub_keys and self.hub_keys.check(payload, armored).ok:
                continue
            keys, whose = known, f"cluster {cluster}'s key ({found.path} spec.signingKey)"
            if keys is None:
                keys, whose = self._published(sha), "the key the request publishes"
            if keys is None:
                return Ruling(update.ref, False, f"commit {sha[:12]} publishes no "
                              "spec.signingKey: a registration request must publish the "
                              "agent's key and be signed by it")
            verdict = keys.check(payload, armored)
            if not verdict.ok:
                hub = " or the hub's" if self.hub_keys else ""
                return Ruling(update.ref, False, f"commit {sha[:12]} is {verdict.reason}; "
                              f"{_short(update.ref)} takes only commits signed by {whose}{hub}")
        return Ruling(update.ref, True)

    def _published(self, sha: str) -> TrustedKeys | None:
        raw = self.git.read_blob(sha, REQUEST_FILE)
        if raw is None:
            return None
        try:
            request, _ = parse(raw, f"{sha[:12]}:{REQUEST_FILE}")
            if not request.signing_key:
                return None
            return TrustedKeys.from_text(request.signing_key,
                                         origin=f"{sha[:12]}:{REQUEST_FILE} spec.signingKey")
        except InputError as exc:
            raise InputError(f"commit {sha[:12]}: {exc.message}") from None
