"""errors.yaml and claims.yaml: what the render writes is what the next render, `gitfleet get`
and the dashboard read back; a field the reader does not know is an error naming it."""

from __future__ import annotations

import re

import pytest

from gitfleet.errors import InputError
from gitfleet.model.problems import Problem
from gitfleet.wire.claims import claims_file, read_claims
from gitfleet.wire.errors import ProblemRecord, errors_file, read_errors

PROBLEMS = [Problem("templates/shop/bad.yaml", 4, "", "invalid YAML: did not find ']'"),
            Problem("policies/shop/sub.yaml", 30, "Subscription/shop/ghost",
                    "feed not found: v1 ConfigMap shop/nowhere", "Subscription/shop/ghost")]


def test_the_render_problems_are_written_as_always_and_read_back_the_same() -> None:
    text = errors_file([p.record() for p in PROBLEMS], [Problem("fleet.yaml", None, "", "w")
                                                        .record()]).decode()
    assert text == """\
errors:
- path: templates/shop/bad.yaml
  line: 4
  message: "invalid YAML: did not find ']'"
- path: policies/shop/sub.yaml
  line: 30
  object: Subscription/shop/ghost
  message: "feed not found: v1 ConfigMap shop/nowhere"
  subscription: Subscription/shop/ghost
warnings:
- path: fleet.yaml
  message: w
"""
    back = read_errors(text)
    assert [Problem.of(p) for p in back.errors] == PROBLEMS
    assert back.warnings == (ProblemRecord("fleet.yaml", None, "", "w"),)
    assert PROBLEMS[1].to_dict() == back.errors[1].to_doc()   # `render -o json` shows the same


@pytest.mark.parametrize("text, where", [
    ("errors:\n- path: a\n  mesage: x\n", "mesage (did you mean message?)"),
    ("errors: []\nwarning: []\n", "warning (did you mean warnings?)"),
    ("errors:\n- path: a\n  line: four\n", "errors[]: line must be a number, not 'four'"),
    ("errors: {path: a}\n", "errors must be a list"),
])
def test_a_damaged_errors_file_is_an_error_naming_the_field(text: str, where: str) -> None:
    with pytest.raises(InputError, match=re.escape(where)) as caught:
        read_errors(text, "gitfleet/state:errors.yaml")
    assert "gitfleet/state:errors.yaml" in str(caught.value)


def test_claims_are_written_in_the_order_given_and_read_back() -> None:
    pairs = [("apps/Deployment/metrics/collector", "PropagationPolicy/metrics/collector"),
             ("/Namespace//metrics", "ClusterPropagationPolicy//metrics-namespace")]
    text = claims_file(pairs).decode()
    assert text == """\
claims:
- template: apps/Deployment/metrics/collector
  policy: PropagationPolicy/metrics/collector
- template: /Namespace//metrics
  policy: ClusterPropagationPolicy//metrics-namespace
"""
    assert read_claims(text) == dict(pairs)
    assert read_claims(claims_file([])) == {}


@pytest.mark.parametrize("text, where", [
    ("claims:\n- template: a\n  polcy: b\n", "polcy (did you mean policy?)"),
    ("claims:\n- template: a\n", "claims[]: policy is missing"),
    ("claim: []\n", "claim (did you mean claims?)"),
])
def test_a_damaged_claims_file_is_an_error_naming_the_field(text: str, where: str) -> None:
    with pytest.raises(InputError, match=re.escape(where)):
        read_claims(text)
