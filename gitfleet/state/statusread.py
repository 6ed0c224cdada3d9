"""The agents' status branches as the hub believes them: one reader for the hub, its metrics
and `gitfleet get`.

A read lists the status branches once (`for-each-ref`), chooses per cluster the commit to
believe (`statustrust`: signed by the cluster's `spec.signingKey` when it names one), and
parses the `status.yaml` of the commits not seen before (one `cat-file`). The result is a
frozen `StatusView`; the hub reads one per round and hands the same view to every part.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gitfleet.errors import InputError
from gitfleet.layout import PUSHED_MODES, STATUS_FILE, Branches
from gitfleet.model.loader import Fleet
from gitfleet.state.git import Git
from gitfleet.state.signing import TrustedKeys
from gitfleet.state.statustrust import Choice, StatusTrust
from gitfleet.wire.status import ClusterStatus


@dataclass(frozen=True)
class StatusView:
    """One reading of the status branches: each branch tip, the commit believed per cluster,
    why (choices), and the `status.yaml` of the believed commits, typed (unreadable ones left
    out)."""

    tips: Mapping[str, str] = field(default_factory=dict)
    heads: Mapping[str, str] = field(default_factory=dict)
    choices: Mapping[str, Choice] = field(default_factory=dict)
    statuses: Mapping[str, ClusterStatus] = field(default_factory=dict)


class StatusReader:
    """Reads `<prefix>/status/<cluster>` branches into `StatusView`s (parsed once per commit).

    `hub_keys`: the key the hub signs with; its push workers write the status of Push and Dual
    clusters, so for those clusters a commit it signed is believed too.
    """

    def __init__(self, git: Git, *, branches: Branches | None = None,
                 hub_keys: TrustedKeys | None = None, log_rejections: bool = False) -> None:
        self.git = git
        self.branches = branches or Branches()
        self.trust = StatusTrust(git, log_rejections=log_rejections, hub_keys=hub_keys)
        self._parsed: dict[str, ClusterStatus | None] = {}      # status commit -> status.yaml
        self._keys: tuple[object, ...] = ((), frozenset())

    def trust_keys(self, fleet: Fleet | None) -> None:
        """Take each cluster's `spec.signingKey` from the fleet as the key its status must be
        signed by."""
        if fleet is None:
            return
        self.trust_lines({n: c.signing_key for n, c in fleet.clusters.items() if c.signing_key},
                         hub_written=frozenset(n for n, c in fleet.clusters.items()
                                               if c.signing_key and c.sync_mode in PUSHED_MODES))

    def trust_lines(self, lines: Mapping[str, str], *,
                    hub_written: frozenset[str] = frozenset()) -> None:
        """Each cluster's key line (clusters with none are read unchecked)."""
        keys = (tuple(sorted(lines.items())), hub_written)
        if keys != self._keys:
            self._keys = keys
            self.trust.set_keys(dict(lines), hub_written=hub_written)

    def tips(self) -> dict[str, str]:
        """cluster -> the tip of its status branch, whoever wrote it."""
        prefix = self.branches.status("")
        return {ref[len(prefix):]: sha for ref, sha in self.git.refs(prefix).items()}

    def read(self) -> StatusView:
        """The status branches now."""
        tips = self.tips()
        choices = self.trust.choose(tips)
        heads = {name: c.commit for name, c in choices.items() if c.commit is not None}
        new = [sha for sha in heads.values() if sha not in self._parsed]
        if new:
            found = self.git.read_objects(f"{c}:{STATUS_FILE}" for c in new)
            for sha in new:
                self._parsed[sha] = _parse(found.get(f"{sha}:{STATUS_FILE}"))
        live = set(heads.values())
        self._parsed = {k: v for k, v in self._parsed.items() if k in live}
        statuses = {name: doc for name, sha in heads.items()
                    if (doc := self._parsed.get(sha)) is not None}
        return StatusView(tips=tips, heads=heads, choices=choices, statuses=statuses)


def _parse(data: bytes | None) -> ClusterStatus | None:
    if data is None:
        return None
    try:
        return ClusterStatus.from_yaml(data, STATUS_FILE)
    except (InputError, KeyError, TypeError, ValueError, AttributeError):
        return None
