"""Kubernetes resource quantities (`500m`, `1`, `2Gi`, `1e3`) as exact numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass
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
# Kubernetes' grammar: <signed number><suffix>, the suffix binary (Ki..Ei), decimal (n..E) or
# an exponent (e3). An exponent with a suffix as well (`1e3k`) is read too, as gitfleet always
# has; `quantity_parts` says so, for the simulator, which stores such text as it is.
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?:[eE]([+-]?[0-9]+))?"
                       r"([numkKMGTPE]i?|)$")


@dataclass(frozen=True)
class QuantityParts:
    """A quantity's exact value and how it was written (Kubernetes keeps the form: a binary
    suffix stays binary, an exponent stays an exponent)."""

    value: Fraction
    suffix: str                 # "", "m", "Ki", ...
    exponent: int | None        # the `e<n>` part, None without one

    @property
    def binary(self) -> bool:
        return self.suffix.endswith("i")


@lru_cache(maxsize=4096)
def quantity_parts(text: str) -> QuantityParts:
    """The parts of quantity text; raises ValueError for text that is not one."""
    m = _QUANTITY.match(text.strip())
    if not m or m.group(3) not in _SUFFIX:
        raise ValueError(f"not a quantity: {text!r}")
    number, exponent, suffix = m.groups()
    try:
        value = Fraction(Decimal(number))
    except InvalidOperation:
        raise ValueError(f"not a quantity: {text!r}") from None
    power = None if exponent is None else int(exponent)
    if power is not None:
        value *= Fraction(10) ** power
    return QuantityParts(value * _SUFFIX[suffix], suffix, power)


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
    return quantity_parts(value).value


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
