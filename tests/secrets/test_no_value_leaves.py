"""issue 30, item 1: no Secret value leaves the cluster, anywhere.

A fleet with a plaintext Secret (a `stringData` value and a base64 `data` value) and a SOPS
Secret the agent decrypts is synced; then someone changes both Secrets in the cluster (with
`kubectl apply`'s last-applied copy) and, Recovery off, the agent reports the drift. Then every
place a value could go is searched for every planted value, plain and base64: every Git object
of the fleet repo (the plaintext template's values only outside the source and state, which
hold them by the user's choice), every log line of the hub and the agent at `-vv`, every answer
of the dashboard (pages, API, history diff), every file of its static export, and `get`,
`status` and `diff`.
"""

from __future__ import annotations

import base64
import json
import subprocess
import urllib.request
from pathlib import Path

import pyrage
import pytest

from gitfleet.dashboard.app import dashboard_app
from gitfleet.dashboard.source import FleetSource
from gitfleet.httpthread import HTTPThread
from gitfleet.layout import Branches
from gitfleet.state.git import Git
from tests.fleetfixtures import NAMESPACE, feed, managed_cluster, subscription
from tests.harness import Remote, clone, git, gitfleet, person, push, status_of

pytestmark = pytest.mark.slow

# In the template (so in the source and state branches, by the user's choice), never elsewhere.
TEMPLATE = ("Planted-StringData-4b1e", "Planted-Data-93af", "Planted-Rotated-77d0")
# Only ever in the cluster: the SOPS plaintext and what someone put in the live objects.
CLUSTER_ONLY = ("Planted-Sops-Plain-c7d2", "Planted-Live-String-1f62", "Planted-Live-Data-a5e8",
                "Planted-Live-Sops-0b39")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def forms(values: tuple[str, ...]) -> list[str]:
    return [form for v in values for form in (v, b64(v))]


def plain_secret(string_value: str, data_value: str) -> str:
    """A plaintext Secret as `kubectl get -o yaml` exports it, last-applied copy included."""
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain", "namespace": "app"},
           "type": "Opaque", "stringData": {"password": string_value},
           "data": {"token": b64(data_value)}}
    obj["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(obj)}
    return json.dumps(obj)


def raw_git(repo: Path, *args: str, input: bytes | None = None) -> str:
    """`git ARGS` whose output holds binary objects (trees), read as text for the search."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          input=input, timeout=120).stdout.decode("utf-8", "replace")


def found_in(text: str, values: list[str], where: str) -> list[str]:
    return [f"{value!r} in {where}" for value in values if value in text]


def change_in_cluster(sim) -> None:
    """Someone edits both Secrets with `kubectl apply`: new values, and the annotation that
    copies the object."""
    for name, data in (("plain", {"password": b64(CLUSTER_ONLY[1]), "token": b64(CLUSTER_ONLY[2])}),
                       ("sealed", {"DATABASE_URL": b64(CLUSTER_ONLY[3])})):
        obj = {"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": name, "namespace": "app"}, "data": data}
        obj["metadata"]["annotations"] = {
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps(obj)}
        person(sim).apply(obj, force=True)


def http_answers(repo: Path, first: str, second: str) -> dict[str, str]:
    """Every page and API answer of the dashboard over this repo."""
    source = FleetSource(Git(repo))
    source.fresh()
    server = HTTPThread("127.0.0.1", 0, dashboard_app(source), name="leak-test")
    server.start()
    try:
        base = "http://{}:{}".format(*server.address)
        paths = ["/", "/static/app.js", "/api/version", "/api/fleet", "/api/cluster/c1",
                 "/api/app/app/app", "/api/history",
                 f"/api/diff?a={first}&b={second}&cluster=c1"]
        out = {}
        for path in paths:
            with urllib.request.urlopen(base + path, timeout=30) as resp:
                out[path] = resp.read().decode("utf-8", "replace")
        return out
    finally:
        server.stop()


def test_no_planted_value_is_in_git_logs_dashboard_export_or_cli(
        remote: Remote, kubesim, tmp_path: Path) -> None:
    identity = pyrage.x25519.Identity.generate()
    key_file = tmp_path / "c1.agekey"
    key_file.write_text(f"{identity}\n")
    work = clone(remote.git.path, tmp_path / "work")
    (work / "clusters").mkdir()
    (work / "clusters" / "c1.yaml").write_text(managed_cluster(
        "c1", "1" * 8 + "-1111-4111-8111-111111111111", ageRecipient=str(identity.to_public())))
    (work / "policies").mkdir()
    (work / "policies" / "app.yaml").write_text(subscription(
        feed("Secret", "plain"), feed("Secret", "sealed")))
    (work / "templates").mkdir()
    (work / "templates" / "namespace.yaml").write_text(NAMESPACE)
    (work / "templates" / "plain.yaml").write_text(plain_secret(TEMPLATE[0], TEMPLATE[1]))
    clear = tmp_path / "sealed-plain.yaml"          # outside the repo: never committed
    clear.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: sealed, namespace: app}\n"
                     f"stringData:\n  DATABASE_URL: {CLUSTER_ONLY[0]}\n")
    sealed = gitfleet("seal", str(clear), "--cluster", "c1", "--repo", str(work),
                      "--out", str(work / "templates" / "sealed.yaml"))
    assert sealed.returncode == 0, sealed.stderr
    before = push(work, "app: a plaintext and a sealed Secret")

    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    logs: list[str] = []

    def run(*args: str) -> None:
        done = gitfleet("-vv", *args)
        logs.append(done.stdout + done.stderr)
        assert done.returncode == 0, done.stderr

    hub = ("hub", "--repo", str(remote.git.path), "--once")
    agent = ("agent", "--repo", remote.url, "--cluster", "c1", "--once", "--no-register",
             "--kubeconfig", str(kubeconfig), "--workdir", str(tmp_path / "agent"),
             "--age-key-file", str(key_file))
    run(*hub)
    run(*agent)
    first = git(remote.git.path, "rev-parse", Branches().state).strip()
    live = person(sim).get("v1", "Secret", "app", "sealed")
    assert live is not None and live["data"]["DATABASE_URL"] == b64(CLUSTER_ONLY[0])

    (work / "templates" / "plain.yaml").write_text(plain_secret(TEMPLATE[2], TEMPLATE[1]))
    after = push(work, "app: rotate the plain password")
    run(*hub)
    run(*agent)
    second = git(remote.git.path, "rev-parse", Branches().state).strip()
    assert first != second
    change_in_cluster(sim)
    run(*agent)                     # Recovery is off: the drift is reported, left in place
    run(*agent)
    run(*hub)                       # folds the status into the fleet-status branch
    status = status_of(remote)
    assert status is not None
    drifted = {d.name: sorted(f.path for f in d.fields) for d in status.drift}
    assert "data.password" in drifted.get("plain", []) and "data.token" in drifted["plain"]
    assert "data.DATABASE_URL" in drifted.get("sealed", [])

    leaks: list[str] = []
    repo = remote.git.path
    everything = raw_git(repo, "cat-file", "--batch-all-objects", "--batch")
    leaks += found_in(everything, forms(CLUSTER_ONLY), "a Git object of the fleet repo")
    refs = git(repo, "for-each-ref", "--format=%(refname)").split()
    written = [r for r in refs if "/status/" in r or r.endswith("/fleet-status")
               or "/registrations/" in r]
    assert any("/status/c1" in r for r in written)
    objects = git(repo, "rev-list", "--objects", *written)
    status_objects = raw_git(repo, "cat-file", "--batch", input="".join(
        line.split(" ", 1)[0] + "\n" for line in objects.splitlines()).encode())
    leaks += found_in(status_objects, forms(TEMPLATE), "a status or fleet-status object")
    for i, text in enumerate(logs):
        leaks += found_in(text, forms(TEMPLATE + CLUSTER_ONLY), f"log {i} of hub/agent at -vv")

    for path, body in http_answers(repo, first, second).items():
        leaks += found_in(body, forms(TEMPLATE + CLUSTER_ONLY), f"the dashboard's {path}")
    out = tmp_path / "export"
    exported = gitfleet("dashboard", "--repo", str(repo), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any("cluster" in p.name for p in files)
    for p in files:
        leaks += found_in(p.read_text("utf-8", "replace"), forms(TEMPLATE + CLUSTER_ONLY),
                          f"the export's {p.relative_to(out)}")

    for args in (("get", "drift", "-o", "json"), ("get", "descriptions", "-o", "yaml"),
                 ("status", "-o", "json"), ("diff", before, after),
                 ("diff", before, after, "--format", "json"),
                 ("diff", before, after, "--format", "markdown")):
        done = gitfleet("-vv", *args, "--repo", str(repo))
        assert done.returncode == 0, done.stderr
        leaks += found_in(done.stdout + done.stderr, forms(TEMPLATE + CLUSTER_ONLY),
                          f"gitfleet {' '.join(args)}")
    assert not leaks, "\n".join(leaks)
