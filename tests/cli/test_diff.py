"""`gitfleet diff` on real Git histories of the worked example fleet."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from gitfleet.cli import main
from gitfleet.diff.engine import diff_revisions
from gitfleet.diff.model import CHANGED
from tests.cli.fleetrepo import commit, edit, example_repo
from tests.gitserver import git_daemon, init_bare
from tests.harness import gitfleet_here

NEW_CLUSTER = """apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata:
  name: edge
  namespace: gitfleet-edge
  labels:
    env: edge
spec:
  syncMode: Pull
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return example_repo(tmp_path / "fleet")


def run_json(repo: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main(["diff", *args, "--repo", str(repo), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_localization_change_touches_its_cluster_only(repo: Path, capsys) -> None:
    edit(repo, "policies/web/localization-prod-west.yaml", '"cacheSeconds": 120',
         '"cacheSeconds": 300')
    commit(repo, "prod-west caches longer")
    code, out = run_json(repo, "HEAD~1", "HEAD", capsys=capsys)
    assert code == 0
    assert out["summary"]["clustersAffected"] == 1
    assert out["summary"]["clustersTotal"] == 3
    [cluster] = [c for c in out["clusters"] if c["affected"]]
    assert cluster["name"] == "prod-west"
    [obj] = cluster["objects"]
    assert (obj["kind"], obj["namespace"], obj["name"], obj["change"]) == \
        ("ConfigMap", "web", "web-config", CHANGED)
    assert '-        "cacheSeconds": 120' in obj["diff"]
    assert '+        "cacheSeconds": 300' in obj["diff"]
    assert out["summary"]["replicasMoved"] == 0


def test_new_cluster_label_moves_a_subscription_onto_it(repo: Path, capsys) -> None:
    (repo / "clusters/edge.yaml").write_text(NEW_CLUSTER)
    commit(repo, "edge cluster")
    edit(repo, "clusters/edge.yaml", "env: edge", "env: prod")
    commit(repo, "edge joins prod")
    code, out = run_json(repo, "HEAD~1", "HEAD", capsys=capsys)
    assert code == 0
    edge = next(c for c in out["clusters"] if c["name"] == "edge")
    assert edge["change"] == "changed"
    # the labels selectors see, the built-in cluster-name among them
    name = {"clusters.clusternet.io/cluster-name": "edge"}
    assert edge["labelsBefore"] == {"env": "edge", **name}
    assert edge["labelsAfter"] == {"env": "prod", **name}
    added = {(o["unit"], o["kind"], o["name"]) for o in edge["objects"] if o["change"] == "added"}
    assert ("web/web", "Deployment", "web") in added
    assert ("web/web", "Service", "web") in added
    # web's 6 replicas are now divided over three prod clusters: some leave the other two.
    moves = {(c["name"], r["name"]): (r["before"], r["after"])
             for c in out["clusters"] for r in c["replicas"] if r["unit"] == "web/web"}
    assert moves[("edge", "web")][0] == 0 and moves[("edge", "web")][1] > 0
    assert sum(after - before for before, after in moves.values()) == 0
    assert out["summary"]["replicasMoved"] == moves[("edge", "web")][1]
    assert not any(c["affected"] for c in out["clusters"] if c["name"] == "staging")


def test_weight_change_moves_replicas(repo: Path, capsys) -> None:
    edit(repo, "policies/web/subscription.yaml", "values: [large]\n      weight: 1",
         "values: [large]\n      weight: 4")
    commit(repo, "prod-east takes more of web")
    code, out = run_json(repo, "HEAD~1", "HEAD", capsys=capsys)
    assert code == 0
    moves = {c["name"]: (r["before"], r["after"]) for c in out["clusters"]
             for r in c["replicas"] if (r["kind"], r["name"]) == ("Deployment", "web")}
    # weights 2:1 -> 5:1 of 6 replicas: 4/2 -> 5/1.
    assert moves == {"prod-east": (4, 5), "prod-west": (2, 1)}
    assert out["summary"]["replicasMoved"] == 1
    assert out["summary"]["replicasNet"] == 0


def test_apply_later_change_is_reported_as_deferred(repo: Path, capsys) -> None:
    edit(repo, "policies/web/localization-prod-west.yaml", '"team": "web-west"',
         '"team": "west-platform"')
    commit(repo, "new owner annotation (ApplyLater)")
    code, out = run_json(repo, "HEAD~1", "HEAD", capsys=capsys)
    assert code == 0
    [cluster] = [c for c in out["clusters"] if c["deferred"]]
    assert cluster["name"] == "prod-west"
    [d] = cluster["deferred"]
    assert (d["kind"], d["name"], d["path"]) == (
        "Localization", "web-west-annotations", "policies/web/localization-prod-west.yaml")
    assert "ApplyLater" in d["reason"]
    assert cluster["objects"] == []  # nothing deployed changes yet
    assert out["summary"]["clustersAffected"] == 0
    # the same override, together with a change of the Subscription, takes effect now
    edit(repo, "policies/web/subscription.yaml", "values: [large]\n      weight: 1",
         "values: [large]\n      weight: 2")
    commit(repo, "web reweighted")
    code, out = run_json(repo, "HEAD~2", "HEAD", capsys=capsys)
    west = next(c for c in out["clusters"] if c["name"] == "prod-west")
    assert west["deferred"] == []
    dep = next(o for o in west["objects"] if o["kind"] == "Deployment")
    assert "+    team: west-platform" in dep["diff"]


def test_broken_file_is_an_error_with_exit_1(repo: Path, capsys) -> None:
    (repo / "policies/web/globalization.yaml").write_text("kind: Globalization\nspec: [\n")
    commit(repo, "broken")
    code = main(["diff", "HEAD~1", "HEAD", "--repo", str(repo)])
    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"error: policies/web/globalization\.yaml:\d+", out)
    code, data = run_json(repo, "HEAD~1", "HEAD", capsys=capsys)
    assert code == 1 and data["summary"]["errorsIntroduced"] >= 1
    # fixing it again is reported as fixed, exit 0
    (repo / "policies/web/globalization.yaml").write_bytes(
        subprocess.run(["git", "show", "HEAD~1:policies/web/globalization.yaml"], cwd=repo,
                       check=True, capture_output=True).stdout)
    commit(repo, "fixed")
    code, data = run_json(repo, "HEAD~1", "HEAD", capsys=capsys)
    assert code == 0 and data["summary"]["errorsFixed"] >= 1


def test_unchanged_fleet_renders_nothing(repo: Path, capsys) -> None:
    (repo / "README.txt").write_text("not a fleet file\n")
    commit(repo, "docs only")
    code, out = run_json(repo, "HEAD~1", "HEAD", capsys=capsys)
    assert code == 0
    assert out["clusters"] == [] and out["changedFiles"] == []
    assert out["summary"]["unitsRendered"] == 0


def _well_formed(md: str) -> None:
    assert md.count("<details>") == md.count("</details>")
    assert md.count("<summary>") == md.count("</summary>")
    fences = re.findall(r"^(`{3,})", md, re.M)
    assert len(fences) % 2 == 0
    for line in md.splitlines():
        if line.startswith("|"):
            assert line.endswith("|")


def test_markdown_is_well_formed_and_stays_under_its_limit(repo: Path, capsys) -> None:
    (repo / "clusters/edge.yaml").write_text(NEW_CLUSTER.replace("env: edge", "env: prod"))
    edit(repo, "templates/web/web.yaml", "replicas: 6", "replicas: 9")
    commit(repo, "edge cluster and more web")
    assert main(["diff", "HEAD~1", "HEAD", "--repo", str(repo), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    _well_formed(md)
    assert md.startswith("### gitfleet diff")
    assert "**1 of 4 clusters affected**" not in md  # several clusters change
    assert "<b>edge</b>" in md and "```diff" in md
    assert main(["diff", "HEAD~1", "HEAD", "--repo", str(repo), "--format", "markdown",
                 "--max-bytes", "3000"]) == 0
    small = capsys.readouterr().out
    _well_formed(small)
    assert len(small) <= 3000
    assert "left out" in small and "--cluster NAME" in small


def test_reduced_render_matches_a_full_render(repo: Path) -> None:
    edit(repo, "policies/web/localization-prod-west.yaml", '"cacheSeconds": 120',
         '"cacheSeconds": 90')
    commit(repo, "a")
    (repo / "clusters/edge.yaml").write_text(NEW_CLUSTER.replace("env: edge", "env: prod"))
    commit(repo, "b")
    edit(repo, "policies/metrics/overrides.yaml", "mirror.us-west", "mirror2.us-west")
    commit(repo, "c")
    for base, head in (("HEAD~3", "HEAD~2"), ("HEAD~2", "HEAD~1"), ("HEAD~1", "HEAD"),
                       ("HEAD~3", "HEAD")):
        fast = diff_revisions(repo, base, head).to_dict()
        full = diff_revisions(repo, base, head, everything=True).to_dict()
        for d in (fast, full):
            d["summary"].pop("unitsRendered")
        assert fast == full
    assert diff_revisions(repo, "HEAD~3", "HEAD~2").units_rendered == 1


def test_cluster_option_and_text_output(repo: Path, capsys) -> None:
    edit(repo, "templates/web/web.yaml", "replicas: 6", "replicas: 9")
    commit(repo, "more web")
    assert main(["diff", "HEAD~1", "HEAD", "--repo", str(repo), "--cluster", "prod-west"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].endswith("0 errors introduced")
    assert "2 of 3 clusters affected" in text.splitlines()[0]
    assert "cluster prod-west" in text and "cluster prod-east" not in text
    assert "replicas: Deployment web/web (web/web) 2 -> 3" in text


def test_diff_of_a_remote_repo_and_the_command_line(repo: Path, tmp_path: Path) -> None:
    edit(repo, "templates/web/web.yaml", "replicas: 6", "replicas: 9")
    commit(repo, "more web")
    served = tmp_path / "served"
    init_bare(served / "fleet.git")
    subprocess.run(["git", "push", "-q", str(served / "fleet.git"), "main",
                    "main~1:refs/heads/base"], cwd=repo, check=True)
    with git_daemon(served) as url:
        proc = gitfleet_here("diff", "base", "main", "--repo", f"{url}/fleet.git", "--no-diffs")
    assert proc.returncode == 0, proc.stderr
    assert "2 of 3 clusters affected" in proc.stdout
    assert "replicas: Deployment web/web (web/web) 4 -> 6" in proc.stdout


EDITS = {
    "karmada override": ("policies/metrics/overrides.yaml", "mirror.us-west", "mirror2.us-west"),
    "karmada template": ("templates/metrics/metrics.yaml", "name: collector", "name: collector2"),
    "karmada weights": ("policies/metrics/propagation.yaml", "weight: 3", "weight: 1"),
    "cluster taint": ("clusters/staging.yaml", "value: staging", "value: qa"),
    "cluster label": ("clusters/prod-west.yaml", "region: us-west\nspec", "region: us-east\nspec"),
    "globalization affinity": ("policies/web/globalization.yaml", "env: prod", "region: us-west"),
    "apply later": ("policies/web/localization-prod-west.yaml", '"web-west"', '"west"'),
    "api template": ("templates/api/api.yaml", "replicas:", "replicas: 5 #"),
    "subscription gone": ("policies/api/subscription.yaml", "kind: Subscription",
                          "kind: ConfigMapX"),
}


@pytest.mark.parametrize("edit_name", sorted(EDITS))
def test_every_kind_of_change_renders_what_a_full_render_shows(repo: Path, edit_name: str
                                                               ) -> None:
    rel, old, new = EDITS[edit_name]
    edit(repo, rel, old, new)
    commit(repo, edit_name)
    fast = diff_revisions(repo, "HEAD~1", "HEAD")
    full = diff_revisions(repo, "HEAD~1", "HEAD", everything=True)
    a, b = fast.to_dict(), full.to_dict()
    for d in (a, b):
        d["summary"].pop("unitsRendered")
    assert a == b
    assert fast.changed_files == (rel,)
