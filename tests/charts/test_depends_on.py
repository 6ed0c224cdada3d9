"""`gitfleet.io/depends-on` on a Subscription or propagation policy: written into every
Description of the unit as `dependsOn`; unknown units and cycles are errors at validate."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitfleet.cli import main
from gitfleet.model.loader import load_fleet
from gitfleet.render.core import render
from tests.render.conftest import cluster, configmap, doc, feed, subscription


def _sub(name: str, depends_on: str = "") -> dict[str, object]:
    body = subscription(name, [feed("ConfigMap", name)],
                        [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}])
    if depends_on:
        body["metadata"]["annotations"] = {"gitfleet.io/depends-on": depends_on}  # type: ignore[index]
    return body


def _fleet(**deps: str) -> dict[str, bytes]:
    files = dict([cluster("a", {"env": "prod"})])
    for name in ("db", "api", "web"):
        files[f"templates/{name}.yaml"] = doc(configmap(name))
        files[f"policies/{name}.yaml"] = doc(_sub(name, deps.get(name, "")))
    return files


def test_depends_on_is_written_into_the_description() -> None:
    result = render(load_fleet(_fleet(api="apps/db", web="apps/api, apps/db")))
    assert result.errors == []

    def spec(unit: str) -> dict[str, object]:
        found: dict[str, object] = yaml.safe_load(
            result.files[f"clusters/a/apps/{unit}/description.yaml"])["spec"]
        return found

    assert "dependsOn" not in spec("db")
    assert spec("api")["dependsOn"] == ["apps/db"]
    assert spec("web")["dependsOn"] == ["apps/api", "apps/db"]


def test_an_unknown_unit_is_an_error_naming_it() -> None:
    fleet = load_fleet(_fleet(web="apps/dbb"))
    [error] = fleet.errors
    assert error.obj == "Subscription/apps/web" and error.path == "policies/web.yaml"
    assert "no Subscription or propagation policy apps/dbb in the fleet" in error.message


def test_a_cycle_is_an_error_on_each_unit_of_it(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    files = _fleet(db="apps/web", api="apps/db", web="apps/api")
    for path, data in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.count("a cycle: apps/api -> apps/db -> apps/web -> apps/api") == 3, out


def test_a_malformed_value_is_an_error() -> None:
    fleet = load_fleet(_fleet(web="db"))
    assert any("'db' is not a unit" in p.message for p in fleet.errors)
