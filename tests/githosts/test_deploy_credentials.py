"""The install manifests keep the token out of URLs and argv: the repository URL carries no
credentials, and the token, deploy key and known_hosts are files of a mounted Secret."""

from __future__ import annotations

from pathlib import Path

import yaml

from gitfleet.state.urls import split_credentials

ROOT = Path(__file__).resolve().parents[2]


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_agent_takes_credentials_from_files_of_its_secret() -> None:
    [secret] = _docs(ROOT / "deploy" / "agent" / "secret.yaml")
    url = secret["stringData"]["repo-url"]
    assert split_credentials(url)[0] == url                 # no user:token@ in it
    assert {"token", "identity", "known_hosts"} <= set(secret["stringData"])
    [dep] = _docs(ROOT / "deploy" / "agent" / "deployment.yaml")
    spec = dep["spec"]["template"]["spec"]
    [container] = spec["containers"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "git-credentials"]
    folder = mount["mountPath"]
    assert f"--git-token-file={folder}/token" in container["args"]
    assert f"--git-ssh-key={folder}/identity" in container["args"]
    assert f"--git-known-hosts={folder}/known_hosts" in container["args"]
    assert "GIT_SSH_COMMAND" not in {e["name"] for e in container["env"]}
    [volume] = [v for v in spec["volumes"] if v["name"] == "git-credentials"]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]


def test_hub_reads_its_token_from_its_secret() -> None:
    [dep, _service] = _docs(ROOT / "deploy" / "hub" / "hub.yaml")
    [container] = dep["spec"]["template"]["spec"]["containers"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "secret"]
    assert f"--git-token-file={mount['mountPath']}/token" in container["args"]
    text = (ROOT / "deploy" / "hub" / "hub.yaml").read_text()
    assert "x-access-token:<TOKEN>@" not in text
