"""Kustomize folders under templates/ are built (kubectl kustomize on this machine) and their
output objects are templates; a failing build is an error of that folder only, and the hub
keeps what it deployed at its last good state."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.render.core import render
from gitfleet.source import Kustomizer, load_snapshot, read_worktree
from gitfleet.state.snapshot import read_revision
from gitfleet.state.store import open_store
from tests.hub.fleet import commit, git
from tests.render.conftest import cluster

SUBSCRIPTION = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: app, namespace: apps}
spec:
  subscribers: [{clusterAffinity: {}}]
  feeds:
  - {apiVersion: v1, kind: ConfigMap, name: prod-settings, namespace: apps}
  - {apiVersion: apps/v1, kind: Deployment, name: prod-web, namespace: apps}
"""

BASE = {
    "templates/app/base/kustomization.yaml": "resources: [deployment.yaml]\n",
    "templates/app/base/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.25"}]}
""",
    "templates/app/prod/kustomization.yaml": """namePrefix: prod-
resources: [../base]
configMapGenerator:
- name: settings
  namespace: apps
  envs: [settings.env]
  options: {disableNameSuffixHash: true}
images:
- {name: nginx, newTag: "1.26"}
""",
    "templates/app/prod/settings.env": "MODE=blue\n",
}


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def fleet_dir(root: Path, extra: dict[str, str] | None = None) -> Path:
    path, data = cluster("c1", {"env": "prod"})
    write(root, {path: data.decode(), "policies/app/subscription.yaml": SUBSCRIPTION,
                 "templates/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: "
                                         "{name: plain, namespace: apps}\n",
                 **BASE, **(extra or {})})
    return root


def test_an_overlay_and_its_base_build_into_templates(tmp_path: Path) -> None:
    files = read_worktree(fleet_dir(tmp_path))
    assert "templates/app/prod/settings.env" in files      # read for the build
    fleet = load_snapshot(files)
    assert fleet.errors == ()
    by_name = {(t.kind, t.name): t for t in fleet.templates.values()}
    # the base is built as its own app too (issue 31: every folder an app)
    assert set(by_name) == {("ConfigMap", "plain"), ("ConfigMap", "prod-settings"),
                            ("Deployment", "prod-web"), ("Deployment", "web")}
    assert by_name[("Deployment", "web")].origin.path == "templates/app/base/kustomization.yaml"
    web = by_name[("Deployment", "prod-web")]
    assert web.origin.path == "templates/app/prod/kustomization.yaml"
    assert web.body["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert by_name[("ConfigMap", "prod-settings")].body["data"] == {"MODE": "blue"}


def test_a_failing_build_is_an_error_of_its_folder_only(tmp_path: Path) -> None:
    root = fleet_dir(tmp_path, {
        "templates/broken/kustomization.yaml": "resources: [missing.yaml]\n",
        "templates/remote/kustomization.yaml":
            "resources:\n- https://github.com/example/base?ref=v1\n"})
    fleet = load_snapshot(read_worktree(root))
    messages = {p.path: p.message for p in fleet.errors}
    assert set(messages) == {"templates/broken/kustomization.yaml",
                             "templates/remote/kustomization.yaml"}
    assert messages["templates/broken/kustomization.yaml"].startswith(
        "kustomize build of templates/broken/ failed: ")
    assert "missing.yaml" in messages["templates/broken/kustomization.yaml"]
    assert "remote resource" in messages["templates/remote/kustomization.yaml"]
    assert "command failed" not in messages["templates/broken/kustomization.yaml"]
    assert "templates/broken/kustomization.yaml" in fleet.broken_paths
    assert {t.name for t in fleet.templates.values()} == {"plain", "prod-settings", "prod-web",
                                                          "web"}


def test_missing_binary_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = read_worktree(fleet_dir(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    fleet = load_snapshot(files, kustomizer=Kustomizer())
    assert sorted((p.path, p.message) for p in fleet.errors) == [
        ("templates/app/base/kustomization.yaml",
         "not built as its own app while templates/app/prod/, which uses it as a base, fails "
         "to build (its objects may be that folder's)"),
        ("templates/app/prod/kustomization.yaml",
         "kustomize build of templates/app/prod/ failed: neither kustomize nor kubectl is on "
         "the PATH")]
    assert {t.name for t in fleet.templates.values()} == {"plain"}


def test_builds_are_cached_by_content(tmp_path: Path) -> None:
    counter = tmp_path / "runs"
    script = tmp_path / "kustomize-counting"
    script.write_text(f"#!/bin/sh\necho x >> {counter}\nexec kubectl kustomize \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    kustomizer = Kustomizer(command=[str(script)])
    root = fleet_dir(tmp_path / "fleet")
    for _ in range(2):
        assert load_snapshot(read_worktree(root), kustomizer=kustomizer).errors == ()
    assert counter.read_text().count("x") == 2      # the overlay and its base, once each
    (root / "templates/app/prod/settings.env").write_text("MODE=green\n")
    fleet = load_snapshot(read_worktree(root), kustomizer=kustomizer)
    assert counter.read_text().count("x") == 3      # the overlay only
    assert {t.name: t.body.get("data") for t in fleet.templates.values()}["prod-settings"] \
        == {"MODE": "green"}
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("gitfleet-kustomize-*"))


def test_the_hub_deploys_a_kustomization_and_keeps_it_when_the_build_breaks(
        tmp_path: Path) -> None:
    repo = fleet_dir(tmp_path / "fleet")
    git(repo, "init", "-q", "-b", "main")
    first = commit(repo, "kustomize app")
    assert {p for p in read_revision(repo, first)[0] if p.startswith("templates/app/")} == \
        set(BASE)
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15))
    hub.run_once()
    branch = "gitfleet/clusters/c1"
    names = git(repo, "ls-tree", "-r", "--name-only", branch).split()
    web = [n for n in names if n.endswith("_Deployment_apps_prod-web.yaml")]
    assert web
    good = yaml.safe_load(git(repo, "show", f"{branch}:{web[0]}"))
    assert good["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"

    # a change to a non-YAML input of the build is a change of the templates it makes
    commit(repo, "green", {"templates/app/prod/settings.env": "MODE=green\n"})
    hub.run_once()
    settings = [n for n in names if n.endswith("_ConfigMap_apps_prod-settings.yaml")]
    assert yaml.safe_load(git(repo, "show", f"{branch}:{settings[0]}"))["data"] == \
        {"MODE": "green"}

    commit(repo, "break the overlay", {"templates/app/prod/kustomization.yaml":
                                       BASE["templates/app/prod/kustomization.yaml"]
                                       + "patches: [{path: nowhere.yaml}]\n"})
    hub.run_once()
    errors = yaml.safe_load(git(repo, "show", "gitfleet/state:errors.yaml"))["errors"]
    assert any(e["path"] == "templates/app/prod/kustomization.yaml"
               and "kustomize build of templates/app/prod/ failed" in e["message"]
               for e in errors)
    # its base is held back with it: an object the overlay redefines must not fall back to
    # the base's version
    assert any(e["path"] == "templates/app/base/kustomization.yaml"
               and "templates/app/prod/, which uses it as a base, fails to build"
               in e["message"] for e in errors)
    assert yaml.safe_load(git(repo, "show", f"{branch}:{web[0]}")) == good
    assert not (repo / "templates/app/prod/kustomization.yaml.out").exists()
    assert git(repo, "status", "--porcelain") == ""   # nothing written into the user's repo


# Argo CD's example apps use one folder as another's base (kustomize-guestbook is the base of
# pre-post-sync, argoproj/argocd-example-apps at 144fd97a0c70); each has its own Application
# there, and its own Subscription here.
GUESTBOOK = {
    "templates/guestbook/kustomization.yaml": "namePrefix: kustomize-\n"
                                              "resources: [deployment.yaml]\n",
    "templates/guestbook/deployment.yaml": BASE["templates/app/base/deployment.yaml"],
    "templates/hooks/kustomization.yaml": "namePrefix: hooks-\n"
                                          "resources: [../guestbook, job.yaml]\n",
    "templates/hooks/job.yaml": """apiVersion: batch/v1
kind: Job
metadata: {name: before, namespace: apps}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: "busybox:1.36"}]
""",
}


def _subscription(name: str, *feeds: tuple[str, str, str]) -> str:
    lines = "".join(f"  - {{apiVersion: {api}, kind: {kind}, name: {n}, namespace: apps}}\n"
                    for api, kind, n in feeds)
    return (f"apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\n"
            f"metadata: {{name: {name}, namespace: apps}}\nspec:\n"
            f"  subscribers: [{{clusterAffinity: {{}}}}]\n  feeds:\n{lines}")


def test_a_folder_that_is_another_ones_base_is_its_own_app(tmp_path: Path) -> None:
    root = fleet_dir(tmp_path, {
        **GUESTBOOK,
        "policies/guestbook.yaml": _subscription(
            "guestbook", ("apps/v1", "Deployment", "kustomize-web")),
        "policies/hooks.yaml": _subscription(
            "hooks", ("apps/v1", "Deployment", "hooks-kustomize-web"),
            ("batch/v1", "Job", "hooks-before"))})
    fleet = load_snapshot(read_worktree(root))
    assert fleet.errors == ()
    result = render(fleet)
    assert list(result.errors) == []
    folders = {p.rsplit("/", 1)[0] for p in result.files if p.startswith("clusters/c1/apps/")}
    assert folders == {"clusters/c1/apps/app", "clusters/c1/apps/guestbook",
                       "clusters/c1/apps/hooks"}
    assert any(p.startswith("clusters/c1/apps/guestbook/") and "kustomize-web" in p
               for p in result.files)


def test_an_object_an_overlay_redefines_is_the_overlays(tmp_path: Path) -> None:
    # an overlay without namePrefix outputs the base's objects under the same identity: one
    # template each, the overlay's (not a duplicate, and not the base's version)
    root = fleet_dir(tmp_path, {
        "templates/app/base/kustomization.yaml": "resources: [deployment.yaml, extra.yaml]\n",
        "templates/app/base/extra.yaml": "apiVersion: v1\nkind: ConfigMap\n"
                                         "metadata: {name: extra, namespace: apps}\n",
        "templates/app/same/kustomization.yaml": "resources: [../base]\n"
                                                 "images:\n- {name: nginx, newTag: '1.27'}\n"})
    fleet = load_snapshot(read_worktree(root))
    assert fleet.errors == ()
    by_name = {t.name: t for t in fleet.templates.values()}
    assert by_name["web"].origin.path == "templates/app/same/kustomization.yaml"
    assert by_name["web"].body["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "nginx:1.27"
    assert by_name["extra"].origin.path == "templates/app/same/kustomization.yaml"


def test_a_missing_feed_names_the_folder_that_failed_to_build(tmp_path: Path) -> None:
    root = fleet_dir(tmp_path, {"templates/app/prod/kustomization.yaml":
                                BASE["templates/app/prod/kustomization.yaml"]
                                + "patches: [{path: nowhere.yaml}]\n"})
    result = render(load_snapshot(read_worktree(root)))
    [missing] = [p for p in result.errors if "feed not found" in p.message]
    assert missing.path == "policies/app/subscription.yaml"
    assert "feed not found: v1 ConfigMap apps/prod-settings, apps/v1 Deployment " \
        "apps/prod-web; it may be in a template that could not be read: " \
        "templates/app/base/kustomization.yaml (not built as its own app while " \
        "templates/app/prod/, " in missing.message
    assert "templates/app/prod/kustomization.yaml (kustomize build of templates/app/prod/ " \
        "failed: " in missing.message
