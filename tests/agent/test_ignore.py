"""The pure parts of gitfleet.agent.ignore: pointers, managedFields paths, stripping, owners."""

from __future__ import annotations

import pytest

from gitfleet.agent.ignore import ItemKey, managed_paths, owners, parse_pointer, remove


def test_json_pointers_unescape() -> None:
    assert parse_pointer("/metadata/annotations/a~1b~0c") == ("metadata", "annotations", "a/b~c")
    with pytest.raises(ValueError, match="must start with '/'"):
        parse_pointer("spec/replicas")


def test_managed_paths_skip_the_item_existence_marker() -> None:
    fields = {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
        'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}
    web = ItemKey((("name", "web"),))
    assert sorted(map(str, managed_paths(fields))) == sorted(map(str, [
        ("spec", "replicas"), ("spec", "template", "spec", "containers", web, "image"),
        ("spec", "template", "spec", "containers", web, "name")]))


def test_remove_keeps_list_item_keys_and_drops_what_it_empties() -> None:
    body = {"spec": {"replicas": 3, "template": {"spec": {"containers": [
        {"name": "web", "image": "a"}, {"name": "side", "image": "b"}]}}}}
    web = ItemKey((("name", "web"),))
    remove(body, ("spec", "template", "spec", "containers", web, "name"))
    remove(body, ("spec", "template", "spec", "containers", web, "image"))
    remove(body, ("spec", "replicas"))
    assert body == {"spec": {"template": {"spec": {"containers": [
        {"name": "web"}, {"name": "side", "image": "b"}]}}}}
    remove(body, ("spec", "template", "spec", "containers", "1", "image"))
    remove(body, ("metadata", "labels"))  # absent: nothing happens
    assert body["spec"]["template"]["spec"]["containers"][1] == {"name": "side"}
    only = {"data": {"mode": "x"}, "kind": "ConfigMap"}
    remove(only, ("data", "mode"))
    assert only == {"kind": "ConfigMap"}


def test_owners_follow_list_items_by_key_and_index() -> None:
    live = {"metadata": {"managedFields": [
        {"manager": "gitfleet", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:containers": {
            'k:{"name":"web"}': {".": {}, "f:image": {}}}}}},
        {"manager": "hpa", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
        "spec": {"replicas": 2, "containers": [{"name": "web", "image": "a"}]}}
    assert owners(live, ("spec", "replicas")) == {"gitfleet", "hpa"}
    assert owners(live, ("spec", "containers", "0", "image")) == {"gitfleet"}
    assert owners(live, ("spec", "paused")) == set()
