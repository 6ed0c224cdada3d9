"""A rendered workload file the hub's autoscaling cannot read is named in a warning (once),
and the other clusters' replicas are still counted: never a silent skip."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gitfleet.hub.autoscaling import Autoscaling
from gitfleet.model.objects import ObjectKey
from gitfleet.state.git import Git

EAST = "clusters/prod-east/web/web/apps_Deployment_web_web.yaml"
WEST = "clusters/prod-west/web/web/apps_Deployment_web_web.yaml"
KEY = ObjectKey("apps", "Deployment", "web", "web")


def manifest(replicas: object) -> bytes:
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: web}}\n"
            f"spec:\n  replicas: {replicas}\n").encode()


@pytest.mark.parametrize("broken, says", [
    (b"spec: [not, closed\n", EAST),
    (manifest("many"), "spec.replicas must be a number"),
    (b"- a list\n", "a rendered workload must be a mapping"),
])
def test_an_unreadable_rendered_file_is_named_and_the_others_still_count(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, broken: bytes, says: str) -> None:
    scaling = Autoscaling(Git(tmp_path))
    scaling._files = {EAST: broken, WEST: manifest(3)}
    with caplog.at_level(logging.WARNING, logger="gitfleet.hub.autoscaling"):
        assert scaling.rendered(KEY) == {"prod-west": 3}
        scaling._rendered = (None, {})          # a new state commit reads the files again
        assert scaling.rendered(KEY) == {"prod-west": 3}
    found = [r for r in caplog.records if r.getMessage() == "rendered workload file not readable"]
    assert len(found) == 1                      # once per text, not once per round
    error = found[0].__dict__["fields"]["error"]
    assert EAST in error and says in error
    assert found[0].__dict__["fields"]["target"] == "Deployment/web/web"


def test_readable_files_count_as_before(tmp_path: Path) -> None:
    scaling = Autoscaling(Git(tmp_path))
    scaling._files = {EAST: manifest(4), WEST: manifest(2),
                      "clusters/prod-west/web/web/apps_Deployment_web_other.yaml": manifest(9)}
    assert scaling.rendered(KEY) == {"prod-east": 4, "prod-west": 2}
