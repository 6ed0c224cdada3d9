"""A Subscription that has never rendered (its feed was never found) has no Description, yet
`gitfleet get subscriptions` lists it, with PHASE RenderError and its error (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

from gitfleet.cli import main
from tests.cli.fleetrepo import commit, example_repo
from tests.cli.test_get_status import run_hub, table

LOST = """apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {name: lost, namespace: web}
spec:
  subscribers: [{clusterAffinity: {matchLabels: {env: prod}}}]
  feeds:
  - {apiVersion: v1, kind: ConfigMap, name: nowhere}
"""


def test_a_subscription_that_never_rendered_is_listed_with_its_error(tmp_path: Path,
                                                                     capsys) -> None:
    repo = example_repo(tmp_path / "fleet")
    (repo / "policies/web/lost.yaml").write_text(LOST)
    commit(repo, "a Subscription whose feed is nowhere")
    run_hub(repo)
    assert main(["get", "subscriptions", "--repo", str(repo)]) == 0
    rows = {r["NAME"]: r for r in table(capsys.readouterr().out)}
    assert rows["lost"]["PHASE"] == "RenderError" and rows["lost"]["CLUSTERS"] == "0"
    assert rows["web"]["PHASE"] != "RenderError"
    assert main(["get", "subscriptions", "lost", "--repo", str(repo), "-o", "json"]) == 0
    [lost] = json.loads(capsys.readouterr().out)
    assert lost["kind"] == "Subscription" and lost["namespace"] == "web"
    assert lost["renderErrors"] == ["feed not found: v1 ConfigMap web/nowhere"]
    assert "feed not found: v1 ConfigMap web/nowhere" in lost["message"]
