"""Kubernetes resource quantities (`500m`, `1`, `2Gi`, `1e3`) as exact numbers."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

_SUFFIX = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([numkMGTPE]i?|)$")


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> Fraction:
    """Exact value of a quantity; raises ValueError for text that is not one. Cached: a render
    compares the same few quantities for every cluster."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(Decimal(repr(value)))
    m = _QUANTITY.match(value.strip())
    if not m or (m.group(2).endswith("i") and m.group(2) not in _SUFFIX):
        raise ValueError(f"not a quantity: {value!r}")
    try:
        number = Fraction(Decimal(m.group(1)))
    except InvalidOperation:
        raise ValueError(f"not a quantity: {value!r}") from None
    return number * _SUFFIX[m.group(2)]


def decimal_quantity(value: object) -> Decimal | None:
    """The value of a quantity as a Decimal, for sums that are printed again (None when it is
    not a quantity)."""
    try:
        exact = parse_quantity(value)
    except (ValueError, TypeError, AttributeError):
        return None
    return Decimal(exact.numerator) / Decimal(exact.denominator)


def same_quantity(a: object, b: object) -> bool:
    """True when both parse as quantities of equal value (`1000m` == `1`)."""
    try:
        return parse_quantity(a) == parse_quantity(b)
    except (ValueError, TypeError):
        return False
