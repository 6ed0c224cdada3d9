"""Peer-table row: Karmada's imageOverrider with an empty predicate and operator `remove` on the
`Repository` component. Karmada's own table (pkg/util/overridemanager/imageoverride_test.go)
expects `fictional.registry.example/imagename:v1.0.0` to become
`fictional.registry.example/:v1.0.0` — not an image reference, so the member cluster cannot pull
it. gitfleet computes the same string, refuses to write it, keeps the repository in place and
warns with the override and the broken result (docs/peer-tables.md says why)."""

from __future__ import annotations

from typing import Any

from gitfleet.render.overriders import apply_overriders, is_image_reference, override_image

UPSTREAM_IMAGE = "fictional.registry.example/imagename:v1.0.0"
REMOVE_REPOSITORY = {"component": "Repository", "operator": "remove", "value": "nginx"}


def deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "nginx", "image": UPSTREAM_IMAGE}]}}}}


def test_remove_repository_with_empty_predicate_keeps_a_pullable_image() -> None:
    upstream = override_image(UPSTREAM_IMAGE, REMOVE_REPOSITORY)
    assert upstream == "fictional.registry.example/:v1.0.0"      # what Karmada writes
    assert not is_image_reference(upstream)
    warnings: list[str] = []
    result = apply_overriders(deployment(), {"imageOverrider": [REMOVE_REPOSITORY]},
                              warnings=warnings)
    assert result["spec"]["template"]["spec"]["containers"][0]["image"] == UPSTREAM_IMAGE
    assert warnings == [f"imageOverrider: {upstream!r} (from {UPSTREAM_IMAGE!r}) is not a valid "
                        "image reference; image left unchanged"]
