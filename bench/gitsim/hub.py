"""The hub's side of a change, as cheap as the harness can make it: new commits on some
cluster branches (one `git fast-import` into the served repository) and, in the "after" mode,
their new signed tip documents (gitfleet.wire.tips) in the folder nginx serves."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from bench.gitsim.repo import BRANCHES, IDENTITY, _data, cluster_files
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.wire.tips import Tip, encode, file_name


class HubWriter:
    def __init__(self, repo: Path, tips: Path, key: SigningKey) -> None:
        self.repo, self.tips, self.key = repo, tips, key
        self.trusted = TrustedKeys.of(key)
        self.generation = 1
        self._mtime = 0.0

    def tips_of(self, tips: dict[str, str]) -> None:
        """Publish tip documents for `tips` (cluster -> commit)."""
        self.tips.mkdir(parents=True, exist_ok=True)
        for cluster, commit in tips.items():
            doc = encode(Tip(cluster=cluster, ref=BRANCHES.cluster(cluster), commit=commit,
                             state="0" * 40, issued_at=time.time()), self.key)
            tmp = self.tips / (file_name(cluster) + ".tmp")
            tmp.write_bytes(doc)
            # nginx's ETag is mtime (seconds) and size: a document rewritten within the same
            # second at the same size would keep its ETag (see docs/git-budget.md); a store
            # with content ETags (S3, GCS) has no such case, so the harness makes mtimes differ
            final = self.tips / file_name(cluster)
            self._mtime = max(time.time(), self._mtime + 1.0)
            os.utime(tmp, (self._mtime, self._mtime))
            tmp.rename(final)

    def change(self, clusters: list[str]) -> dict[str, str]:
        """Move each cluster's branch to a new commit; returns cluster -> new commit."""
        self.generation += 1
        chunks = []
        now = int(time.time())
        for i, c in enumerate(clusters):
            for j, body in enumerate(cluster_files(c, self.generation).values()):
                chunks.append(b"blob\nmark :%d\n" % (i * 10 + j + 1) + _data(body))
            ref = BRANCHES.cluster(c).encode()
            msg = f"render {c} #{self.generation}\n\nSource-Commit: {'2' * 40}\n".encode()
            chunks.append(b"commit %s\nmark :%d\ncommitter %s %d +0000\n" % (
                ref, i * 10 + 9, IDENTITY.encode(), now) + _data(msg)
                + b"from %s^0\n" % ref)
            names = list(cluster_files(c, self.generation))
            chunks += [b"M 100644 :%d %s\n" % (i * 10 + j + 1, p.encode())
                       for j, p in enumerate(names)]
            chunks.append(b"\n")
        chunks.append(b"done\n")
        subprocess.run(["git", "-C", str(self.repo), "fast-import", "--quiet", "--done",
                        "--force"], input=b"".join(chunks), check=True)
        out = subprocess.run(["git", "-C", str(self.repo), "rev-parse",
                              *(BRANCHES.cluster(c) for c in clusters)],
                             check=True, capture_output=True).stdout.decode().split()
        return dict(zip(clusters, out, strict=True))
