"""`gitfleet init`: a new fleet repo that validates, renders, and diffs in CI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gitfleet.cli import main


def test_scaffold_validates_and_renders(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    root = tmp_path / "fleet"
    assert main(["init", str(root)]) == 0
    for folder in ("clusters", "policies", "templates"):
        assert any((root / folder).rglob("*.yaml")), folder
    assert (root / "fleet.yaml").is_file()
    assert (root / ".git").is_dir()
    capsys.readouterr()
    assert main(["validate", str(root)]) == 0
    out = capsys.readouterr().out
    assert "0 errors, 0 warnings" in out   # the HelmChart (charts/web) renders with helm
    assert "is read but not acted on yet" not in out
    kinds = set()
    for f in root.rglob("*.yaml"):
        if f.relative_to(root).parts[0] not in (".github", "charts"):   # charts: Helm's files
            kinds |= {d["kind"] for d in yaml.safe_load_all(f.read_text()) if d}
    assert {"ManagedCluster", "Subscription", "Localization", "Globalization", "HelmChart",
            "PropagationPolicy", "ClusterPropagationPolicy", "OverridePolicy",
            "ClusterOverridePolicy", "FederatedHPA", "CronFederatedHPA",
            "FleetSettings", "Deployment", "Namespace"} <= kinds
    assert main(["render", str(root), "--out", str(tmp_path / "out")]) == 0
    state = tmp_path / "out" / "clusters" / "example"
    assert (state / "hello" / "hello" / "apps_Deployment_hello_hello.yaml").is_file()
    echo = yaml.safe_load((state / "echo" / "echo" / "core_ConfigMap_echo_echo.yaml").read_text())
    assert echo["metadata"]["labels"]["region"] == "local"            # OverridePolicy
    assert echo["metadata"]["annotations"]["owner"] == "platform-team"  # ClusterOverridePolicy
    chart = yaml.safe_load((state / "charts" / "web@helm" / "apps_Deployment_web_web.yaml"
                             ).read_text())
    assert chart["spec"]["replicas"] == 1                 # rendered by helm template


def test_ci_snippet_runs_validate_and_diff(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    assert main(["init", str(root)]) == 0
    workflow = yaml.safe_load((root / ".github/workflows/gitfleet.yaml").read_text())
    steps = " ".join(str(s.get("run", "")) for s in workflow["jobs"]["review"]["steps"])
    assert "gitfleet validate" in steps and "gitfleet diff" in steps
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    # the scaffold, committed, diffs cleanly against a first change
    run = lambda *a: subprocess.run(["git", *a], cwd=root, check=True,  # noqa: E731
                                    capture_output=True)
    run("add", "-A")
    run("commit", "-qm", "scaffold")
    loc = root / "policies/hello/localization-example.yaml"
    loc.write_text(loc.read_text().replace("nginx:1.25.4", "nginx:1.27.0"))
    run("commit", "-qam", "newer image in example")
    assert main(["diff", "HEAD~1", "HEAD", "--repo", str(root)]) == 0


def test_init_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "fleet"
    (root / "clusters").mkdir(parents=True)
    (root / "clusters" / "example.yaml").write_text("mine\n")
    assert main(["init", str(root), "--no-git"]) == 2
    assert "clusters/example.yaml" in capsys.readouterr().err
    assert (root / "clusters" / "example.yaml").read_text() == "mine\n"
    assert not (root / ".git").exists()
    assert main(["init", str(root), "--no-git", "--force"]) == 0
    assert "ManagedCluster" in (root / "clusters" / "example.yaml").read_text()


def _install_step(root: Path) -> tuple[str, str]:
    workflow = yaml.safe_load((root / ".github/workflows/gitfleet.yaml").read_text())
    job = workflow["jobs"]["review"]
    [script] = [s["run"] for s in job["steps"] if "pip install" in str(s.get("run", ""))]
    return job["env"]["GITFLEET"], script


def _run_install_check(script: str, gitfleet: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """The step's shell, with pip and gitfleet replaced by stubs that record their arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("pip", "gitfleet"):
        stub = bin_dir / tool
        stub.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{tmp_path}/calls"\n')
        stub.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GITFLEET": gitfleet}
    return subprocess.run(["bash", "-e", "-c", script], env=env, capture_output=True, text=True,
                          timeout=30)


def test_ci_installs_a_pinned_gitfleet_never_the_index_namesake(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    assert main(["init", str(root), "--no-git"]) == 0
    lines = (root / ".github/workflows/gitfleet.yaml").read_text().splitlines()
    assert not [line for line in lines if "pip install gitfleet" in line.split("#")[0]]
    source, script = _install_step(root)
    assert source.startswith("git+https://") and "@v" in source
    # as scaffolded, the placeholder stops the job with advice instead of installing anything
    stopped = _run_install_check(script, source, tmp_path)
    assert stopped.returncode != 0 and "set GITFLEET" in stopped.stdout
    assert not (tmp_path / "calls").exists()
    # an unpinned name is refused too; a pinned source is installed and its version printed
    assert _run_install_check(script, "gitfleet", tmp_path).returncode != 0
    pinned = "git+https://github.com/acme/gitfleet@v0.1.0"
    assert _run_install_check(script, pinned, tmp_path).returncode == 0
    assert (tmp_path / "calls").read_text().splitlines() == [f"pip install {pinned}",
                                                             "gitfleet version"]
