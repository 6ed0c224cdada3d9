"""A chart whose hook is written with `metadata.generateName` (as Argo CD and Helm hooks are)
expands to a template known by its generateName - the agent creates one object per run - and
generateName on an object that is no hook stops the chart with an error naming it."""

from __future__ import annotations

from typing import Any

from gitfleet.model.objects import Origin
from gitfleet.render.charts import Capabilities, ChartOutput, ChartRequest, expand


def _job(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"generateName": "web-migrate-", "annotations": annotations},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "migrate", "image": "registry.example/migrate:1.0"}]}}}}


def _expand(*manifests: dict[str, Any]) -> Any:
    request = ChartRequest("HelmChart/apps/web", "templates/web.yaml", {}, "web", "web", {},
                           Capabilities())
    return expand(request, ChartOutput(manifests=manifests, chart="web", version="1.0.0"),
                  Origin("templates/web.yaml"), create_namespace=False,
                  kubernetes_version="1.31")


def test_a_rendered_hook_with_generate_name_is_known_by_it() -> None:
    out = _expand(_job({"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "-2"}))
    assert out.error == ""
    [template] = out.templates
    assert (template.kind, template.namespace, template.name) == ("Job", "web", "web-migrate-")
    assert "name" not in template.body["metadata"]


def test_generate_name_on_an_object_that_is_no_hook_is_an_error_naming_it() -> None:
    out = _expand(_job({}))
    assert "rendered document 1 (Job web-migrate-): metadata.generateName is allowed on " \
           "hook objects only" in out.error
    assert not out.templates
