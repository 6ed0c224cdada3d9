"""Chart sources and what the commands make of them: an OCI registry and a chart folder in
the fleet repo, hooks and CRDs as the HelmChart asks, digests verified, a repository that is
down, and `validate`/`render`/`diff` rendering charts as the hub does."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitfleet.charts.renderer import Charts
from gitfleet.cli import main
from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from tests.charts.chartrepo import HELM, ChartRepo, oci_registry, push_oci, write_chart
from tests.charts.fleet import chart_fleet
from tests.harness import git
from tests.render.conftest import objects_in

pytestmark = pytest.mark.skipif(HELM is None, reason="helm is not installed (tools/setup)")


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


def test_disable_hooks_and_skip_crds(repo: ChartRepo, tmp_path: Path) -> None:
    fleet = load_fleet(chart_fleet(repo.url, disableHooks=True, skipCRDs=True,
                                   createNamespace=False))
    result = render(fleet, charts=Charts(tmp_path / "work"))
    assert result.errors == []
    assert set(objects_in(result, "a")) == {"ConfigMap/web/web-settings",
                                            "Deployment/web/web-web", "Service/web/web-extra"}


def test_an_archive_that_does_not_match_its_digest_is_refused(repo: ChartRepo,
                                                              tmp_path: Path) -> None:
    archive = repo.root / "web-1.0.0.tgz"
    archive.write_bytes(archive.read_bytes() + b"tampered")
    result = render(load_fleet(chart_fleet(repo.url)), charts=Charts(tmp_path / "work"))
    assert result.errors and all("the archive's digest is sha256:" in p.message and
                                 "not used" in p.message for p in result.errors)
    assert not list((tmp_path / "work" / "archives").glob("*.tgz"))


def test_a_repository_that_is_down_is_an_error_naming_it(tmp_path: Path) -> None:
    result = render(load_fleet(chart_fleet("http://127.0.0.1:9/charts")),
                    charts=Charts(tmp_path / "work"))
    assert result.errors
    for p in result.errors:
        assert "HelmChart apps/web (templates/web.yaml)" in p.message
        assert "repository unreachable (http://127.0.0.1:9/charts/index.yaml" in p.message


def test_a_version_range_resolves_to_the_newest_match(repo: ChartRepo, tmp_path: Path) -> None:
    repo.publish("web", "1.2.0")
    repo.publish("web", "2.0.0")
    result = render(load_fleet(chart_fleet(repo.url, "^1.0")), charts=Charts(tmp_path / "w"))
    desc = yaml.safe_load(result.files["clusters/a/apps/web@helm/description.yaml"])
    assert desc["spec"]["charts"][0]["version"] == "1.2.0"
    latest = render(load_fleet(chart_fleet(repo.url, "")), charts=Charts(tmp_path / "w"))
    assert objects_in(latest, "a")["ConfigMap/web/web-settings"]["data"]["chartVersion"] == \
        "2.0.0"


def test_a_newly_published_match_is_picked_up_after_the_interval(repo: ChartRepo,
                                                                 tmp_path: Path) -> None:
    now = [0.0]
    charts = Charts(tmp_path / "work", interval=60, clock=lambda: now[0])
    fleet = load_fleet(chart_fleet(repo.url, ">=1.0.0"))
    assert charts.refresh(fleet)[1] == []
    repo.publish("web", "1.3.0")
    now[0] = 30.0
    assert charts.refresh(fleet)[1] == []          # not re-resolved before the interval
    now[0] = 61.0
    key, news = charts.refresh(fleet)
    assert news == [f"HelmChart apps/web: chart web 1.3.0 ({_digest(repo, '1.3.0')}) "
                    f"(was web 1.0.0 ({_digest(repo, '1.0.0')}))"]


def _digest(repo: ChartRepo, version: str) -> str:
    import hashlib
    return "sha256:" + hashlib.sha256((repo.root / f"web-{version}.tgz").read_bytes()).hexdigest()


def test_oci_registry_with_plain_http(tmp_path: Path) -> None:
    with oci_registry(tmp_path) as registry:
        push_oci(tmp_path, registry, "web", "0.5.0")
        push_oci(tmp_path, registry, "web", "0.6.0", extra=True)
        files = chart_fleet(f"oci://{registry}/charts", "~0.5", plainHTTP=True)
        result = render(load_fleet(files), charts=Charts(tmp_path / "work"))
        assert result.errors == []
        got = objects_in(result, "b")
        assert got["ConfigMap/web/web-settings"]["data"] == {
            **got["ConfigMap/web/web-settings"]["data"], "chartVersion": "0.5.0",
            "message": "from-b"}
        latest = render(load_fleet(chart_fleet(f"oci://{registry}/charts", "", plainHTTP=True)),
                        charts=Charts(tmp_path / "work"))
        assert "Service/web/web-extra" in objects_in(latest, "a")
        missing = render(load_fleet(chart_fleet(f"oci://{registry}/charts", "3.0.0",
                                                plainHTTP=True)),
                         charts=Charts(tmp_path / "work"))
        assert missing.errors and all("no version 3.0.0 (available: 0.6.0, 0.5.0)" in p.message
                                      for p in missing.errors)


def test_chart_folder_in_the_fleet_repo_render_validate_and_diff(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "fleet"
    _write(root, chart_fleet("file://charts", "1.0.0"))
    write_chart(root / "charts", "web", "1.0.0", extra=True)
    cache = ["--chart-cache", str(tmp_path / "cache")]
    assert main(["validate", str(root), *cache]) == 0
    assert main(["render", str(root), "--out", str(tmp_path / "out"), *cache]) == 0
    b = yaml.safe_load((tmp_path / "out/clusters/b/apps/web@helm/core_ConfigMap_web_web-settings"
                        ".yaml").read_text())
    assert b["data"]["message"] == "from-b" and b["data"]["chartVersion"] == "1.0.0"
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "web 1.0.0")
    # a chart bump: the chart folder and the HelmChart's version change together
    write_chart(root / "charts", "web", "1.1.0")
    _write(root, {"templates/web.yaml": chart_fleet("file://charts", "1.1.0")[
        "templates/web.yaml"]})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "web 1.1.0")
    capsys.readouterr()
    assert main(["diff", "HEAD~1", "HEAD", "--repo", str(root), *cache]) == 0
    out = capsys.readouterr().out
    for cluster in ("a", "b"):
        section = out.split(f"cluster {cluster}")[1].split("cluster ")[0] if \
            f"cluster {cluster}" in out else out
        assert "web/web-settings" in section and "web/web-extra" in section, out
    # the chart folder alone changes (no fleet file): diff renders the chart again
    (root / "charts" / "web" / "values.yaml").write_text(
        "message: changed in the chart\nreplicas: 1\ntag: '1.25'\n")
    git(root, "commit", "-qam", "web: new default message")
    capsys.readouterr()
    assert main(["diff", "HEAD~1", "HEAD", "--repo", str(root), *cache]) == 0
    out = capsys.readouterr().out
    assert "charts/web/values.yaml" in out and "web/web-settings" in out, out
    # cluster b's own message (its Localization) hides the new default: only a changes
    assert "1 of 2 clusters affected" in out and "cluster a: 1 changed" in out, out
    # a version the folder does not hold: validate names the HelmChart, its file, the cause
    _write(root, {"templates/web.yaml": chart_fleet("file://charts", "2.0.0")[
        "templates/web.yaml"]})
    capsys.readouterr()
    assert main(["validate", str(root), *cache]) == 1
    out = capsys.readouterr().out
    assert "HelmChart apps/web (templates/web.yaml): chart folder charts/web: no version " \
           "2.0.0 (available: 1.1.0)" in out


def test_a_template_error_names_the_helm_chart_and_helms_message(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    _write(root, chart_fleet("file://charts", "1.0.0"))
    chart = write_chart(root / "charts", "web", "1.0.0")
    (chart / "templates" / "broken.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
        "data: {v: {{ .Values.missing.deeper | quote }}}\n")
    from gitfleet.charts import folders
    result = render(load_fleet(chart_fleet("file://charts", "1.0.0")),
                    charts=Charts(tmp_path / "work").at(folders.worktree(root)))
    assert result.errors
    for p in result.errors:
        assert p.message.startswith("HelmChart apps/web (templates/web.yaml): helm template "
                                    "failed: ")
        assert "broken.yaml" in p.message and "nil pointer" in p.message


def test_lookup_returns_nothing(tmp_path: Path) -> None:
    """The hub renders without a cluster connection: Helm's `lookup` finds nothing (as in
    Argo CD), so a chart takes its "not found" branch in every cluster."""
    root = tmp_path / "fleet"
    chart = write_chart(root / "charts", "web", "1.0.0")
    (chart / "templates" / "lookup.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: looked-up}\n"
        "data: {found: {{ if lookup \"v1\" \"Namespace\" \"\" \"kube-system\" }}\"yes\""
        "{{ else }}\"no\"{{ end }}}\n")
    from gitfleet.charts import folders
    result = render(load_fleet(chart_fleet("file://charts", "1.0.0")),
                    charts=Charts(tmp_path / "work").at(folders.worktree(root)))
    assert result.errors == []
    for cluster in ("a", "b"):
        assert objects_in(result, cluster)["ConfigMap/web/looked-up"]["data"] == {"found": "no"}
