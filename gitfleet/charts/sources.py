"""Where a HelmChart's chart comes from, and which exact version of it is meant.

- `repo: https://...` (or http): a chart repository; its `index.yaml` lists versions, archive
  URLs (relative ones against the repository) and each archive's sha256 digest.
- `repo: oci://host[:port]/path`: an OCI registry (HTTPS, or HTTP with `plainHTTP: true`);
  versions are the repository's tags, the archive the manifest's Helm chart layer, verified
  against its digest.
- `repo: file://path`: a chart folder in the fleet repository (`<path>/<chart>`, read at the
  source commit); its version is the one in Chart.yaml and its digest that of its files.

The HTTP client (`fetch`: urllib.request with http.client, ssl and email, ~20 ms to import) is
imported where a chart is fetched: every render imports this module, few fleets fetch charts.
"""

from __future__ import annotations

import hashlib
import posixpath
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitfleet import yamlio
from gitfleet.charts import versions
from gitfleet.charts.credentials import Credentials
from gitfleet.charts.errors import ChartError
from gitfleet.errors import InputError

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
HELM_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

# A folder of the fleet repository at the commit being rendered: relative path -> content.
FolderReader = Callable[[str], Mapping[str, bytes]]


@dataclass(frozen=True)
class Resolved:
    """One exact chart version: where its archive is and the digest it must have."""

    kind: str            # "http", "oci" or "folder"
    repo: str
    chart: str
    version: str
    digest: str          # sha256:<hex> of the archive (of the folder's files for "folder")
    url: str = ""
    files: Mapping[str, bytes] = field(default_factory=dict, compare=False, repr=False)


def kind_of(repo: str) -> str:
    scheme = urllib.parse.urlsplit(repo).scheme
    if scheme in ("http", "https"):
        return "http"
    if scheme == "oci":
        return "oci"
    if scheme == "file":
        return "folder"
    raise ChartError(f"repo {repo!r}: not a chart source gitfleet reads (https:// or http:// "
                     "chart repository, oci:// registry, or file://<folder> in the fleet repo)")


# -- HTTP chart repositories ---------------------------------------------------------------


def read_index(repo: str, auth: Credentials | None) -> dict[str, Any]:
    from gitfleet.charts import fetch

    url = repo.rstrip("/") + "/index.yaml"
    raw = fetch.get(url, auth=auth, what=f"chart repository {repo}")
    try:
        index = yamlio.load_one(raw, url)
    except InputError as exc:
        raise ChartError(f"{url} is not a chart repository index: {exc.message}") from None
    if not isinstance(index, dict) or not isinstance(index.get("entries"), dict):
        raise ChartError(f"{url} is not a chart repository index (no `entries`)")
    return index


def resolve_http(repo: str, chart: str, constraint: str, index: Mapping[str, Any]) -> Resolved:
    entries = index["entries"].get(chart)
    if not isinstance(entries, list) or not entries:
        known = sorted(index["entries"])
        raise ChartError(f"chart {chart!r} is not in {repo} (it has: "
                         f"{', '.join(known[:10]) or 'none'})")
    by_version = {str(e.get("version")): e for e in entries if isinstance(e, dict)}
    version = versions.pick(constraint, by_version, what=f"chart {chart} in {repo}")
    entry = by_version[version]
    urls = entry.get("urls") or []
    digest = str(entry.get("digest") or "")
    if not urls:
        raise ChartError(f"{repo}: chart {chart} {version} lists no archive URL")
    if not digest:
        raise ChartError(f"{repo}: chart {chart} {version} has no digest in index.yaml: "
                         "gitfleet takes only archives it can verify")
    url = urllib.parse.urljoin(repo.rstrip("/") + "/", str(urls[0]))
    return Resolved("http", repo, chart, version, "sha256:" + digest.removeprefix("sha256:"),
                    url)


# -- OCI registries -----------------------------------------------------------------------


def _oci_base(repo: str, chart: str, plain_http: bool) -> tuple[str, str]:
    from gitfleet.charts import fetch

    parts = fetch.check_url(repo)
    path = posixpath.join(parts.path.strip("/"), chart).strip("/")
    scheme = "http" if plain_http else "https"
    return f"{scheme}://{parts.netloc}/v2/{path}", f"{repo.rstrip('/')}/{chart}"


def resolve_oci(repo: str, chart: str, constraint: str, *, plain_http: bool,
                auth: Credentials | None) -> Resolved:
    from gitfleet.charts import fetch

    base, ref = _oci_base(repo, chart, plain_http)
    tags = fetch.get_json(f"{base}/tags/list", auth=auth, what=f"chart {ref}")
    listed = [str(t).replace("_", "+") for t in (tags.get("tags") or [])] \
        if isinstance(tags, dict) else []
    version = versions.pick(constraint, listed, what=f"chart {ref}")
    manifest = fetch.get_json(f"{base}/manifests/{version.replace('+', '_')}", auth=auth,
                              accept=OCI_MANIFEST, what=f"chart {ref}:{version}")
    layers = [x for x in (manifest.get("layers") or []) if isinstance(x, dict)
              and x.get("mediaType") == HELM_LAYER] if isinstance(manifest, dict) else []
    if not layers:
        raise ChartError(f"{ref}:{version} is not a Helm chart (no {HELM_LAYER} layer)")
    digest = str(layers[0].get("digest") or "")
    if not digest.startswith("sha256:"):
        raise ChartError(f"{ref}:{version}: the chart layer has no sha256 digest")
    return Resolved("oci", repo, chart, version, digest, f"{base}/blobs/{digest}")


# -- chart folders in the fleet repository --------------------------------------------------


def folder_path(repo: str, chart: str) -> str:
    parts = urllib.parse.urlsplit(repo)
    path = posixpath.normpath(posixpath.join((parts.netloc + parts.path).strip("/"), chart))
    if path.startswith("..") or path.startswith("/") or path == ".":
        raise ChartError(f"repo {repo!r}: a chart folder must be inside the fleet repository "
                         "(file://<folder relative to its top>)")
    return path


def resolve_folder(repo: str, chart: str, constraint: str, read: FolderReader | None
                   ) -> Resolved:
    path = folder_path(repo, chart)
    if read is None:
        raise ChartError(f"{path}: chart folders are read from the fleet repository, which "
                         "this command was not given")
    files = read(path)
    if "Chart.yaml" not in files:
        raise ChartError(f"{path}/Chart.yaml not found in the fleet repository")
    try:
        meta = yamlio.load_one(files["Chart.yaml"], f"{path}/Chart.yaml")
    except InputError as exc:
        raise ChartError(exc.message) from None
    version = str((meta or {}).get("version") or "") if isinstance(meta, dict) else ""
    versions.pick(constraint, [version], what=f"chart folder {path}")
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return Resolved("folder", repo, chart, version, f"sha256:{h.hexdigest()}", path,
                    files=files)


def fetch_archive(resolved: Resolved, auth: Credentials | None) -> bytes:
    """The archive's bytes, verified against the digest the index or manifest gave."""
    from gitfleet.charts import fetch

    origin = resolved.url if resolved.kind == "oci" else resolved.repo
    data = fetch.get(resolved.url, auth=auth, origin=origin,
                     what=f"chart {resolved.chart} {resolved.version}")
    got = "sha256:" + hashlib.sha256(data).hexdigest()
    if got != resolved.digest:
        raise ChartError(f"{resolved.url}: the archive's digest is {got}, the index says "
                         f"{resolved.digest}: not used")
    return data
