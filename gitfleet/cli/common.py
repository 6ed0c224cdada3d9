"""Helpers shared by the subcommands: output formats and tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from gitfleet import yamlio


def add_output_flag(parser: Any, *, choices: Sequence[str] = ("table", "json", "yaml"),
                    default: str = "table") -> None:
    parser.add_argument("-o", "--output", choices=list(choices), default=default,
                        help=f"output format ({', '.join(choices)}; default {default})")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
                file: Any = None) -> None:
    """A kubectl-like table: upper-case headers, columns padded by the widest cell."""
    out = file or sys.stdout
    cells = [[str(h).upper() for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        print("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)


def print_data(data: Any, fmt: str) -> None:
    if fmt == "json":
        print(json.dumps(data, indent=2, sort_keys=False))
    else:
        sys.stdout.write(yamlio.dump(data))
