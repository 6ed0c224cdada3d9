"""kubesim stores resource quantities in the API server's canonical form, read with gitfleet's
one quantity parser (gitfleet/quantity.py): the value and the form it was written in."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gitfleet.kubesim.normalize import canonical_quantity
from gitfleet.quantity import parse_quantity, quantity_parts


@pytest.mark.parametrize("written, stored", [
    ("0.5", "500m"), ("1", "1"), ("1000m", "1"), ("100m", "100m"), ("0.0000000001", "1n"),
    ("1500", "1500"), ("2000", "2k"), ("1.5G", "1500M"), ("-0.5", "-500m"), ("+2", "2"),
    ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("1Ki", "1Ki"), ("2048Ki", "2Mi"),
    ("1.5Ki", "1536"), ("0.1Ki", "102400m"), ("0Ki", "0"), ("1536Ki", "1536Ki"),
    ("1e3", "1e3"), ("1E3", "1e3"), ("1000e-3", "1"), ("1.5e3", "1500"), ("1E", "1E"),
    (" 5m ", "5m"), ("5.", "5"), (".5", "500m"),
])
def test_quantities_are_stored_in_canonical_form(written: str, stored: str) -> None:
    assert canonical_quantity(written) == stored


@pytest.mark.parametrize("text", ["", ".", "+", "abc", "1K", "1ki", "1e", "e3", "1 Gi",
                                  "1e3k", "1.2.3", "\u0663"])
def test_text_that_is_not_a_kubernetes_quantity_is_stored_as_written(text: str) -> None:
    assert canonical_quantity(text) == text


def test_the_one_parser_reads_every_suffix_and_says_the_form() -> None:
    assert parse_quantity("1Ki") == 1024          # was refused before kubesim used it
    assert parse_quantity("2Ei") == 2 * 2**60
    assert parse_quantity("1e3k") == 10**6        # gitfleet has always read it; kubesim keeps it
    assert quantity_parts("1.5e3").value == 1500
    assert quantity_parts("1.5e3").exponent == 3 and quantity_parts("1.5e3").suffix == ""
    assert quantity_parts("3Mi").binary and not quantity_parts("3M").binary
    assert parse_quantity("250m") == Fraction(1, 4)
    for text in ("1K", "1ki", "\u0663", "1e", ""):
        with pytest.raises(ValueError, match="not a quantity"):
            parse_quantity(text)
