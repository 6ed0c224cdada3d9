"""Which status commit of each cluster to believe: the newest one signed by the cluster's key.

Anyone who can push to `<prefix>/status/<c>` could otherwise make the hub fold a status of
their choosing (a cluster "ready" with room for everything, Descriptions "Success"). For a
cluster whose ManagedCluster names `spec.signingKey`, the status folded is therefore the tip of
its branch only when that commit is signed by that key; otherwise it is the newest ancestor that
is (at most `MAX_WALK` commits back), and the rejection is reported with its reason. No such
commit: the cluster has no status (never ready) until its agent writes one. A cluster without
`spec.signingKey` is folded as before, with a warning that nothing checked who wrote it.

Verdicts are cached per (key, commit): a commit is verified once, however often it is folded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from gitfleet.errors import InputError
from gitfleet.logs import log
from gitfleet.state.git import Git
from gitfleet.state.signing import TrustedKeys, split_signature, verify_commit_body

LOG = logging.getLogger("gitfleet.hub.status")      # (the hub logs what it rejects)
MAX_WALK = 100          # commits walked back from a rejected tip to find a signed one
_CACHE_LIMIT = 200_000


@dataclass(frozen=True)
class Choice:
    """The status commit to fold for one cluster (None: none to believe), and what to say."""

    commit: str | None
    rejected: str = ""     # why the branch tip is not folded
    warning: str = ""      # folded, but no key says who wrote it


@dataclass(frozen=True)
class _Key:
    line: str
    keys: TrustedKeys | None     # None: the line is unusable (problem says why)
    fingerprint: str
    problem: str = ""
    hub: bool = False        # the hub's keys are trusted too (a Push or Dual cluster)


class StatusTrust:
    """Chooses the status commit to fold per cluster; `log_rejections` for the hub's log."""

    def __init__(self, git: Git, *, log_rejections: bool = False,
                 hub_keys: TrustedKeys | None = None) -> None:
        self.git = git
        self.log_rejections = log_rejections
        # the hub's own key(s): its push workers write the sync part of Push and Dual clusters'
        # status (gitfleet.hub.pushworkers), signed with the key the hub signs everything with
        self.hub_keys = hub_keys
        # (the verdict cache is keyed by fingerprint: a cluster that also trusts the hub's keys
        # has its own, "+hub")
        self._keys: dict[str, _Key] = {}
        self._verdicts: dict[tuple[str, str], tuple[bool, str]] = {}   # (fingerprint, sha)
        self._choices: dict[tuple[str, str, str], Choice] = {}        # (cluster, fpr, head)
        self._signed: dict[str, bool] = {}                              # sha -> has a signature

    def set_keys(self, lines: Mapping[str, str], *,
                 hub_written: frozenset[str] = frozenset()) -> None:
        """Each cluster's `spec.signingKey` line (clusters with none are left out);
        `hub_written`: the Push and Dual clusters, whose status the hub's push workers write
        too (signed with `hub_keys`, which are trusted for those clusters only)."""
        keys: dict[str, _Key] = {}
        for name, line in lines.items():
            known = self._keys.get(name)
            if known is not None and known.line == line and \
                    known.hub == (name in hub_written and bool(self.hub_keys)):
                keys[name] = known
                continue
            origin = f"clusters/{name}.yaml spec.signingKey"
            try:
                parsed = TrustedKeys.from_text(line, origin=origin)
            except InputError as exc:
                keys[name] = _Key(line, None, "", f"{origin} is unusable: {exc.message}")
                continue
            if len(parsed) != 1:
                keys[name] = _Key(line, None, "", f"{origin} must hold exactly one key")
                continue
            hub = name in hub_written and bool(self.hub_keys)
            trusted = parsed.merged(self.hub_keys) if hub and self.hub_keys else parsed
            keys[name] = _Key(line, trusted, parsed.fingerprints[0] + ("+hub" if hub else ""),
                              hub=hub)
        self._keys = keys

    def choose(self, heads: Mapping[str, str]) -> dict[str, Choice]:
        """cluster -> the Choice for the tip `heads[cluster]` of its status branch."""
        if len(self._verdicts) > _CACHE_LIMIT:
            self._verdicts.clear()
        if len(self._choices) > _CACHE_LIMIT or len(self._signed) > _CACHE_LIMIT:
            self._choices.clear()
            self._signed.clear()
        self._prefetch(heads)
        out: dict[str, Choice] = {}
        for name, head in heads.items():
            key = self._keys.get(name)
            if key is None:
                out[name] = self._unchecked(name, head)
                continue
            cache_key = (name, key.fingerprint or key.problem, head)
            choice = self._choices.get(cache_key)
            if choice is None:
                choice = self._choose(name, head, key)
                self._choices[cache_key] = choice
                if choice.rejected and self.log_rejections:
                    log(LOG, logging.WARNING, "status rejected", cluster=name,
                        commit=head[:12], reason=choice.rejected,
                        folded=(choice.commit or "nothing")[:12])
            out[name] = choice
        return out

    def _prefetch(self, heads: Mapping[str, str]) -> None:
        """Read every head not judged yet in one `cat-file` call."""
        wanted = []
        for name, head in heads.items():
            key = self._keys.get(name)
            if key is None:
                if head not in self._signed:
                    wanted.append(head)
            elif key.keys is not None and (key.fingerprint, head) not in self._verdicts:
                wanted.append(head)
        if not wanted:
            return
        bodies = self.git.read_objects(wanted)
        for name, head in heads.items():
            body = bodies.get(head)
            if body is None:
                continue
            key = self._keys.get(name)
            if key is None:
                self._signed[head] = split_signature(body)[1] is not None
            elif key.keys is not None:
                self._judge(key, head, body)

    def _judge(self, key: _Key, sha: str, body: bytes) -> tuple[bool, str]:
        assert key.keys is not None
        verdict = verify_commit_body(body, key.keys)
        result = (verdict.ok, verdict.reason)
        self._verdicts[(key.fingerprint, sha)] = result
        return result

    def _verdict(self, key: _Key, sha: str) -> tuple[bool, str]:
        found = self._verdicts.get((key.fingerprint, sha))
        if found is not None:
            return found
        body = self.git.read_objects([sha]).get(sha, b"")
        return self._judge(key, sha, body)

    def _choose(self, name: str, head: str, key: _Key) -> Choice:
        if key.keys is None:
            return Choice(None, rejected=key.problem)
        ok, reason = self._verdict(key, head)
        if ok:
            return Choice(head)
        why = (f"commit {head[:12]} is {reason}" if reason == "unsigned"
               else f"commit {head[:12]}: {reason}")
        why += f"; spec.signingKey is {key.fingerprint.removesuffix('+hub')}"
        out = self.git.run("rev-list", f"--max-count={MAX_WALK + 1}", head).decode().split()
        older = out[1:]
        unknown = [sha for sha in older if (key.fingerprint, sha) not in self._verdicts]
        for sha, body in self.git.read_objects(unknown).items():
            self._judge(key, sha, body)
        for sha in older:
            if self._verdict(key, sha)[0]:
                return Choice(sha, rejected=f"{why} (folded {sha[:12]}, the newest signed)")
        return Choice(None, rejected=f"{why} (no signed status in the {len(older)} commits "
                                     "before it)")

    def _unchecked(self, name: str, head: str) -> Choice:
        signed = self._signed.get(head)
        if signed is None:
            body = self.git.read_objects([head]).get(head, b"")
            signed = self._signed[head] = split_signature(body)[1] is not None
        what = "status signature not checked" if signed else "status not signed"
        return Choice(head, warning=f"{what}: no spec.signingKey for cluster {name}")
