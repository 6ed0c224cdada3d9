"""description.yaml: what the render writes reads back the same, and a file gitfleet cannot
read is refused by name (file and field), never half-read."""

from __future__ import annotations

import pytest

from gitfleet import yamlio
from gitfleet.errors import InputError
from gitfleet.wire.description import (
    DescriptionFile,
    DescriptionHead,
    LazyBasis,
    Override,
    Resource,
    SourceRef,
    description_head,
    description_text,
    kept_description,
    read_description,
    read_head,
    resource_fragment,
    scan_divided,
    scan_fields,
    scan_rebalance,
    with_source_commit,
)

PATH = "clusters/east/shop/web/description.yaml"


def _written(**changes: object) -> str:
    head_args: dict[str, object] = dict(
        source={"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Subscription",
                "namespace": "shop", "name": "web", "path": "subscriptions/web.yaml"},
        charts=[], basis_commit="b" * 40, trigger="Lazy", rebalance="2026-01-01",
        depends_on=["shop/db"], conflict_resolution="Overwrite", preserve_on_deletion=True,
        lazy_basis=[{"template": "apps/Deployment/shop/web", "digest": "d1",
                     "basisCommit": "c" * 40}],
        overrides=[{"kind": "Localization", "namespace": "shop", "name": "east",
                    "path": "localizations/east.yaml", "deferred": True}])
    head_args.update(changes)
    head = description_head("shop/web", **head_args)  # type: ignore[arg-type]
    frags = [(resource_fragment(api_version="apps/v1", kind="Deployment", namespace="shop",
                                name="web", file="apps_Deployment_shop_web.yaml",
                                hash="sha256:1", source="templates/web.yaml"), 3),
             (resource_fragment(api_version="v1", kind="Service", namespace="shop",
                                name="web", file="_Service_shop_web.yaml", hash="sha256:2",
                                source="templates/web.yaml"), None)]
    return with_source_commit(description_text(head, "east", frags), "a" * 40)


def test_what_the_render_writes_reads_back_field_for_field() -> None:
    doc = read_description(_written().encode(), PATH)
    assert doc == DescriptionFile(
        namespace="shop", name="web", cluster="east", deployer="generic",
        source=SourceRef("apps.clusternet.io/v1alpha1", "Subscription", "shop", "web",
                         "subscriptions/web.yaml"),
        source_commit="a" * 40, basis_commit="b" * 40, trigger="Lazy",
        rebalance="2026-01-01", depends_on=("shop/db",), conflict_resolution="Overwrite",
        preserve_on_deletion=True,
        lazy_basis=(LazyBasis("apps/Deployment/shop/web", "d1", "c" * 40),),
        overrides=(Override("Localization", "shop", "east", "localizations/east.yaml", True),),
        resources=(Resource("apps/v1", "Deployment", "shop", "web",
                            "apps_Deployment_shop_web.yaml", "sha256:1", "templates/web.yaml",
                            divided=3),
                   Resource("v1", "Service", "shop", "web", "_Service_shop_web.yaml",
                            "sha256:2", "templates/web.yaml")))
    assert doc.key == "shop/web"
    # what the writer leaves out reads as its default, and no resources is an empty list
    head = description_head("shop/web", source={}, charts=[], basis_commit="", trigger="",
                            rebalance="", depends_on=[], conflict_resolution="Abort",
                            preserve_on_deletion=False, lazy_basis=None, overrides=[])
    bare = read_description(with_source_commit(description_text(head, "east", []), "s"), PATH)
    assert (bare.lazy_basis, bare.trigger, bare.basis_commit, bare.resources,
            bare.preserve_on_deletion) == (None, "", "", (), False)


def test_a_description_kept_after_a_failed_render_says_why() -> None:
    data = kept_description(_written(), ["b broke", "a broke", "b broke"])
    assert data is not None
    kept = read_description(data, PATH)
    assert kept.render_errors == ("a broke", "b broke")
    assert kept_description(b"kind: Description\n", ["x"]) is None
    assert kept_description(b"spec: [unclosed\n", ["x"]) is None   # damaged: kept as it was
    assert kept.resources == read_description(_written(), PATH).resources


@pytest.mark.parametrize(("edit", "named"), [
    (("spec", "deployr", "helm"), "spec: unknown field(s) deployr (did you mean deployer?)"),
    (("metadata", "labels", {"a": "b"}), "metadata: unknown field(s) labels"),
    ((None, "status", {}), "Description: unknown field(s) status"),
])
def test_an_unknown_field_is_refused_by_name_and_file(edit: tuple[str | None, str, object],
                                                      named: str) -> None:
    doc = yamlio.load_one(_written(), PATH)
    where, key, value = edit
    (doc[where] if where else doc)[key] = value
    with pytest.raises(InputError) as err:
        read_description(yamlio.dump(doc), PATH)
    assert str(err.value).startswith(f"{PATH}: ")
    assert named in str(err.value)


def test_an_unknown_field_of_a_resource_names_the_resource() -> None:
    doc = yamlio.load_one(_written(), PATH)
    doc["spec"]["resources"][1]["replicas"] = 2
    with pytest.raises(InputError, match="resources\\[\\] web: unknown field\\(s\\) replicas"):
        read_description(yamlio.dump(doc), PATH)


@pytest.mark.parametrize(("data", "said"), [
    (b"kind: Description\nspec: [1, 2]\n", "spec must be a mapping"),
    (b"kind: Subscription\n", "not a Description"),
    (b"kind: Description\nspec:\n  resources: {}\n", "spec.resources must be a list"),
    (b"kind: Description\nspec:\n  resources:\n  - {name: w, divided: -1}\n",
     "divided must be a count"),
    (b"kind: Description\nspec: {cluster: [unclosed\n", ""),
])
def test_a_file_gitfleet_cannot_read_is_named_with_its_path(data: bytes, said: str) -> None:
    with pytest.raises(InputError) as err:
        read_description(data, PATH)
    assert str(err.value).startswith(PATH)
    assert said in str(err.value)


def test_render_errors_as_a_person_wrote_them_read_as_their_message() -> None:
    doc = read_description(b"kind: Description\nspec:\n  renderErrors:\n"
                           b"  - {path: templates/x.yaml, message: bad}\n  - plain\n", PATH)
    assert doc.render_errors == ("bad", "plain")


def test_the_quick_head_read_says_what_the_whole_read_says() -> None:
    for text in (_written(), _written(source={"apiVersion": "v1", "kind": "Subscription",
                                              "namespace": "a b", "name": "yes",
                                              "path": "subs/x.yaml"})):
        whole = read_description(text.encode(), PATH)
        head = read_head(text.encode(), PATH)
        assert head == DescriptionHead(whole.deployer, whole.source, whole.source_commit, ())
    kept = kept_description(_written(), ["broke"])
    assert kept is not None and read_head(kept, PATH).render_errors == ("broke",)
    with pytest.raises(InputError, match=f"^{PATH}: .*deployr"):
        read_head(_written().replace("  deployer:", "  deployr:").encode(), PATH)


def test_the_clusters_of_a_unit_share_one_head_read_but_not_a_different_one() -> None:
    east = read_head(_written().encode(), PATH)
    west = read_head(_written().replace("  cluster: east", "  cluster: west").encode(), PATH)
    assert west == east
    moved = read_head(_written().replace("a" * 40, "f" * 40).encode(), PATH)
    assert moved.source_commit == "f" * 40
    with pytest.raises(InputError, match="clustr"):   # a key the cache could hide is read
        read_head(_written().replace("  cluster: east", "  clustr: east").encode(), PATH)


def test_the_render_scans_of_its_own_text_agree_with_the_whole_read() -> None:
    text = _written(rebalance="2026-01-01 10:00")   # quoted when written
    doc = read_description(text, PATH)
    head = scan_fields(text)
    assert (head.source_commit, head.basis_commit, head.trigger) == \
        (doc.source_commit, doc.basis_commit, doc.trigger)
    assert scan_divided(text) == {r.file: r.divided for r in doc.resources
                                  if r.divided is not None}
    assert scan_rebalance(text) == doc.rebalance == "2026-01-01 10:00"
