"""YAML that JSON (and so Kubernetes) cannot hold is an error of its file, with the line of the
offending node and what to write instead; nothing a file holds makes loading crash."""

from __future__ import annotations

import pytest

from gitfleet import yamlio
from gitfleet.errors import InputError


def refused(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        yamlio.load_documents(text, "templates/x.yaml")
    assert info.value.path == "templates/x.yaml"
    return info.value


HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"


@pytest.mark.parametrize(("value", "message"), [
    ("2024-01-01", "quote it: '2024-01-01'"),
    ("2024-01-01T10:00:00Z", "quote it: '2024-01-01T10:00:00Z'"),
    ("2001-12-14 21:59:43.10 -5", "reads as a YAML date/time"),
    ("!!timestamp 2024-01-01", "date/time"),
    ("!!binary aGVsbG8=", "put the base64 text in a plain string"),
    ("!!set {a, b}", "write a list"),
    ("!!omap [{a: 1}]", "!!omap"),
    ("!!pairs [{a: 1}]", "!!pairs"),
    ("!foo bar", "YAML tag '!foo' is not allowed"),
    ("!!python/object/apply:os.system [echo]", "'!!python/object/apply:os.system' is not allowed"),
    ("!!python/name:os.system ''", "is not allowed"),
    ("123456789012345678901234567890", "does not fit in 64 bits"),
    ("9223372036854775808", "does not fit in 64 bits"),
    ("-9223372036854775809", "does not fit in 64 bits"),
    (".nan", "not a finite number"),
    (".inf", "not a finite number"),
    ("-.Inf", "not a finite number"),
    ("1.0e+999", "not a finite number"),
])
def test_value_json_cannot_hold_is_refused_at_its_line(value: str, message: str) -> None:
    err = refused(HEAD + "  annotations:\n    note: ok\n    released: " + value + "\n")
    assert message in err.message
    assert err.line == 7


@pytest.mark.parametrize(("key", "message"), [
    ("80", "mapping key '80' reads as an integer"),
    ("true", "mapping key 'true' reads as a boolean"),
    ("on", "quote it: 'on'"),
    ("1.5", "reads as a number"),
    ("~", "a mapping key is null"),
    ("null", "a mapping key is null"),
    ("? [a, b]\n  ", "a mapping key is a list"),
    ("? {a: b}\n  ", "a mapping key is a mapping"),
    ("2024-01-01", "date/time"),
])
def test_key_that_is_not_a_string_is_refused(key: str, message: str) -> None:
    err = refused(HEAD + "data:\n  fine: x\n  " + key + ": value\n")
    assert message in err.message
    assert err.line == 7


def test_empty_key_is_a_null_key() -> None:
    assert "a mapping key is null" in refused(HEAD + "data:\n  ?\n  : value\n").message


def test_duplicate_key_is_refused_at_its_second_line() -> None:
    err = refused(HEAD + "data:\n  a: 1\n  b: 2\n  a: 3\n")
    assert "key 'a' appears twice" in err.message and err.line == 8


def test_nesting_beyond_100_levels_is_refused() -> None:
    ok = "a: " + "[" * 99 + "]" * 99 + "\n"
    assert yamlio.load_documents(ok, "x")[0].data["a"] is not None
    err = refused("a: " + "[" * 101 + "]" * 101 + "\n")
    assert "nest deeper than 100 levels" in err.message


@pytest.mark.parametrize("text", [
    "a: " + "[" * 200_000 + "]" * 200_000,
    "a: " + "{b: " * 200_000 + "}" * 200_000,
    "a:\n" + "".join(" " * i + "- b:\n" for i in range(0, 6_000, 2)),
    "a:\n" + "- " * 100_000 + "x\n",
])
def test_nesting_deep_enough_to_overflow_the_c_parser_is_an_error(text: str) -> None:
    # libyaml's composer recurses in C: this depth would kill the process, not raise.
    assert "nest" in refused(text).message


@pytest.mark.parametrize("text", ["a: &x [1, *x]\n", "&a {b: *a}\n", "a: &m {b: {c: *m}}\n"])
def test_recursive_alias_is_refused(text: str) -> None:
    assert "recursive alias" in refused(text).message


def test_alias_bomb_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdefg"):
        prev = "abcdefg"[i]
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    assert "alias bomb" in refused("\n".join(lines) + "\n").message


def test_syntax_error_is_reported_before_what_the_content_holds() -> None:
    # A date in the first document and a syntax error in the second: the syntax comes first.
    err = refused("a: 2024-01-01\n---\nb: [1,\n")
    assert "invalid YAML" in err.message and err.line == 4


def test_plain_yaml_loads_as_before() -> None:
    text = ("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\nl: [1, 2.5, yes, null, '2024-01-01']\n"
            "h: 0x1F\nm: !!str 7\nn: !!int '8'\ns: |\n  text\n---\n---\nz: *unused\n")
    with pytest.raises(InputError, match="invalid YAML"):
        yamlio.load_documents(text, "x")  # an undefined alias is a syntax error
    docs = yamlio.load_documents(text.rsplit("---\n", 1)[0], "x")
    assert docs[0].data == {"base": {"x": 1, "y": 2}, "d": {"x": 1, "y": 3},
                            "l": [1, 2.5, True, None, "2024-01-01"], "h": 31, "m": "7",
                            "n": 8, "s": "text\n"}
    assert len(docs) == 1


def test_merge_keys_give_the_first_source_precedence_and_own_keys_win() -> None:
    text = "a: &a {k: 1, x: a}\nb: &b {k: 2, y: b}\nc:\n  <<: [*a, *b]\n  y: own\n"
    assert yamlio.load_documents(text, "x")[0].data["c"] == {"k": 1, "x": "a", "y": "own"}
    assert "merge key" in refused("a: &a [1]\nc:\n  <<: *a\n").message


def test_line_of_maps_a_json_path_to_the_line_of_its_field() -> None:
    text = "a: 1\n---\nspec:\n  rules:\n  - name: x\n    clusterName: [a]\n"
    assert yamlio.line_of(text, 1, ("spec", "rules", 0, "clusterName")) == 6
    assert yamlio.line_of(text, 1, ("spec", "rules", 0)) == 5
    assert yamlio.line_of(text, 1, ("spec", "missing", 3)) == 3  # the deepest part that exists
    assert yamlio.line_of(text, 5, ("spec",)) is None


@pytest.mark.parametrize("text", ["a: !!float deployment", "a: !!int x1", "a: !!bool maybe",
                                  "a: !!int 1:x", "a: !!map x", "a: !!seq x", "a: !!str [1]"])
def test_explicit_type_tag_on_the_wrong_value_is_refused(text: str) -> None:
    assert refused(text + "\n").line == 1
